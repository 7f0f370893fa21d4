"""``kubectl logs`` options as a kubelet serves them: follow, since, since-time, tail,
limit-bytes and timestamps, through the machine's kubectl and kubectl 1.20."""

from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import KUBECTLS, Kubectl, Lab, kubectl_for


@pytest.fixture(params=["system", "1.20"])
def kubectl(request: pytest.FixtureRequest, lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for(request.param, lab, tmp_path)


def _frontend(kubectl: Kubectl) -> str:
    return kubectl.out(
        "get", "pods", "-l", "app=frontend", "-o", "jsonpath={.items[0].metadata.name}"
    )


def _follow(kubectl: Kubectl, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [kubectl.binary, "-n", "hotel", "logs", "-f", *args],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stamp(line: str) -> datetime:
    return datetime.fromisoformat(line.split(" ", 1)[0][:26] + "+00:00")


def test_follow_ends_with_the_container(kubectl: Kubectl) -> None:
    kubectl.run(
        "run", "job", "--image=busybox", "--restart=Never", "--", "sh", "-c", "echo one; echo two"
    )
    done = kubectl.run("logs", "-f", "job")
    assert done.stdout == "one\ntwo\n"
    tail = kubectl.run("logs", "-f", "--tail=1", "job")
    assert tail.stdout == "two\n"


def test_follow_streams_until_the_pod_goes(kubectl: Kubectl, lab: Lab) -> None:
    pod = _frontend(kubectl)
    before = kubectl.out("logs", pod).count("\n")
    follower = _follow(kubectl, pod)
    try:
        time.sleep(1.5)
        assert follower.poll() is None, "logs -f returned while the container runs"
        for _ in range(3):  # each settle sends a window of traffic: frontend logs its calls
            lab.settle()
        time.sleep(0.5)
        kubectl.run("delete", "pod", pod, "--wait=false")
        out, err = follower.communicate(timeout=10)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    assert follower.returncode == 0, err
    assert out.count("\n") > before, "no new lines were streamed"
    assert "request to search:8082 ok" in out


def test_follow_stops_when_the_client_leaves(lab: Lab, tmp_path: Path) -> None:
    kubectl = kubectl_for("system", lab, tmp_path)
    follower = _follow(kubectl, _frontend(kubectl))
    time.sleep(1.0)
    follower.kill()
    follower.communicate()
    # The server keeps serving.
    assert kubectl.out("get", "pods", "-l", "app=frontend", "-o", "name")


def test_since_timestamps_and_limit_bytes(kubectl: Kubectl, lab: Lab) -> None:
    lab.settle()
    pod = _frontend(kubectl)
    lines = kubectl.out("logs", pod, "--timestamps").splitlines()
    assert len(lines) > 3
    stamps = [_stamp(line) for line in lines]
    assert stamps == sorted(stamps)
    plain = kubectl.out("logs", pod).splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == plain
    cut = stamps[-1].strftime("%Y-%m-%dT%H:%M:%SZ")
    recent = kubectl.out("logs", pod, f"--since-time={cut}", "--timestamps").splitlines()
    assert 0 < len(recent) <= len(lines)
    floor = datetime.fromisoformat(cut.replace("Z", "+00:00"))
    assert all(_stamp(line) >= floor for line in recent)
    if stamps[0] < floor:
        assert len(recent) < len(lines)
    assert kubectl.out("logs", pod, "--since-time=2999-01-01T00:00:00Z") == ""
    assert kubectl.out("logs", pod, "--since=87600h").splitlines() == plain
    assert len(kubectl.out("logs", pod, "--limit-bytes=10").encode()) == 10
    assert kubectl.out("logs", pod, "--tail=2", "--timestamps").splitlines() == lines[-2:]


def test_since_seconds_counts_in_cluster_time(lab: Lab, tmp_path: Path) -> None:
    kubectl = kubectl_for("system", lab, tmp_path)
    kubectl.run("run", "tick", "--image=busybox", "--", "sh", "-c", "echo booted; sleep 3600")
    assert kubectl.out("logs", "tick", "--since=1h") == "booted\n"
    info = json.loads(json.dumps(lab.control.get("/lab/v1/info")))
    assert info["mode"] == "instant"
    if KUBECTLS.get("1.20"):
        old = kubectl_for("1.20", lab, tmp_path)
        assert old.out("logs", "tick", "--since=1h") == "booted\n"
