"""``stratus demo`` runs its cluster with RBAC on, as kind and minikube do: HTTPS, the
kubeconfig it writes is the cluster admin's, a ServiceAccount without bindings is refused;
``--no-rbac`` runs the open lab over plain HTTP."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.bot.demo_process import DemoProcess

pytestmark = pytest.mark.timeout(300)


def _server(kubeconfig: Path) -> str:
    config = yaml.safe_load(kubeconfig.read_text())
    return str(config["clusters"][0]["cluster"]["server"])


def _kubectl(kubeconfig: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig),
        "KUBECACHEDIR": str(home / "cache"),
    }
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)  # fmt: skip


def test_the_demo_cluster_has_rbac_on(tmp_path: Path) -> None:
    demo = DemoProcess(tmp_path / "demo").start()
    try:
        kubeconfig = tmp_path / "demo" / "kubeconfig"
        assert _server(kubeconfig).startswith("https://127.0.0.1:")
        assert "kubernetes-admin" in _kubectl(kubeconfig, tmp_path, "auth", "whoami").stdout
        created = _kubectl(kubeconfig, tmp_path, "-n", "hotel", "create", "sa", "probe")
        assert created.returncode == 0, created.stderr
        token = _kubectl(kubeconfig, tmp_path, "-n", "hotel", "create", "token", "probe")
        refused = _kubectl(
            kubeconfig, tmp_path, "--token", token.stdout.strip(), "-n", "hotel", "get", "pods"
        )
        assert refused.returncode != 0
        assert 'User "system:serviceaccount:hotel:probe" cannot list resource "pods"' in (
            refused.stderr
        )
    finally:
        assert demo.stop() == 0, "\n".join(demo.lines)


def test_the_demo_without_rbac_serves_the_open_lab(tmp_path: Path) -> None:
    demo = DemoProcess(tmp_path / "demo", args=("--no-rbac",)).start()
    try:
        kubeconfig = tmp_path / "demo" / "kubeconfig"
        assert _server(kubeconfig).startswith("http://127.0.0.1:")
        listed = _kubectl(kubeconfig, tmp_path, "-n", "hotel", "get", "deploy", "frontend")
        assert listed.returncode == 0, listed.stderr
    finally:
        assert demo.stop() == 0, "\n".join(demo.lines)
