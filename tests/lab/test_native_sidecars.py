"""Native sidecars (an init container with ``restartPolicy: Always``, Kubernetes 1.29): it
starts before the app containers and stays running beside them, the next container starts as
soon as it has started, it restarts with the crash back-off whatever its exit, and its
readiness is part of the pod's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for

MANIFEST = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: NAME}
spec:
  selector: {matchLabels: {app: NAME}}
  template:
    metadata: {labels: {app: NAME}}
    spec:
      initContainers:
      - name: proxy
        image: busybox:1.36
        restartPolicy: Always
        command: COMMAND
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
"""


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for("system", lab, tmp_path)


def _pod(kubectl: Kubectl, name: str, command: str) -> dict[str, Any]:
    manifest = MANIFEST.replace("NAME", name).replace("COMMAND", command)
    kubectl.run("apply", "-f", "-", stdin=manifest)
    pods = json.loads(kubectl.out("get", "pods", "-l", f"app={name}", "-o", "json"))["items"]
    assert len(pods) == 1
    pod: dict[str, Any] = pods[0]
    return pod


def _condition(pod: dict[str, Any], kind: str) -> str:
    return str(next(c for c in pod["status"]["conditions"] if c["type"] == kind)["status"])


def test_a_native_sidecar_runs_beside_the_app_containers(kubectl: Kubectl) -> None:
    pod = _pod(kubectl, "meshed", "[sh, -c, 'while true; do sleep 5; done']")
    [sidecar] = pod["status"]["initContainerStatuses"]
    assert "running" in sidecar["state"], sidecar
    [web] = pod["status"]["containerStatuses"]
    assert "running" in web["state"] and web["ready"] is True
    assert pod["status"]["phase"] == "Running"
    assert _condition(pod, "Initialized") == "True"
    assert _condition(pod, "Ready") == "True"
    # kubectl's columns count the sidecar, as the 1.28+ printer does
    row = kubectl.out("get", "pod", pod["metadata"]["name"], "--no-headers").split()
    assert row[1:4] == ["2/2", "Running", "0"]


def test_a_crashing_native_sidecar_keeps_the_pod_unready(kubectl: Kubectl) -> None:
    pod = _pod(kubectl, "broken", "[envoy, -c, /etc/envoy.yaml]")
    [sidecar] = pod["status"]["initContainerStatuses"]
    assert sidecar["state"]["waiting"]["reason"] == "CrashLoopBackOff", sidecar
    assert sidecar["lastState"]["terminated"]["exitCode"] == 127
    [web] = pod["status"]["containerStatuses"]
    assert "running" in web["state"]  # it started once the sidecar had
    assert _condition(pod, "Ready") == "False"
