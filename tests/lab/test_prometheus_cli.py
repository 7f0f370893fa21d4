"""``stratus lab up --prometheus``: a real Prometheus beside the lab, scraping it over HTTPS
with its token when RBAC is on, stopped with it; and a clear error without the binaries."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from lab.prometheus import unavailable
from tests.conftest import REPO, stratus


def test_without_the_binaries_the_error_says_what_to_install(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}  # nothing to find there
    result = stratus("lab", "up", "--prometheus", "--kubeconfig", str(tmp_path / "kc"), env=env)
    assert result.returncode == 1
    assert "prometheus" in result.stderr and "apt-get install" in result.stderr
    assert not (tmp_path / "kc").exists()


def test_alert_webhook_needs_prometheus(tmp_path: Path) -> None:
    result = stratus("lab", "up", "--alert-webhook", "http://x", env=dict(os.environ))
    assert result.returncode != 0 and "--alert-webhook needs --prometheus" in result.stderr


@pytest.mark.skipif(unavailable() is not None, reason=unavailable() or "")
def test_lab_up_with_prometheus_scrapes_an_rbac_lab_and_stops_with_it(tmp_path: Path) -> None:
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli",
            "lab",
            "up",
            "--rbac",
            "--prometheus",
            "--app",
            "hotel",
            "--kubeconfig",
            str(tmp_path / "kc"),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    ) as process:
        prometheus = _check_and_stop(process)
    _gone(prometheus)  # Prometheus went with the lab.


def _gone(url: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/-/ready", timeout=1).close()
        except OSError:
            return
        time.sleep(0.2)
    pytest.fail(f"{url} still answers after the lab stopped")


@pytest.mark.skipif(unavailable() is not None, reason=unavailable() or "")
def test_a_lab_killed_with_sigkill_takes_prometheus_and_alertmanager_with_it(
    tmp_path: Path,
) -> None:
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli",
            "lab",
            "up",
            "--prometheus",
            "--alert-webhook",
            "http://127.0.0.1:9/alerts",
            "--kubeconfig",
            str(tmp_path / "kc"),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    ) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f and "://" in f)
        assert {"prometheus", "alertmanager"} <= set(fields), line
        process.kill()  # no handler runs: only the kernel can stop the children now
        process.wait(timeout=10)
    _gone(fields["prometheus"])
    _gone(fields["alertmanager"])


def _check_and_stop(process: subprocess.Popen[str]) -> str:
    """The ready line's Prometheus scrapes every target over HTTPS; then SIGTERM."""
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("lab ready: https://"), line
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f and "://" in f)
        prometheus = fields["prometheus"]
        with urllib.request.urlopen(f"{prometheus}/api/v1/targets", timeout=10) as response:
            targets = json.loads(response.read())["data"]["activeTargets"]
        assert {t["labels"]["job"] for t in targets} == {
            "kube-state-metrics",
            "kubelet",
            "stratus-lab-apps",
        }
        assert all(t["health"] == "up" for t in targets), [t["lastError"] for t in targets]
        assert all(t["scrapeUrl"].startswith("https://") for t in targets)
        return prometheus
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
