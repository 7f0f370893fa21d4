"""Container scripts over time, through the lab's API: on the realtime clock, with the
machine's kubectl, a loop's lines reach `kubectl logs` one per second and a loop that waits
for a file goes on once `kubectl cp` puts it there; on the instant clock, the passes after
the first ten seconds run when time is let pass."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.cluster.clock import REALTIME
from lab.cluster.resources import by_kind
from lab.cluster_sim import Cluster
from lab.runner import LabServer
from tests.conftest import Kubectl, Lab, kubectl_for

WAITS_FOR_KEY = (
    "while [ ! -f /work/license.key ]; do echo waiting for license; sleep 1; done; "
    'echo "licensed to $(cat /work/license.key)"; while true; do echo tick; sleep 1; done'
)


@pytest.fixture(scope="module")
def realtime_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    server = LabServer(mode=REALTIME, apps=[]).start()
    folder = tmp_path_factory.mktemp("script-time")
    try:
        yield Lab(server, server.write_kubeconfig(folder / "kubeconfig"))
    finally:
        server.stop()


@pytest.fixture
def kubectl(realtime_lab: Lab, tmp_path: Path) -> Kubectl:
    tool = kubectl_for("system", realtime_lab, tmp_path)
    tool.run("create", "namespace", "clock", namespace=None, check=False)
    return tool


def _until(check: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.25)
    raise AssertionError(f"not within {seconds} s")


def _logs(kubectl: Kubectl, pod: str, *extra: str) -> list[str]:
    result = kubectl.run("logs", pod, *extra, namespace="clock", check=False)
    return result.stdout.splitlines() if result.returncode == 0 else []


def test_a_loop_prints_one_line_a_second_and_a_late_line_comes_late(kubectl: Kubectl) -> None:
    kubectl.run(
        "run", "tick", "--image=busybox:1.36", "--restart=Never", "--",
        "sh", "-c", "while true; do date +%s; sleep 1; done",
        namespace="clock",
    )  # fmt: skip
    kubectl.run(
        "run", "late", "--image=busybox:1.36", "--restart=Never", "--",
        "sh", "-c", "echo early; sleep 3; echo late; sleep 600",
        namespace="clock",
    )  # fmt: skip
    _until(lambda: _logs(kubectl, "late") == ["early"], 20)
    started = time.monotonic()
    _until(lambda: len(_logs(kubectl, "tick")) >= 4, 20)
    ticks = _logs(kubectl, "tick")
    assert len(set(ticks)) == len(ticks)  # each line printed at its own second
    _until(lambda: _logs(kubectl, "late") == ["early", "late"], 10)
    assert time.monotonic() - started > 1.0  # the late line was not there with the early one
    stamped = _logs(kubectl, "late", "--timestamps")
    early, late = (line.split(" ", 1)[0] for line in stamped)
    assert early[:19] < late[:19]  # its timestamp is seconds later


def test_a_loop_waiting_for_a_file_goes_on_once_kubectl_cp_puts_it_there(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    manifest = f"""
apiVersion: v1
kind: Pod
metadata: {{name: worker}}
spec:
  containers:
  - name: worker
    image: busybox:1.36
    command: ["sh", "-c", {WAITS_FOR_KEY!r}]
    volumeMounts: [{{name: work, mountPath: /work}}]
  volumes: [{{name: work, emptyDir: {{}}}}]
"""
    kubectl.run("apply", "-f", "-", stdin=manifest, namespace="clock")
    kubectl.run("wait", "--for=condition=Ready", "pod/worker", "--timeout=30s", namespace="clock")
    _until(lambda: len(_logs(kubectl, "worker")) >= 2, 20)
    assert set(_logs(kubectl, "worker")) == {"waiting for license"}
    key = tmp_path / "license.key"
    key.write_text("acme-corp\n")
    kubectl.run("cp", str(key), "clock/worker:/work/license.key", namespace=None)
    _until(lambda: "licensed to acme-corp" in _logs(kubectl, "worker"), 10)
    _until(lambda: _logs(kubectl, "worker")[-1:] == ["tick"], 10)


def test_on_the_instant_clock_the_later_passes_run_when_time_passes() -> None:
    cluster = Cluster()
    cluster.api.create(by_kind("Namespace"), "", {"metadata": {"name": "t"}})
    cluster.settle()
    container = {
        "name": "w",
        "image": "busybox:1.36",
        "command": ["sh", "-c", WAITS_FOR_KEY],
        "volumeMounts": [{"name": "work", "mountPath": "/work"}],
    }
    spec = {"containers": [container], "volumes": [{"name": "work", "emptyDir": {}}]}
    cluster.api.create(by_kind("Pod"), "t", {"metadata": {"name": "w"}, "spec": spec})
    cluster.settle()

    def logs() -> list[str]:
        return cluster.kubelet.read_log(
            "t", "w", None, previous=False, tail_lines=None
        ).splitlines()

    first = logs()
    assert first == ["waiting for license"] * 11  # the first ten seconds, at once
    cluster.settle()
    assert logs() == first  # a plain settle lets no time pass
    pod = cluster.store.get("pods", "t", "w")
    assert pod is not None
    cluster.exec_sessions.container_files(pod, container).write("/work/license.key", b"acme\n")
    cluster.settle(horizon=15)  # past the next pass, 11 s after the start
    later = logs()
    assert later[len(first)] == "licensed to acme"  # the next pass (at 11 s) saw the key
    assert set(later[len(first) + 1 :]) == {"tick"} and len(later) > len(first) + 2
