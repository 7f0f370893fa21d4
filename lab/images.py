"""The fake image catalog: how each container image behaves when the lab's kubelet runs it.

An image entry says which tags exist, which binary it ships, which ports it listens on, how
much memory it uses, which environment it needs, whom it calls and what credentials it
accepts. Tags listed under ``broken`` exist but crash on start, like a buggy release.

Well-known public images (``lab/apps/base/images.yaml``) also say what they run by default
(``entrypoint`` and ``cmd``, with Docker's rules: a pod's ``command`` replaces the entrypoint
and drops the default arguments, its ``args`` replace them), which binaries start their server
(``servers``), whether they carry a shell (``shell``: the command may be a script, see
``lab/controllers/programs.py``), and which tags exist as a pattern (``tag_pattern``, where
``{v}`` is a version like ``1``, ``1.27`` or ``1.27.3`` and ``{suffix}`` a variant such as
``-alpine`` or ``-slim-bookworm``). An app's catalog may name the same image again: the fields
it sets replace the base entry's, and the tags are added to it.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field


class Call(BaseModel):
    """One dependency the image calls: a service in its own namespace.

    With ``host_env`` the address comes from the container's environment, as real apps read
    it (``PAYMENT_ADDR=payment:8084``, ``http://payment:8084/api``, or a bare host name):
    ``service`` and ``port`` are what the image uses when the variable is unset.
    """

    model_config = ConfigDict(extra="forbid")
    service: str
    port: int
    user_env: str | None = None
    password_env: str | None = None
    host_env: str | None = None

    def resolved(self, env: dict[str, str]) -> Call:
        """This call with the address the container's environment gives it."""
        value = env.get(self.host_env or "") if self.host_env else None
        if not value:
            return self
        address = value.split("://", 1)[-1].split("/", 1)[0]
        host, _, port = address.partition(":")
        # "payment.shop.svc.cluster.local" is payment in its own namespace, as the resolver's
        # search path makes it.
        service = host.split(".", 1)[0]
        return self.model_copy(
            update={"service": service, "port": int(port) if port.isdigit() else self.port}
        )


class Auth(BaseModel):
    """Credentials a server image accepts, read from its own environment at start."""

    model_config = ConfigDict(extra="forbid")
    user_env: str
    password_env: str


_VERSION = r"\d{1,2}(\.\d{1,2}){0,2}"
_SUFFIX = (
    r"(-(alpine|slim|bookworm|bullseye|buster|trixie|jammy|noble|focal|perl|otel|management"
    r"|jdk|jre|fpm|apache|oracle|debian|ubuntu|musl|glibc|uclibc|windowsservercore|nanoserver"
    r"|alpine3\.\d{1,2}|lts|community|enterprise|temurin)(\d{1,2}(\.\d{1,2})?)?)*"
)


class ImageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tags: list[str] = Field(default_factory=lambda: ["latest"])
    tag_pattern: str | None = None
    aliases: list[str] = Field(default_factory=list)
    entrypoint: list[str] = Field(default_factory=list)
    cmd: list[str] = Field(default_factory=list)
    servers: list[str] = Field(default_factory=list)
    shell: bool = False
    binaries: list[str] = Field(default_factory=list)
    port_args: bool = False
    requires_one_of: list[str] = Field(default_factory=list)
    missing_env_log: list[str] = Field(default_factory=list)
    broken: dict[str, str] = Field(default_factory=dict)
    # Tags that exist and run, but whose working set grows by this many MiB a minute until
    # the memory limit OOMKills them (a leaky release).
    leaks: dict[str, float] = Field(default_factory=dict)
    command: str | None = None
    listens: list[int] = Field(default_factory=list)
    # Paths the server answers with 2xx/3xx (globs); any other path is a 404. None: any path.
    http_paths: list[str] | None = None
    # False: the server speaks its own protocol (redis, postgres …): an HTTP request fails.
    http: bool = True
    memory_mi: int = 32
    # What one request costs the server itself (before its own calls), and the CPU it uses
    # under its load: a CPU limit below that throttles it and stretches every request.
    latency_ms: float = 5.0
    cpu_m: int = 50
    requires_env: list[str] = Field(default_factory=list)
    env_choices: dict[str, list[str]] = Field(default_factory=dict)
    calls: list[Call] = Field(default_factory=list)
    auth: Auth | None = None
    runs_to_completion: bool = False
    hangs: bool = False
    rps: float = 10.0
    start_log: list[str] = Field(default_factory=list)
    # The image's programs run for real, as child processes of the lab (the Stratus image):
    # each maps a program name of the command line to the argv that runs it on this machine,
    # where ``python`` stands for the lab's own interpreter (see lab/controllers/processes.py).
    process: dict[str, list[str]] = Field(default_factory=dict)
    # The version ``latest`` runs (``1.27.3``); a version tag's own version wins (``version_of``).
    version: str | None = None
    versions: list[str] = Field(default_factory=list)  # the newest release of older lines
    # Which stock tree of files the image ships (lab/controllers/image_filesystems.py), whose
    # HTTP server, if it has one, serves its document root from the container's files.
    filesystem: str | None = None
    # The protocol a server that does not speak HTTP speaks (``redis``, ``postgres``), for the
    # clients in other images that talk to it (``redis-cli -h``, ``pg_isready -h``).
    wire: str | None = None

    @cached_property
    def tag_regex(self) -> re.Pattern[str] | None:
        if not self.tag_pattern:
            return None
        pattern = self.tag_pattern.replace("{v}", _VERSION).replace("{suffix}", _SUFFIX)
        return re.compile(pattern)

    def has_tag(self, tag: str) -> bool:
        if tag in self.tags or tag in self.broken or tag in self.leaks:
            return True
        regex = self.tag_regex
        return regex is not None and regex.fullmatch(tag) is not None

    def serves_path(self, path: str) -> bool:
        """Whether an HTTP GET of ``path`` (query string ignored) gets a 2xx/3xx answer."""
        return self.http and serves_path(self.http_paths, path)

    def server_binaries(self) -> set[str]:
        """Basenames of the programs that start this image's server."""
        names = {b.rsplit("/", 1)[-1] for b in self.servers}
        if self.command:
            names.add(self.command.rsplit("/", 1)[-1])
        return names

    @property
    def raw_logs(self) -> bool:
        """Public images print their own log format; the sample apps share the lab's."""
        return bool(self.entrypoint or self.cmd or self.servers)

    def default_argv(self) -> list[str]:
        if self.entrypoint or self.cmd:
            return [*self.entrypoint, *self.cmd]
        return [self.command] if self.command else []

    def version_of(self, tag: str) -> str:
        """The version a tag runs: its own numbers, completed from the newest release of that
        line (``version``, ``versions``: ``1.27-alpine`` → ``1.27.3``), else with zeros."""
        found = re.match(r"v?(\d+(?:\.\d+){0,2})", tag)
        if found is None:
            return self.version or ""
        parts = found.group(1).split(".")
        for release in [self.version or "", *self.versions]:
            if release.split(".")[: len(parts)] == parts:
                return release
        return ".".join(parts + ["0"] * (3 - len(parts)))

    def merged(self, update: ImageSpec) -> ImageSpec:
        """This entry with the fields ``update`` sets replaced, and its tags added."""
        fields = {name: getattr(update, name) for name in update.model_fields_set}
        fields["tags"] = list(dict.fromkeys([*self.tags, *update.tags]))
        return self.model_copy(update=fields)


def serves_path(paths: list[str] | None, path: str) -> bool:
    """Whether a server answering ``paths`` (globs; None: every path) serves ``path``."""
    if paths is None:
        return True
    bare = path.split("?", 1)[0] or "/"
    return any(fnmatchcase(bare, pattern) for pattern in paths)


_REGISTRY_PREFIXES = (
    "docker.io/library/",
    "docker.io/",
    "index.docker.io/library/",
    "index.docker.io/",
    "registry.hub.docker.com/library/",
    "registry-1.docker.io/library/",
    "mirror.gcr.io/library/",
    "mirror.gcr.io/",
    "public.ecr.aws/docker/library/",
    "library/",
)


def split_image(reference: str) -> tuple[str, str]:
    """``docker.io/stratus/geo:1.0`` → (``stratus/geo``, ``1.0``); no tag means ``latest``."""
    ref = reference.split("@", 1)[0]
    for prefix in _REGISTRY_PREFIXES:
        if ref.startswith(prefix):
            ref = ref[len(prefix) :]
            break
    if ref.startswith("k8s.gcr.io/"):  # the old name of the Kubernetes registry
        ref = "registry.k8s.io/" + ref[len("k8s.gcr.io/") :]
    last = ref.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = ref.rsplit(":", 1)
        return repo, tag
    return ref, "latest"


def qualified_image(reference: str) -> tuple[str, str]:
    """What containerd reports for a started container's image: the reference fully
    qualified as Docker normalizes it (``busybox:1.36`` → ``docker.io/library/busybox:1.36``,
    no tag → ``:latest``), and the repository alone, which ``imageID`` names before the
    digest."""
    name, at, digest = reference.partition("@")
    parts = name.split("/")
    if len(parts) == 1 or not ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = ["docker.io", *(["library"] if len(parts) == 1 else []), *parts]
    full = "/".join(parts)
    tagged = ":" in parts[-1]
    repository = full.rsplit(":", 1)[0] if tagged else full
    if at:
        return f"{full}@{digest}", repository
    return (full if tagged else f"{full}:latest"), repository


STRATUS_IMAGE = "stratus"


class ImageCatalog:
    def __init__(self, images: dict[str, ImageSpec] | None = None) -> None:
        self.images: dict[str, ImageSpec] = dict(images or {})
        self._aliases: dict[str, str] = {}
        self._index_aliases()

    def _index_aliases(self) -> None:
        self._aliases = {
            alias: name for name, spec in self.images.items() for alias in spec.aliases
        }

    def merge_file(self, path: Path) -> None:
        raw = yaml.safe_load(path.read_text()) or {}
        for name, spec in (raw.get("images") or {}).items():
            entry = ImageSpec.model_validate(spec)
            known = self.images.get(name)
            self.images[name] = known.merged(entry) if known is not None else entry
        self._index_aliases()

    def _find(self, repo: str) -> ImageSpec | None:
        spec = self.images.get(repo)
        if spec is None:
            spec = self.images.get(self._aliases.get(repo, ""))
        if spec is None and repo.endswith(f"/{STRATUS_IMAGE}"):
            # Stratus's own image, whatever registry it was pushed to (ghcr.io/…/stratus).
            spec = self.images.get(STRATUS_IMAGE)
        return spec

    def lookup(self, reference: str) -> tuple[ImageSpec | None, str]:
        """The image's behaviour and, for a broken tag, its crash message."""
        repo, tag = split_image(reference)
        spec = self._find(repo)
        if spec is None:
            return None, ""
        if tag in spec.broken:
            return spec, spec.broken[tag]
        pinned = "@" in reference and ":" not in reference.split("@", 1)[0].rsplit("/", 1)[-1]
        if spec.has_tag(tag) or pinned:  # a digest of a known image is taken on trust
            return spec, ""
        return None, ""

    def pull_error(self, reference: str) -> str:
        repo, _ = split_image(reference)
        bare = "/" not in reference.split(":", maxsplit=1)[0]
        full = f"docker.io/library/{reference}" if bare else reference
        if self._find(repo) is not None:
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
