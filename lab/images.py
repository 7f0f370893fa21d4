"""The fake image catalog: how each container image behaves when the lab's kubelet runs it.

An image entry says which tags exist, which binary it ships, which ports it listens on, how
much memory it uses, which environment it needs, whom it calls and what credentials it
accepts. Tags listed under ``broken`` exist but crash on start, like a buggy release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field


class Call(BaseModel):
    """One dependency the image calls: a service in its own namespace."""

    model_config = ConfigDict(extra="forbid")
    service: str
    port: int
    user_env: str | None = None
    password_env: str | None = None


class Auth(BaseModel):
    """Credentials a server image accepts, read from its own environment at start."""

    model_config = ConfigDict(extra="forbid")
    user_env: str
    password_env: str


class ImageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tags: list[str] = Field(default_factory=lambda: ["latest"])
    broken: dict[str, str] = Field(default_factory=dict)
    command: str | None = None
    listens: list[int] = Field(default_factory=list)
    memory_mi: int = 32
    requires_env: list[str] = Field(default_factory=list)
    env_choices: dict[str, list[str]] = Field(default_factory=dict)
    calls: list[Call] = Field(default_factory=list)
    auth: Auth | None = None
    runs_to_completion: bool = False
    hangs: bool = False
    rps: float = 10.0
    start_log: list[str] = Field(default_factory=list)


def split_image(reference: str) -> tuple[str, str]:
    """``docker.io/stratus/geo:1.0`` → (``stratus/geo``, ``1.0``); no tag means ``latest``."""
    ref = reference.split("@", 1)[0]
    for prefix in ("docker.io/library/", "docker.io/", "index.docker.io/"):
        if ref.startswith(prefix):
            ref = ref[len(prefix) :]
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = ref.rsplit(":", 1)
        return repo, tag
    return ref, "latest"


class ImageCatalog:
    def __init__(self, images: dict[str, ImageSpec] | None = None) -> None:
        self.images: dict[str, ImageSpec] = dict(images or {})

    def merge_file(self, path: Path) -> None:
        raw = yaml.safe_load(path.read_text()) or {}
        for name, spec in (raw.get("images") or {}).items():
            self.images[name] = ImageSpec.model_validate(spec)

    def lookup(self, reference: str) -> tuple[ImageSpec | None, str]:
        """The image's behaviour and, for a broken tag, its crash message."""
        repo, tag = split_image(reference)
        spec = self.images.get(repo)
        if spec is None:
            return None, ""
        if tag in spec.broken:
            return spec, spec.broken[tag]
        if tag in spec.tags:
            return spec, ""
        return None, ""

    def pull_error(self, reference: str) -> str:
        repo, _ = split_image(reference)
        bare = "/" not in reference.split(":", maxsplit=1)[0]
        full = f"docker.io/library/{reference}" if bare else reference
        if repo in self.images:
            return (
                f"rpc error: code = NotFound desc = failed to pull and unpack image "
                f'"{full}": failed to resolve reference "{full}": {full}: not found'
            )
        return (
            f'rpc error: code = Unknown desc = failed to pull and unpack image "{full}": '
            f'failed to resolve reference "{full}": pull access denied, repository does '
            "not exist or may require authorization"
        )

    def to_dict(self) -> dict[str, Any]:
        return {name: spec.model_dump() for name, spec in self.images.items()}
