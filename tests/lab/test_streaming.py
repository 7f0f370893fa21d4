"""What the lab does not serve ends at once with the error a cluster without the capability
gives (no metrics server for ``top``); the checks before any stream (exec, attach, cp and
port-forward themselves are in tests/lab/test_exec.py) are a real API server's.
``kubectl run --rm -i`` prints the pod's output and cleans up."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for


@pytest.fixture(params=["system", "1.20", "1.27", "1.33"])
def kubectl(request: pytest.FixtureRequest, lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for(request.param, lab, tmp_path)


def _geo(kubectl: Kubectl) -> tuple[str, str]:
    pod = json.loads(kubectl.out("get", "pods", "-l", "app=geo", "-o", "json"))["items"][0]
    return pod["metadata"]["name"], pod["status"]["hostIP"]


def _fails_fast(kubectl: Kubectl, *args: str) -> str:
    started = time.monotonic()
    result = kubectl.run(*args, check=False, stdin="")
    assert time.monotonic() - started < 10, f"kubectl {' '.join(args)} hung"
    assert result.returncode == 1, result.stdout + result.stderr
    return result.stderr


def test_streaming_verbs_are_checked_first_and_top_has_no_metrics(kubectl: Kubectl) -> None:
    pod, _ = _geo(kubectl)
    assert f"container nope is not valid for pod {pod}" in _fails_fast(
        kubectl, "exec", pod, "-c", "nope", "--", "env"
    )
    assert 'pods "ghost" not found' in _fails_fast(kubectl, "exec", "ghost", "--", "env")
    assert "error: Metrics API not available" in _fails_fast(kubectl, "top", "pods")
    assert "error: Metrics API not available" in _fails_fast(kubectl, "top", "nodes")


def test_run_rm_interactive_does_not_hang(kubectl: Kubectl) -> None:
    started = time.monotonic()
    done = kubectl.run(
        "run", "once", "--rm", "-i", "--image=busybox", "--restart=Never", "--", "echo", "hi"
    )
    assert done.stdout.startswith("hi\n")
    failed = kubectl.run(
        "run",
        "fails",
        "--rm",
        "-i",
        "--image=busybox",
        "--restart=Never",
        "--",
        "sh",
        "-c",
        "exit 3",
        check=False,
    )
    assert failed.returncode == 3
    # Attached to a shell whose stdin then ends: the attach ends, and --rm removes the pod.
    shell = kubectl.run("run", "shell", "--rm", "-i", "--image=busybox", "--", "sh", check=False)
    assert shell.returncode == 0, shell.stderr
    assert 'pod "shell" deleted' in shell.stdout + shell.stderr
    assert time.monotonic() - started < 30
    assert "once" not in kubectl.out("get", "pods", "-o", "name")
