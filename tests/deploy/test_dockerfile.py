"""The Dockerfile, checked by structure: no registry is reachable from here to build it (and
hadolint is not packaged by Debian), so what matters is read from the file itself — a pinned
slim base, a build stage and a final stage, the final stage running as a non-root user with
no build tools, the project installed as scripts/setup installs it, and the same user as the
Deployment runs as."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass, field

import yaml

from tests.conftest import REPO

DOCKERFILE = REPO / "Dockerfile"
BUILD_TOOLS = ("build-essential", "gcc", "g++", "make", "cc", "clang", "python3-dev", "git")


@dataclass
class Stage:
    base: str
    name: str = ""
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for key, args in self.instructions if key == keyword]


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """(global ARG defaults, stages): continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    arguments: dict[str, str] = {}
    stages: list[Stage] = []
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        rest = rest.strip()
        if keyword == "ARG" and not stages:
            name, _, default = rest.partition("=")
            arguments[name] = default
        elif keyword == "FROM":
            words = rest.split()
            base = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: arguments[m[1] or m[2]], words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else ""
            stages.append(Stage(base, name))
        else:
            assert stages, f"{keyword} before the first FROM"
            stages[-1].instructions.append((keyword, rest))
    return arguments, stages


def stages() -> list[Stage]:
    return parse(DOCKERFILE.read_text())[1]


def test_two_stages_on_a_pinned_slim_python() -> None:
    found = stages()
    assert len(found) >= 2
    for stage in found:
        image, _, tag = stage.base.partition(":")
        assert image in ("python", "docker.io/library/python"), stage.base
        assert "slim" in tag, stage.base
        # An exact release (3.11.7), never "latest" or a moving "3.11".
        assert re.match(r"\d+\.\d+\.\d+-slim", tag) or "@sha256:" in stage.base, stage.base


def test_the_final_stage_runs_as_a_non_root_user() -> None:
    final = stages()[-1]
    users = final.all("USER")
    assert users, "the final stage sets no USER: the image would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), user
    # Nothing after USER switches back to root.
    keywords = [k for k, _ in final.instructions]
    assert keywords.index("USER") > max(i for i, k in enumerate(keywords) if k == "RUN")


def test_the_final_stage_has_no_build_tools() -> None:
    final = stages()[-1]
    for command in final.all("RUN"):
        words = shlex.split(command.replace("&&", " "))
        assert "pip" not in words and "apt-get" not in words and "apk" not in words, command
        assert not set(BUILD_TOOLS) & set(words), command
    copies = final.all("COPY")
    assert copies and all(c.startswith("--from=") for c in copies), "source in the final stage"
    assert final.all("ENTRYPOINT") == ['["stratus"]']


def test_the_project_is_installed_as_scripts_setup_installs_it() -> None:
    build = stages()[0]
    setup = (REPO / "scripts" / "setup").read_text()
    commands = " ".join(build.all("RUN"))
    assert "python3 -m venv .venv" in setup and "-m venv /opt/stratus" in commands
    assert "pip install -q --upgrade pip" in setup and "pip install --upgrade pip" in commands
    assert 'pip install -q -e ".[dev]"' in setup and "pip install ." in commands
    # Every package the project installs is copied in, and only those.
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    copied = {source.rstrip("/") for c in build.all("COPY") for source in c.split()[:-1]}
    assert copied - {"pyproject.toml", "README.md"} == packages


def test_the_image_user_is_the_deployments_user() -> None:
    final = stages()[-1]
    uid, _, gid = final.all("USER")[-1].partition(":")
    deployment = yaml.safe_load(
        (REPO / "manifests" / "deploy" / "base" / "deployment.yaml").read_text()
    )
    pod = deployment["spec"]["template"]["spec"]
    assert str(pod["securityContext"]["runAsUser"]) == uid
    assert str(pod["securityContext"]["runAsGroup"]) == gid


def ignored() -> set[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_the_build_context_leaves_local_state_out() -> None:
    assert {".git", ".venv", ".cache", "*.db", "tests"} <= ignored()


def test_the_parser_sees_a_root_image_and_build_tools() -> None:
    """The checks can fail: a final stage without USER, or installing a compiler, is seen."""
    _, bad = parse(
        "ARG B=python:3.11.7-slim-bookworm\nFROM ${B} AS build\nRUN pip install .\n"
        "FROM ${B}\nRUN apt-get install -y build-essential\nCOPY . /src\n"
    )
    assert bad[-1].all("USER") == []
    assert "build-essential" in bad[-1].all("RUN")[0]
    assert bad[-1].base == "python:3.11.7-slim-bookworm"


def test_no_file_is_left_out_of_the_context_that_the_build_copies() -> None:
    left_out = ignored()
    for command in stages()[0].all("COPY"):
        for source in command.split()[:-1]:  # the last word is the destination
            assert source.rstrip("/") not in left_out, source
            assert (REPO / source).exists(), source
