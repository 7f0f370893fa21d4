"""`stratus lab up`: RBAC on by default, as kind and minikube (HTTPS, the admin kubeconfig is
cluster-admin, ServiceAccounts get only what they are bound to); `--no-rbac` for the old open
lab. Judged by the real kubectl."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import REPO, interruptible, stratus


@contextmanager
def _lab_up(tmp_path: Path, *flags: str) -> Iterator[tuple[str, dict[str, str]]]:
    """``stratus lab up`` in its own process: its ready line and an env for kubectl."""
    config = tmp_path / "kubeconfig"
    env = {**os.environ, "STRATUS_HOME": str(tmp_path), "HOME": str(tmp_path)}
    lab = subprocess.Popen(
        [sys.executable, "-m", "cli", "lab", "up", *flags, "--clock", "instant",
         "--kubeconfig", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
        preexec_fn=interruptible,  # noqa: PLW1509 - only signal dispositions, before exec
    )  # fmt: skip
    try:
        assert lab.stdout is not None
        ready = lab.stdout.readline()
        yield ready, {**env, "KUBECONFIG": str(config), "KUBECACHEDIR": str(tmp_path / "cache")}
    finally:
        lab.send_signal(signal.SIGINT)
        # Reads and closes both pipes; stopping waits for Prometheus, Alertmanager and the
        # lab's thread (up to 30 s between them on a loaded machine).
        lab.communicate(timeout=60)


def _kubectl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)  # fmt: skip


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")
def test_lab_up_serves_https_and_authorizes_by_default(tmp_path: Path) -> None:
    with _lab_up(tmp_path) as (ready, kube):
        assert "lab ready: https://" in ready and "rbac=on" in ready, ready
        assert "kubernetes-admin" in _kubectl(kube, "auth", "whoami").stdout
        assert _kubectl(kube, "auth", "can-i", "'*'", "'*'", "-A").stdout.strip() == "yes"
        assert _kubectl(kube, "-n", "hotel", "create", "serviceaccount", "bot").returncode == 0
        token = _kubectl(kube, "-n", "hotel", "create", "token", "bot").stdout.strip()
        refused = _kubectl(kube, "--token", token, "-n", "hotel", "get", "pods")
        assert refused.returncode != 0
        assert (
            'pods is forbidden: User "system:serviceaccount:hotel:bot" cannot list resource '
            '"pods" in API group "" in the namespace "hotel"'
        ) in refused.stderr
        # `stratus lab` recognises the lab on HTTPS by its /version too, through $KUBECONFIG.
        settled = subprocess.run(
            [sys.executable, "-m", "cli", "lab", "settle"], capture_output=True, text=True,
            env={**kube, "STRATUS_HOME": str(tmp_path / "elsewhere")}, cwd=REPO, timeout=60,
            check=False,
        )  # fmt: skip
        assert settled.returncode == 0, settled.stderr


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")
def test_lab_up_no_rbac_is_the_open_lab_over_http(tmp_path: Path) -> None:
    with _lab_up(tmp_path, "--no-rbac") as (ready, kube):
        assert "lab ready: http://" in ready and "rbac=" not in ready, ready
        assert _kubectl(kube, "-n", "hotel", "create", "serviceaccount", "bot").returncode == 0
        # Without RBAC every request is allowed, whoever sends it.
        listed = _kubectl(kube, "-n", "hotel", "get", "pods")
        assert listed.returncode == 0 and "frontend" in listed.stdout, listed.stderr


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")
def test_lab_up_still_accepts_the_rbac_flag(tmp_path: Path) -> None:
    with _lab_up(tmp_path, "--rbac") as (ready, _kube):
        assert "lab ready: https://" in ready and "rbac=on" in ready, ready


def test_without_openssl_the_error_says_what_to_do(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # no openssl to find there
    result = stratus("lab", "up", "--kubeconfig", str(tmp_path / "kc"), env=env)
    assert result.returncode == 1, result.stderr
    assert "openssl" in result.stderr and "--no-rbac" in result.stderr
    assert "internal error" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "kc").exists()
