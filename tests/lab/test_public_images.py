"""Well-known public images and the pod lifecycle, through the machine's kubectl.

A real cluster pulls nginx, busybox, redis … and runs them by their entrypoint and the pod's
command; containers end by restartPolicy and pods reach Succeeded or Failed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for("system", lab, tmp_path)


def _pod(kubectl: Kubectl, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = json.loads(kubectl.out("get", "pod", name, "-o", "json"))
    return pod


def _state(kubectl: Kubectl, name: str) -> tuple[str, str, int]:
    """(phase, the container's state reason or "running", its restart count)."""
    pod = _pod(kubectl, name)
    (status,) = pod["status"]["containerStatuses"]
    state = status["state"]
    reason = (
        "running"
        if "running" in state
        else (state.get("waiting") or state.get("terminated") or {}).get("reason", "")
    )
    return pod["status"]["phase"], reason, status["restartCount"]


SERVERS = {
    "web": ["--image=nginx:1.27"],
    "web-latest": ["--image=docker.io/library/nginx"],
    "apache": ["--image=httpd:2.4-alpine"],
    "cache": ["--image=redis:7.2"],
    "pg": ["--image=postgres:16-alpine", "--env=POSTGRES_PASSWORD=s3cret"],
    "sql": ["--image=mysql:8.0", "--env=MYSQL_ROOT_PASSWORD=s3cret"],
    "mongo": ["--image=mongo:7"],
    "echo": ["--image=hashicorp/http-echo", "--", "-text=hi", "-listen=:9000"],
    "pause": ["--image=registry.k8s.io/pause:3.9"],
    "sleeper": ["--image=busybox:1.36", "--", "sleep", "3600"],
    "tailer": ["--image=alpine:3.20", "--", "tail", "-f", "/dev/null"],
    "looper": [
        "--image=busybox",
        "--",
        "sh",
        "-c",
        "while true; do echo tick $HOSTNAME; sleep 5; done",
    ],
    "pyserver": ["--image=python:3.12-slim", "--", "python", "-m", "http.server", "8000"],
}


def test_public_servers_and_long_running_commands_run(kubectl: Kubectl) -> None:
    for name, args in SERVERS.items():
        kubectl.run("run", name, *args)
    for name in SERVERS:
        assert _state(kubectl, name) == ("Running", "running", 0), name
        assert _pod(kubectl, name)["status"]["containerStatuses"][0]["ready"] is True
    assert kubectl.out("logs", "looper").splitlines()[0] == "tick looper"
    assert "ready to accept connections" in kubectl.out("logs", "pg")
    kubectl.run("expose", "pod", "web", "--port=80")
    ip = _pod(kubectl, "web")["status"]["podIP"]
    assert kubectl.out("get", "ep", "web", "-o", "jsonpath={.subsets[0].addresses[0].ip}") == ip


def test_servers_refuse_to_start_without_the_settings_they_need(kubectl: Kubectl) -> None:
    kubectl.run("run", "pg", "--image=postgres:16")
    kubectl.run("run", "sql", "--image=mysql:8.4")
    assert _state(kubectl, "pg")[:2] == ("Running", "CrashLoopBackOff")
    assert "superuser password is not specified" in kubectl.out("logs", "pg", "--previous")
    assert _state(kubectl, "sql")[:2] == ("Running", "CrashLoopBackOff")
    assert "MYSQL_ROOT_PASSWORD" in kubectl.out("logs", "sql", "--previous")


def test_unknown_images_and_tags_fail_to_pull(kubectl: Kubectl) -> None:
    kubectl.run("run", "typo", "--image=nginx:1.999")
    kubectl.run("run", "missing", "--image=nginx:does-not-exist")
    kubectl.run("run", "private", "--image=registry.example.com/team/app:1.0")
    for name in ("typo", "missing", "private"):
        assert _state(kubectl, name) == ("Pending", "ImagePullBackOff", 0), name
    events = kubectl.out("get", "events", "--field-selector", "involvedObject.name=private")
    assert "pull access denied" in events


def test_pods_end_by_their_restart_policy(kubectl: Kubectl) -> None:
    never = ["--image=busybox", "--restart=Never", "--"]
    kubectl.run("run", "ok", *never, "true")
    kubectl.run("run", "fails", *never, "sh", "-c", "echo boom; exit 3")
    kubectl.run("run", "slow", *never, "sh", "-c", "sleep 20; echo done")
    kubectl.run("run", "retry", "--image=busybox", "--restart=OnFailure", "--", "false")
    kubectl.run("run", "once", "--image=busybox", "--restart=OnFailure", "--", "sh", "-c", "exit 0")
    kubectl.run("run", "loop", "--image=busybox", "--", "sh", "-c", "exit 1")
    kubectl.run("run", "exits", "--image=busybox", "--", "echo", "hello")
    kubectl.run("run", "typo", "--image=busybox", "--", "slep", "10")
    assert _state(kubectl, "ok") == ("Succeeded", "Completed", 0)
    assert _state(kubectl, "fails") == ("Failed", "Error", 0)
    assert kubectl.out("logs", "fails") == "boom\n"
    assert _state(kubectl, "slow") == ("Succeeded", "Completed", 0)
    assert kubectl.out("logs", "slow") == "done\n"
    phase, reason, restarts = _state(kubectl, "retry")
    assert (phase, reason) == ("Running", "CrashLoopBackOff") and restarts > 0
    assert _state(kubectl, "once") == ("Succeeded", "Completed", 0)
    phase, reason, restarts = _state(kubectl, "loop")
    assert (phase, reason) == ("Running", "CrashLoopBackOff") and restarts > 0
    last = _pod(kubectl, "loop")["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert last["exitCode"] == 1 and last["reason"] == "Error"
    phase, reason, restarts = _state(kubectl, "exits")  # Always restarts even a clean exit
    assert (phase, reason) == ("Running", "CrashLoopBackOff") and restarts > 0
    assert kubectl.out("logs", "exits", "--previous") == "hello\n"
    last = _pod(kubectl, "exits")["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert last["exitCode"] == 0 and last["reason"] == "Completed"
    last = _pod(kubectl, "typo")["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert last["exitCode"] == 127
    table = {
        line.split()[0]: line.split()[2] for line in kubectl.out("get", "pods").splitlines()[1:]
    }
    assert table["ok"] == "Completed" and table["fails"] == "Error"
    ready = kubectl.out(
        "get", "pod", "ok", "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].reason}"
    )
    assert ready == "PodCompleted"
    succeeded = kubectl.out(
        "get", "pods", "--field-selector", "status.phase=Succeeded", "-o", "name"
    )
    assert set(succeeded.split()) == {"pod/ok", "pod/slow", "pod/once"}


def test_a_created_pod_answers_with_pending_status_and_qos(kubectl: Kubectl) -> None:
    manifest = """
apiVersion: v1
kind: Pod
metadata: {name: q}
spec:
  containers:
  - name: web
    image: nginx:1.27
    resources: {limits: {cpu: 100m, memory: 64Mi}}
"""
    created = json.loads(kubectl.out("create", "-f", "-", "-o", "json", stdin=manifest))
    assert created["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
    assert _pod(kubectl, "q")["status"]["qosClass"] == "Guaranteed"
    plain = json.loads(kubectl.out("run", "plain", "--image=nginx", "-o", "json"))
    assert plain["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_probes_follow_the_ports_a_public_image_listens_on(kubectl: Kubectl) -> None:
    manifest = """
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  containers:
  - name: web
    image: nginx:1.27
    readinessProbe: {httpGet: {path: /, port: PORT}, periodSeconds: 5}
"""
    kubectl.run("apply", "-f", "-", stdin=manifest.replace("NAME", "good").replace("PORT", "80"))
    kubectl.run("apply", "-f", "-", stdin=manifest.replace("NAME", "bad").replace("PORT", "8080"))
    assert _pod(kubectl, "good")["status"]["containerStatuses"][0]["ready"] is True
    assert _pod(kubectl, "bad")["status"]["containerStatuses"][0]["ready"] is False
    events = kubectl.out("get", "events", "--field-selector", "involvedObject.name=bad")
    assert "Readiness probe failed" in events and ":8080" in events


def test_a_crashing_container_stops_logging_at_its_crash(kubectl: Kubectl) -> None:
    kubectl.run("set", "image", "deploy/rate", "rate=stratus/hotel-rate:1.2")
    previous = kubectl.out("logs", "deploy/rate", "--previous").splitlines()
    assert "goroutine" in previous[-3] or "main.main()" in previous[-2], previous[-4:]
    assert not any("request to" in line for line in previous)


PROBED = """
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  containers:
  - name: main
    image: IMAGE
    ARGS
    readinessProbe: {httpGet: {path: PATH, port: PORT}, periodSeconds: 5}
"""


@pytest.mark.parametrize(
    ("image", "args", "port", "served", "unserved"),
    [
        ("grafana/grafana:11.3.0", "", 3000, ["/api/health", "/login", "/"], "/healthz/x"),
        ("prom/prometheus:v2.54.1", "", 9090, ["/-/healthy", "/-/ready", "/metrics"], "/health"),
        ("prom/node-exporter:v1.8.2", "", 9100, ["/metrics"], "/healthz"),
        ("python:3.12", "command: [python, -m, http.server, '8000']", 8000, ["/"], "/healthz"),
        ("traefik:v3.1", "", 8080, ["/ping"], "/"),
        ("tomcat:10.1", "", 8080, [], "/"),
        ("kennethreitz/httpbin", "", 80, ["/status/200", "/get"], "/healthz"),
        ("registry.k8s.io/coredns/coredns:v1.11.3", "", 8181, ["/ready", "/health"], "/"),
    ],
)
def test_http_probes_honour_the_paths_each_image_serves(
    kubectl: Kubectl, image: str, args: str, port: int, served: list[str], unserved: str
) -> None:
    def probe(name: str, path: str) -> dict[str, Any]:
        manifest = (
            PROBED.replace("NAME", name)
            .replace("IMAGE", image)
            .replace("ARGS", args)
            .replace("PATH", path)
            .replace("PORT", str(port))
        )
        kubectl.run("apply", "-f", "-", stdin=manifest)
        return _pod(kubectl, name)

    for index, path in enumerate(served):
        pod = probe(f"ok-{index}", path)
        assert pod["status"]["containerStatuses"][0]["ready"] is True, (image, path)
    pod = probe("missing", unserved)
    assert pod["status"]["containerStatuses"][0]["ready"] is False, (image, unserved)
    events = kubectl.out("get", "events", "--field-selector", "involvedObject.name=missing")
    assert "Readiness probe failed: HTTP probe failed with statuscode: 404" in events


def test_an_http_probe_on_a_server_that_does_not_speak_http_fails(kubectl: Kubectl) -> None:
    manifest = PROBED.replace("NAME", "cache").replace("IMAGE", "redis:7.2").replace("ARGS", "")
    kubectl.run("apply", "-f", "-", stdin=manifest.replace("PATH", "/").replace("PORT", "6379"))
    assert _pod(kubectl, "cache")["status"]["containerStatuses"][0]["ready"] is False
    events = kubectl.out("get", "events", "--field-selector", "involvedObject.name=cache")
    assert 'Readiness probe failed: Get "http://' in events and ':6379/": EOF' in events
    tcp = manifest.replace("httpGet: {path: PATH, port: PORT}", "tcpSocket: {port: 6379}")
    kubectl.run("apply", "-f", "-", stdin=tcp.replace("name: cache", "name: cache-tcp"))
    assert _pod(kubectl, "cache-tcp")["status"]["containerStatuses"][0]["ready"] is True
