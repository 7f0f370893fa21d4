"""A lab's end ends its pods' processes: a pod of the Stratus image is a child process of
the lab's kubelet, and neither a reset, nor ``LabServer.stop``, nor SIGTERM to ``stratus lab
up`` leaves one behind. Each test runs a lab of its own (split from ``test_stratus_pod.py``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lab.client import LabClient
from lab.cluster.clock import INSTANT
from lab.runner import LabServer
from tests.conftest import REPO
from tests.lab.stratus_pods import (
    NS,
    Kubectl,
    alive,
    children,
    children_of,
    help_pod,
    hostname,
    wait_until,
)

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")


def test_stopping_the_lab_leaves_no_process_behind(tmp_path: Path) -> None:
    # The instant clock this time: real processes run the same under either clock.
    server = LabServer(mode=INSTANT, rbac=True, state_dir=tmp_path / "state").start()
    stopped = False
    try:
        home = tmp_path / "kubectl"
        home.mkdir()
        kubectl = Kubectl(server.write_kubeconfig(home / "config"), home)
        # A long-running real process that needs nothing else: a lab of its own.
        pod = help_pod("lingering", "Always")
        pod["spec"]["containers"][0]["args"] = ["lab", "up", "--port", "0", "--app", "none",
                                                "--kubeconfig", "/tmp/lab/config"]  # fmt: skip
        pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "tmp", "mountPath": "/tmp"}]
        pod["spec"]["volumes"] = [{"name": "tmp", "emptyDir": {}}]
        # A reset of the lab (what the test suite's shared lab does between tests) ends it.
        kubectl("create", "namespace", NS)
        kubectl.apply(pod)
        first = wait_until(
            lambda: next((p for p in children() if hostname(p) == "lingering"), None),
            60,
            "the pod's process",
        )
        LabClient(server.url).post("/lab/v1/reset")
        wait_until(lambda: not alive(first), 40, "the reset to end the process")
        kubectl("create", "namespace", NS)
        kubectl.apply(pod)
        pid = wait_until(
            lambda: next((p for p in children() if hostname(p) == "lingering"), None),
            60,
            "the pod's process",
        )
        wait_until(
            lambda: "lab ready" in kubectl.run("-n", NS, "logs", "lingering").stdout, 60, "its log"
        )
        server.stop()
        stopped = True
        assert not alive(pid)
        assert not [p for p in children() if hostname(p) == "lingering"]
    finally:
        if not stopped:
            server.stop()


def test_sigterm_to_stratus_lab_up_stops_its_pods_processes(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    env = {**os.environ, "STRATUS_HOME": str(tmp_path), "HOME": str(tmp_path)}
    lab = subprocess.Popen(
        [sys.executable, "-m", "cli", "lab", "up", "--clock", "instant", "--app", "none",
         "--kubeconfig", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        assert lab.stdout is not None
        assert "lab ready: " in lab.stdout.readline()
        kubectl = Kubectl(config, tmp_path)
        kubectl("create", "namespace", NS)
        pod = help_pod("lingering", "Always")
        pod["spec"]["containers"][0]["args"] = ["lab", "up", "--app", "none",
                                                "--kubeconfig", "/tmp/lab/config"]  # fmt: skip
        pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "tmp", "mountPath": "/tmp"}]
        pod["spec"]["volumes"] = [{"name": "tmp", "emptyDir": {}}]
        kubectl.apply(pod)
        (grandchild,) = wait_until(lambda: children_of(lab.pid), 60, "the pod's process")
        lab.send_signal(signal.SIGTERM)
        lab.communicate(timeout=60)
        assert not alive(grandchild)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.communicate(timeout=30)
