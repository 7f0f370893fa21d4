"""A container's cgroup as read from inside (``/sys/fs/cgroup/memory.max``, ``cpu.max`` …) and
the memory limit enforced on what its shell command holds: a script that buffers more than the
limit is OOMKilled and crash-loops, the same script under a higher limit runs on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for

GREEDY = "head -c 50m /dev/zero | tail > /dev/null; echo alloc-ok; sleep 3600"
PODS = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: cg}}
---
apiVersion: v1
kind: Pod
metadata: {{name: tight, namespace: cg}}
spec:
  containers:
  - name: worker
    image: alpine:3.20
    command: [sh, -c, "{GREEDY}"]
    resources: {{requests: {{memory: 16Mi}}, limits: {{memory: 32Mi}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: roomy, namespace: cg}}
spec:
  containers:
  - name: worker
    image: alpine:3.20
    command: [sh, -c, "{GREEDY}"]
    resources: {{requests: {{memory: 64Mi, cpu: 100m}}, limits: {{memory: 128Mi, cpu: 250m}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: free, namespace: cg}}
spec:
  containers:
  - {{name: main, image: "busybox:1.36", command: [sleep, "3600"]}}
"""


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    found = kubectl_for("system", lab, tmp_path)
    found.run("apply", "-f", "-", stdin=PODS, namespace=None)
    lab.settle()
    return found


def _status(kubectl: Kubectl, pod: str) -> dict[str, object]:
    body = json.loads(kubectl.out("get", "pod", pod, "-o", "json", namespace="cg"))
    status: dict[str, object] = body["status"]["containerStatuses"][0]
    return status


def _read(kubectl: Kubectl, pod: str, name: str) -> str:
    return kubectl.out("exec", pod, "--", "cat", f"/sys/fs/cgroup/{name}", namespace="cg").strip()


def test_a_script_holding_more_than_its_limit_is_oom_killed(kubectl: Kubectl) -> None:
    status = _status(kubectl, "tight")
    last = status["lastState"]
    assert isinstance(last, dict)
    assert last["terminated"]["reason"] == "OOMKilled"
    assert last["terminated"]["exitCode"] == 137
    assert int(str(status["restartCount"])) >= 1
    assert kubectl.out("logs", "tight", "-p", namespace="cg") == ""  # killed before its echo
    events = kubectl.out(
        "get", "events", "--field-selector", "involvedObject.name=tight", namespace="cg"
    )
    assert "BackOff" in events


def test_the_same_script_under_a_higher_limit_runs_on(kubectl: Kubectl) -> None:
    status = _status(kubectl, "roomy")
    assert status["restartCount"] == 0
    assert status["ready"] is True
    assert kubectl.out("logs", "roomy", namespace="cg").splitlines()[-1] == "alloc-ok"


def test_the_cgroup_files_show_the_limits(kubectl: Kubectl) -> None:
    assert _read(kubectl, "roomy", "memory.max") == "134217728"
    assert _read(kubectl, "roomy", "cpu.max") == "25000 100000"
    assert _read(kubectl, "roomy", "cpu.weight") == "4"  # 100m: 102 shares
    current = int(_read(kubectl, "roomy", "memory.current"))
    assert 0 < current <= 134217728
    assert _read(kubectl, "free", "memory.max") == "max"
    assert _read(kubectl, "free", "cpu.max") == "max 100000"
    assert "memory" in _read(kubectl, "free", "cgroup.controllers").split()
    names = kubectl.out("exec", "free", "--", "ls", "/sys/fs/cgroup", namespace="cg").split()
    assert {"memory.max", "memory.current", "cpu.max", "pids.max"} <= set(names)
    write = kubectl.run(
        "exec",
        "free",
        "--",
        "sh",
        "-c",
        "echo 1 > /sys/fs/cgroup/memory.max",
        namespace="cg",
        check=False,
    )
    assert write.returncode != 0
    assert "Read-only file system" in write.stderr
