"""The Dockerfile, built: buildah runs its steps on a local stand-in for its base image
(tests/deploy/standin.py), pip installing from a local wheelhouse with no network, and the
image it commits is looked at — its configuration, ``stratus`` run in it as uid 10001, and
what its filesystem holds and does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.deploy import standin

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

BASE = f"localhost/stratus-standin/python:{standin.PYTHON_VERSION}-slim-bookworm"
IMAGE = "localhost/stratus:under-test"
WHEELHOUSE = REPO / ".cache" / "wheelhouse"
DRIVER = os.environ.get("STRATUS_IMAGE_TEST_DRIVER", "vfs")


@dataclass
class Built:
    buildah: standin.Buildah
    config: dict[str, Any]
    container: str
    rootfs: Path
    seconds: dict[str, float]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    if os.environ.get("STRATUS_IMAGE_BUILD") != "1":
        # About 150 s of CPU, one step after another (docs/deploy.md, "The image"): more than
        # a CI run on two cores can give one test, so it runs when asked for.
        pytest.skip("building the image is opt-in: STRATUS_IMAGE_BUILD=1 (about 3-6 minutes)")
    missing = standin.buildah_missing()
    if missing:
        pytest.skip(missing)
    if not any(WHEELHOUSE.glob("*.whl")):
        # The local package indexes lack some of the project's dependencies: the wheels the
        # image installs are fetched once, here, so the build itself runs with no network.
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "-d",
                str(WHEELHOUSE),
                str(REPO),
                "pip",
                "setuptools",
                "wheel",
            ],
            check=True,
            timeout=600,
        )
    state = tmp_path_factory.mktemp("buildah")
    buildah = standin.Buildah(state, DRIVER)
    pip_conf = state / "pip.conf"
    # Where pip finds packages, and nowhere else: the wheelhouse, mounted read-only.
    pip_conf.write_text("[global]\nno-index = true\nfind-links = /wheelhouse\n")
    seconds: dict[str, float] = {}
    started = time.monotonic()
    standin.make_base(buildah, BASE)
    seconds["base"] = time.monotonic() - started
    started = time.monotonic()
    buildah(
        "bud",
        "--pull-never",
        "--network",
        "none",
        "--build-arg",
        f"PYTHON_IMAGE={BASE}",
        "--volume",
        f"{pip_conf}:/etc/pip.conf:ro",
        "--volume",
        f"{WHEELHOUSE}:/wheelhouse:ro",
        "--tag",
        IMAGE,
        "--file",
        str(REPO / "Dockerfile"),
        str(REPO),
        timeout=540,
    )
    seconds["build"] = time.monotonic() - started
    config = json.loads(buildah("inspect", "--type", "image", IMAGE))
    container = buildah("from", "--pull-never", IMAGE).strip()
    rootfs = Path(buildah("mount", container).strip())
    try:
        yield Built(buildah, config, container, rootfs, seconds)
    finally:
        buildah("rm", "--all")
        buildah("rmi", "--all", "--force")
        print(f"image build seconds: {seconds}")  # visible with -s


def run(built: Built, *command: str, volume: str = "") -> str:
    extra = ["--volume", volume] if volume else []
    return built.buildah("run", "--user", "10001:10001", *extra, built.container, "--", *command)


def test_the_image_runs_stratus_as_the_deployments_user(built: Built) -> None:
    config = built.config["OCIv1"]["config"]
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["stratus"]
    assert config["Cmd"] == ["serve"]
    assert config["WorkingDir"] == "/var/lib/stratus"
    assert "8080/tcp" in config["ExposedPorts"]
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["PATH"].startswith("/opt/stratus/bin:")
    assert env["STRATUS_HOME"] == "/var/lib/stratus"
    passwd = (built.rootfs / "etc/passwd").read_text().splitlines()
    assert any(line.startswith("stratus:x:10001:10001:") for line in passwd), passwd


def test_stratus_works_in_the_image_as_uid_10001(built: Built) -> None:
    assert run(built, "id", "-u").strip() == "10001"
    assert "Usage: stratus" in run(built, "stratus", "--help")
    policies = REPO / "manifests" / "policies"
    out = run(
        built,
        "stratus",
        "policy",
        "check",
        "/policies/default",
        "/policies/examples",
        volume=f"{policies}:/policies:ro",
    )
    assert "error" not in out.lower(), out


def test_the_final_stage_holds_the_virtualenv_and_nothing_of_the_build(built: Built) -> None:
    root = built.rootfs
    site = root / "opt/stratus/lib/python3.11/site-packages"
    assert (site / "cli" / "main.py").is_file()
    assert list(site.glob("stratus-0.1.0.dist-info")), "not installed as a wheel"
    assert not list(site.glob("__editable__*")), "an editable install points at /src"
    assert not (root / "src").exists(), "the source tree is in the final stage"
    for compiler in ("gcc", "cc", "c++", "g++", "clang", "make", "ld", "as"):
        assert not (root / "usr/bin" / compiler).exists(), compiler
    caches = [p for p in root.glob("**/.cache") if p.is_dir()]
    assert caches == [], caches
    assert not list(root.glob("tmp/pip-*")), "pip's build directories were left"
    # buildah leaves the mount points of the build's --volume options behind, empty.
    pip_conf = root / "etc/pip.conf"
    assert not pip_conf.exists() or pip_conf.stat().st_size == 0, "the build's pip.conf leaked"
    wheelhouse = root / "wheelhouse"
    assert not wheelhouse.exists() or not any(wheelhouse.iterdir()), "the wheels leaked"
