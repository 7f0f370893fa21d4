"""Crash loops settle into a stable pattern: checks read the same state whenever they look."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME}
spec:
  progressDeadlineSeconds: 120
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
        PROBES
"""


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for("system", lab, tmp_path)


def _deploy(kubectl: Kubectl, name: str, probes: str) -> None:
    manifest = DEPLOYMENT.replace("NAME", name).replace("PROBES", probes)
    kubectl.run("apply", "-f", "-", stdin=manifest)


def _container(kubectl: Kubectl, app: str) -> dict[str, Any]:
    pods = json.loads(kubectl.out("get", "pods", "-l", f"app={app}", "-o", "json"))["items"]
    assert len(pods) == 1
    status: dict[str, Any] = pods[0]["status"]["containerStatuses"][0]
    return status


def _progressing(kubectl: Kubectl, name: str) -> dict[str, Any]:
    deployment = json.loads(kubectl.out("get", "deploy", name, "-o", "json"))
    return next(c for c in deployment["status"]["conditions"] if c["type"] == "Progressing")


def _watched_pods(lab: Lab, since: str) -> list[dict[str, Any]]:
    """Every pod version a watcher saw since ``since``, transient ones included."""
    url = f"{lab.url}/api/v1/namespaces/hotel/pods?watch=1&resourceVersion={since}&timeoutSeconds=1"
    with urllib.request.urlopen(url, timeout=10) as response:
        return [json.loads(line)["object"] for line in response.read().splitlines() if line]


def _resource_version(lab: Lab) -> str:
    """The list's resourceVersion (kubectl prints lists without it)."""
    with urllib.request.urlopen(f"{lab.url}/api/v1/namespaces/hotel/pods", timeout=10) as response:
        return str(json.loads(response.read())["metadata"]["resourceVersion"])


def test_a_liveness_crash_loop_is_in_back_off_after_every_settle(
    kubectl: Kubectl, lab: Lab
) -> None:
    _deploy(kubectl, "web", "livenessProbe: {tcpSocket: {port: 8080}, periodSeconds: 5}")
    restarts = 0
    # However much time passes, a settle ends with the container waiting out its back-off:
    # never inside a run its probe is about to kill.
    for horizon in (0, 7, 33, 95, 240, 600):
        if horizon:
            lab.control.post("/lab/v1/settle", {"horizon": horizon})
        status = _container(kubectl, "web")
        assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff", (horizon, status)
        assert status["ready"] is False
        assert status["restartCount"] >= max(restarts, 1)
        assert status["lastState"]["terminated"]["exitCode"] == 137
        restarts = status["restartCount"]
    assert restarts >= 5
    events = json.loads(kubectl.out("get", "events", "-o", "json"))["items"]
    mine = [e for e in events if e["involvedObject"]["name"].startswith("web-")]
    unhealthy = [e for e in mine if e["reason"] == "Unhealthy"]
    assert unhealthy and unhealthy[0]["message"].startswith("Liveness probe failed: dial tcp")
    assert unhealthy[0]["count"] >= 3 * restarts  # failureThreshold failed tries per kill
    killing = [e for e in mine if e["reason"] == "Killing"]
    assert "failed liveness probe, will be restarted" in killing[0]["message"]
    # Its first run passed for ready, as on a cluster: the rollout finished then and stays so.
    assert _progressing(kubectl, "web")["reason"] == "NewReplicaSetAvailable"


def test_a_slow_liveness_probe_still_kills_within_the_settle(kubectl: Kubectl) -> None:
    _deploy(
        kubectl,
        "slow",
        "livenessProbe: {httpGet: {path: /healthz, port: 80}, initialDelaySeconds: 200}",
    )
    status = _container(kubectl, "slow")
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["restartCount"] == 1


@pytest.mark.parametrize(
    ("name", "probes"),
    [
        ("crash", "command: [sh, -c, 'exit 1']"),
        (
            "unready",
            "livenessProbe: {tcpSocket: {port: 8080}, periodSeconds: 5}\n"
            "        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 5}",
        ),
    ],
)
def test_a_crash_looping_deployment_exceeds_its_progress_deadline(
    kubectl: Kubectl, lab: Lab, name: str, probes: str
) -> None:
    since = _resource_version(lab)
    if name == "crash":
        manifest = DEPLOYMENT.replace("NAME", name).replace("PROBES", probes)
        manifest = manifest.replace("image: nginx:1.27", "image: busybox")
        kubectl.run("apply", "-f", "-", stdin=manifest)
    else:
        _deploy(kubectl, name, probes)
    assert _container(kubectl, name)["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert _progressing(kubectl, name)["reason"] == "ReplicaSetUpdated"
    lab.control.post("/lab/v1/settle", {"horizon": 60})  # within the deadline
    progressing = _progressing(kubectl, name)
    assert (progressing["status"], progressing["reason"]) == ("True", "ReplicaSetUpdated")
    lab.control.post("/lab/v1/settle", {"horizon": 80})  # past it
    progressing = _progressing(kubectl, name)
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert progressing["message"].endswith("has timed out progressing.")
    rollout = kubectl.run("rollout", "status", f"deploy/{name}", "--timeout=20s", check=False)
    assert rollout.returncode == 1
    assert f'deployment "{name}" exceeded its progress deadline' in rollout.stderr
    # Not once, between its crashes, did a watcher see the pod Ready.
    seen = [p for p in _watched_pods(lab, since) if p["metadata"]["name"].startswith(name)]
    assert len(seen) > 10
    assert not any(
        c.get("ready") for p in seen for c in (p.get("status") or {}).get("containerStatuses") or []
    )
    assert not any(
        c["type"] == "Ready" and c["status"] == "True"
        for p in seen
        for c in (p.get("status") or {}).get("conditions") or []
    )


def test_a_startup_probe_that_never_passes_kills_each_run_and_holds_readiness(
    kubectl: Kubectl,
) -> None:
    _deploy(
        kubectl,
        "starting",
        "startupProbe: {tcpSocket: {port: 8443}, periodSeconds: 5, failureThreshold: 3}\n"
        "        readinessProbe: {tcpSocket: {port: 80}, periodSeconds: 5}",
    )
    status = _container(kubectl, "starting")
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff", status
    assert status["ready"] is False
    assert status["lastState"]["terminated"]["exitCode"] == 137
    events = json.loads(kubectl.out("get", "events", "-o", "json"))["items"]
    mine = [e for e in events if e["involvedObject"]["name"].startswith("starting-")]
    unhealthy = [e["message"] for e in mine if e["reason"] == "Unhealthy"]
    assert unhealthy and all(m.startswith("Startup probe failed: dial tcp") for m in unhealthy)
    killing = [e["message"] for e in mine if e["reason"] == "Killing"]
    assert "failed startup probe, will be restarted" in killing[0]


def test_a_startup_probe_that_passes_hands_over_to_readiness(kubectl: Kubectl) -> None:
    _deploy(
        kubectl,
        "started",
        "startupProbe: {tcpSocket: {port: 80}, periodSeconds: 5}\n"
        "        readinessProbe: {tcpSocket: {port: 80}, periodSeconds: 5}",
    )
    status = _container(kubectl, "started")
    assert status["ready"] is True, status
    assert status["restartCount"] == 0
