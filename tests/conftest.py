"""Shared fixtures: a lab cluster served over real HTTP, kubeconfigs, and the kubectl matrix."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lab.client import LabClient
from lab.runner import LabServer, write_kubeconfig
from store.db import Store
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.reads import ClusterReader
from undo.stack import UndoStack

REPO = Path(__file__).resolve().parent.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test gets its tier (``-m unit``, ``-m service``, ``-m e2e``): see tests/tiers.py."""
    from tests import tiers

    tiers.mark(items)
    tiers.slowest_files_first(items)


def interruptible() -> None:
    """In a child about to be stopped by a Ctrl-C (SIGINT): the disposition a terminal gives
    it. A process started with SIGINT ignored or blocked keeps ignoring it (Python installs its
    KeyboardInterrupt handler only over the default), so whatever the test worker inherited
    must not leak into the program under test. Pass as ``preexec_fn``."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def stratus(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the ``stratus`` command as a user would: a fresh process, no terminal on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
    )


@dataclass
class Lab:
    """A running lab: its URL, a kubeconfig for it, and a client for ``/lab/v1``."""

    server: LabServer
    kubeconfig: Path
    # The lab's resourceVersion, clock and apps right after the last reset (``fresh``).
    fresh_state: tuple[Any, ...] | None = None

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def control(self) -> LabClient:
        return LabClient(self.url)

    def reset(self) -> None:
        self.control.post("/lab/v1/reset")

    def _state(self) -> tuple[Any, ...]:
        info = self.control.get("/lab/v1/info")
        return (info["resource_version"], info["now"], info["mode"], tuple(info["apps"]))

    def fresh(self) -> None:
        """Reset to fresh apps, unless nothing happened since the last reset: no object was
        written (the resourceVersion did not move) and no time passed on the lab's clock. A
        reset costs about 200 ms; the tests that only read skip it."""
        if self.fresh_state is not None and self._state() == self.fresh_state:
            return
        self.reset()
        self.fresh_state = self._state()

    def settle(self) -> dict[str, Any]:
        result: dict[str, Any] = self.control.post("/lab/v1/settle")
        return result


@pytest.fixture(scope="session")
def lab_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    server = LabServer(apps=["hotel", "shop"]).start()
    kubeconfig = write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", server.url, "hotel")
    yield Lab(server, kubeconfig)
    server.stop()


@pytest.fixture
def lab(lab_session: Lab) -> Lab:
    """The shared lab, with fresh apps for the test."""
    lab_session.fresh()
    return lab_session


# Versions run directly, beside the system kubectl (which dispatches on the server's version).
KUBECTL_VERSIONS = ("1.20", "1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33")
# Every kubectl on the machine: the streams (exec, attach, cp, port-forward) and server-side
# apply change protocol between versions (websocket from 1.30 on, SPDY before), so they run
# on each (tests/lab/test_exec.py, test_server_side_apply.py).
KUBECTL_ALL = ("system", *KUBECTL_VERSIONS)
# The matrix of tests/lab/test_kubectl.py and the RBAC tests: the oldest, the newest three and
# the dispatcher; 1.28-1.30 speak what 1.27 and 1.31 do there, and leaving them out keeps the
# suite's run time down. Other tests run the system kubectl and 1.20.
KUBECTL_MATRIX = ("system", "1.20", "1.27", "1.31", "1.32", "1.33")


def _kubectl_binaries() -> dict[str, str | None]:
    """Each kubectl of the matrix by name, ``None`` when it is not installed here."""
    found: dict[str, str | None] = {"system": shutil.which("kubectl")}
    unpacked = REPO / ".cache" / "kubectl-1.20" / "usr" / "bin" / "kubectl"
    found["1.20"] = str(unpacked) if unpacked.is_file() else None
    # The Google Cloud CLI packages kubectl.1.NN beside its dispatcher.
    folders = [Path("/usr/lib/google-cloud-sdk/bin")]
    if found["system"]:
        folders.insert(0, Path(os.path.realpath(found["system"])).parent)
    for version in KUBECTL_VERSIONS[1:]:
        candidates = [folder / f"kubectl.{version}" for folder in folders]
        found[version] = next((str(c) for c in candidates if c.is_file()), None)
    return found


KUBECTLS = _kubectl_binaries()


@dataclass
class Kubectl:
    binary: str
    env: dict[str, str]
    name: str = "system"

    def run(
        self,
        *args: str,
        stdin: str | None = None,
        check: bool = True,
        namespace: str | None = "hotel",
    ) -> subprocess.CompletedProcess[str]:
        command = [self.binary, *(["-n", namespace] if namespace else []), *args]
        result = subprocess.run(
            command,
            input=stdin,
            text=True,
            capture_output=True,
            env=self.env,
            timeout=60,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr}{result.stdout}"
            )
        return result

    def out(self, *args: str, **kwargs: Any) -> str:
        return self.run(*args, **kwargs).stdout


def kubectl_for(name: str, lab: Lab, tmp_path: Path) -> Kubectl:
    """The named kubectl of the matrix against ``lab``; skips when that version is absent."""
    binary = KUBECTLS.get(name)
    if binary is None:
        if name == "system":
            pytest.fail("no kubectl found: the test command installs it (see README)")
        where = (
            ".cache/kubectl-1.20 (scripts/setup unpacks it)"
            if name == "1.20"
            else f"kubectl.{name} beside the Google Cloud CLI's kubectl"
        )
        pytest.skip(f"kubectl {name} is not installed on this machine (looked for {where})")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "KUBECONFIG": str(lab.kubeconfig),
        "KUBECACHEDIR": str(tmp_path / "cache"),
    }
    return Kubectl(binary, env, name)


@pytest.fixture(params=["system", "1.20"])
def kubectl(request: pytest.FixtureRequest, lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for(request.param, lab, tmp_path)


@pytest.fixture
def kube(lab: Lab) -> Iterator[KubeClient]:
    client = KubeClient(kubeconfig=str(lab.kubeconfig))
    yield client
    client.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    db = Store(tmp_path / "stratus.db")
    yield db
    db.close()


@pytest.fixture
def executor(kube: KubeClient, store: Store) -> Executor:
    return Executor(kube, store, lock_wait=0.5)


@pytest.fixture
def stack(executor: Executor) -> UndoStack:
    return UndoStack(executor)


@pytest.fixture
def reader(kube: KubeClient) -> ClusterReader:
    return ClusterReader(kube)


@pytest.fixture
def env(lab: Lab, tmp_path: Path) -> dict[str, str]:
    """The environment of a ``stratus`` command run against the lab with its own database."""
    return {
        **os.environ,
        "KUBECONFIG": str(lab.kubeconfig),
        "STRATUS_DB": str(tmp_path / "stratus.db"),
        "STRATUS_ACTOR": "sre-alice",
        # ``stratus serve`` listens for /healthz on 8080 by default; tests run side by side.
        "STRATUS_HEALTH_PORT": "0",
    }
