"""`stratus lab up --rbac`: an RBAC lab from the command line, judged by the real kubectl."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")
def test_lab_up_with_rbac_serves_https_and_authorizes(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    env = {**os.environ, "STRATUS_HOME": str(tmp_path), "HOME": str(tmp_path)}
    lab = subprocess.Popen(
        [sys.executable, "-m", "cli", "lab", "up", "--rbac", "--clock", "instant",
         "--kubeconfig", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        assert lab.stdout is not None
        ready = lab.stdout.readline()
        assert "lab ready: https://" in ready and "rbac=on" in ready, ready
        kube = {**env, "KUBECONFIG": str(config), "KUBECACHEDIR": str(tmp_path / "cache")}

        def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["kubectl", *args], capture_output=True, text=True, env=kube,
                                  timeout=60, check=False)  # fmt: skip

        assert "kubernetes-admin" in kubectl("auth", "whoami").stdout
        assert kubectl("-n", "hotel", "create", "serviceaccount", "bot").returncode == 0
        token = kubectl("-n", "hotel", "create", "token", "bot").stdout.strip()
        refused = kubectl("--token", token, "-n", "hotel", "get", "pods")
        assert refused.returncode != 0
        assert 'User "system:serviceaccount:hotel:bot" cannot list resource "pods"' in (
            refused.stderr
        )
    finally:
        lab.send_signal(signal.SIGINT)
        lab.communicate(timeout=30)  # reads and closes both pipes
