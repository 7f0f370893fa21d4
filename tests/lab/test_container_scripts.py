"""A container's own ``command`` that is a shell script runs on the shell ``kubectl exec`` uses:
its redirections write into the container's files and the pod's emptyDirs (an init container's
output is there for the main container, at its own mount path, and for ``exec``), loops run
without blocking the lab (the container stays Running with its first passes' effects visible),
``$((…))`` expands, and the script's exit status is the container's exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for

INIT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: motd}
spec:
  selector: {matchLabels: {app: motd}}
  template:
    metadata: {labels: {app: motd}}
    spec:
      initContainers:
      - name: render
        image: alpine:3.20
        command: [sh, -c, "RENDER > /data/motd"]
        volumeMounts: [{name: data, mountPath: /data}]
      containers:
      - name: main
        image: busybox:1.36
        command: [sh, -c, "cat /srv/motd; sleep 3600"]
        volumeMounts: [{name: data, mountPath: /srv}]
      volumes: [{name: data, emptyDir: {}}]
"""

SIDECAR = """
apiVersion: v1
kind: Pod
metadata: {name: site}
spec:
  containers:
  - name: web
    image: busybox:1.36
    command: [sleep, "3600"]
    volumeMounts: [{name: html, mountPath: /usr/share/nginx/html}]
  - name: content
    image: busybox:1.36
    command:
    - sh
    - -c
    - >-
      echo 'hello from sidecar' > /work/index.html;
      n=0; while true; do n=$((n + 1)); echo "pass $n" >> /work/passes; date > /work/ts.txt;
      sleep 5; done
    volumeMounts: [{name: html, mountPath: /work}]
  volumes: [{name: html, emptyDir: {}}]
"""


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for("system", lab, tmp_path)


def _pod(kubectl: Kubectl, selector: str) -> dict[str, Any]:
    pods = json.loads(kubectl.out("get", "pods", "-l", selector, "-o", "json"))["items"]
    assert len(pods) == 1
    pod: dict[str, Any] = pods[0]
    return pod


def test_an_init_containers_file_reaches_the_main_container_through_the_empty_dir(
    kubectl: Kubectl,
) -> None:
    kubectl.run("apply", "-f", "-", stdin=INIT.replace("RENDER", "echo 'welcome to prod'"))
    pod = _pod(kubectl, "app=motd")
    [render] = pod["status"]["initContainerStatuses"]
    assert render["state"]["terminated"]["exitCode"] == 0
    assert render["state"]["terminated"]["reason"] == "Completed"
    assert pod["status"]["phase"] == "Running"
    name = pod["metadata"]["name"]
    assert kubectl.out("logs", name, "-c", "main") == "welcome to prod\n"
    assert kubectl.out("exec", name, "-c", "main", "--", "cat", "/srv/motd") == "welcome to prod\n"
    assert kubectl.out("logs", name, "-c", "render") == ""


def test_a_typo_in_an_init_script_crash_loops_with_sh_not_found(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", "-", stdin=INIT.replace("RENDER", "ech 'welcome to prod'"))
    pod = _pod(kubectl, "app=motd")
    [render] = pod["status"]["initContainerStatuses"]
    assert render["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert render["lastState"]["terminated"]["exitCode"] == 127
    name = pod["metadata"]["name"]
    assert kubectl.out("logs", name, "-c", "render") == "sh: ech: not found\n"
    table = kubectl.out("get", "pod", name, "--no-headers").split()
    assert table[2] == "Init:CrashLoopBackOff"


def test_a_sidecars_loop_keeps_running_and_shares_its_files(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", "-", stdin=SIDECAR)
    pod = json.loads(kubectl.out("get", "pod", "site", "-o", "json"))
    assert pod["status"]["phase"] == "Running"
    states = {s["name"]: s for s in pod["status"]["containerStatuses"]}
    assert "running" in states["content"]["state"] and states["content"]["ready"] is True
    assert states["content"]["restartCount"] == 0
    web = ["exec", "site", "-c", "web", "--"]
    index = kubectl.out(*web, "cat", "/usr/share/nginx/html/index.html")
    assert index == "hello from sidecar\n"
    passes = kubectl.out(*web, "cat", "/usr/share/nginx/html/passes").splitlines()
    assert passes[:2] == ["pass 1", "pass 2"]  # the first passes, with $((…)) expanded
    assert kubectl.out(*web, "sh", "-c", "test -s /usr/share/nginx/html/ts.txt && echo yes") == (
        "yes\n"
    )
    kubectl.run("exec", "site", "-c", "content", "--", "sh", "-c", "echo extra > /work/extra.txt")
    assert kubectl.out(*web, "cat", "/usr/share/nginx/html/extra.txt") == "extra\n"


def test_a_scripts_exit_status_and_output_are_the_containers(kubectl: Kubectl) -> None:
    script = (
        "i=0; while [ $i -lt 3 ]; do echo n=$((i * 2)); i=$((i + 1)); done; "
        "echo to-stderr >&2; ls /nope 2>&1; false && echo never; exit 4"
    )
    kubectl.run("run", "counter", "--image=busybox", "--restart=Never", "--", "sh", "-c", script)
    pod = json.loads(kubectl.out("get", "pod", "counter", "-o", "json"))
    [status] = pod["status"]["containerStatuses"]
    assert status["state"]["terminated"]["exitCode"] == 4
    assert pod["status"]["phase"] == "Failed"
    assert kubectl.out("logs", "counter").splitlines() == [
        "n=0",
        "n=2",
        "n=4",
        "to-stderr",
        "ls: /nope: No such file or directory",
    ]
    kubectl.run(
        "run", "strict", "--image=busybox", "--restart=Never", "--",
        "sh", "-ec", "echo start; false; echo never",
    )  # fmt: skip
    assert kubectl.out("logs", "strict") == "start\n"
    strict = json.loads(kubectl.out("get", "pod", "strict", "-o", "json"))
    assert strict["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1


def test_a_restarted_container_starts_with_a_new_layer_but_keeps_the_empty_dir(
    kubectl: Kubectl,
) -> None:
    manifest = """
apiVersion: v1
kind: Pod
metadata: {name: counter}
spec:
  restartPolicy: OnFailure
  containers:
  - name: main
    image: busybox
    command:
    - sh
    - -c
    - >-
      echo run >> /keep/runs; [ -f /tmp/mine ] && echo layer survived;
      touch /tmp/mine; [ $(wc -l < /keep/runs) -ge 2 ] && sleep 3600; exit 1
    volumeMounts: [{name: keep, mountPath: /keep}]
  volumes: [{name: keep, emptyDir: {}}]
"""
    kubectl.run("apply", "-f", "-", stdin=manifest)
    pod = json.loads(kubectl.out("get", "pod", "counter", "-o", "json"))
    [status] = pod["status"]["containerStatuses"]
    assert status["restartCount"] == 1 and "running" in status["state"]
    assert kubectl.out("exec", "counter", "--", "cat", "/keep/runs") == "run\nrun\n"
    assert "layer survived" not in kubectl.out("logs", "counter")
