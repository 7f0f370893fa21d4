"""``stratus lab …`` as a user runs it: a real process, real HTTP, one-line errors."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, interruptible, stratus

STRATUS = [sys.executable, "-m", "cli"]


@pytest.fixture(scope="module")
def lab_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Path]]:
    home = tmp_path_factory.mktemp("stratus-home")
    env = {**os.environ, "STRATUS_HOME": str(home)}
    process = subprocess.Popen(
        [*STRATUS, "lab", "up", "--clock", "instant", "--app", "hotel"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
        preexec_fn=interruptible,  # noqa: PLW1509 - only signal dispositions, before exec
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    # RBAC is on by default, so the lab serves HTTPS (and `stratus lab` commands still reach it).
    match = re.match(
        r"lab ready: (https://127\.0\.0\.1:\d+) kubeconfig=(\S+) apps=hotel .*rbac=on", line
    )
    assert match, line + (process.stderr.read() if process.stderr else "")
    yield env, Path(match[2])
    process.send_signal(signal.SIGINT)
    # Stopping waits for Prometheus and Alertmanager (5 s each, then a kill) and the lab's
    # thread (10 s): on a loaded machine that is more than 10 s.
    process.communicate(timeout=60)


def test_lab_up_writes_a_kubeconfig_that_kubectl_uses(
    lab_process: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, kubeconfig = lab_process
    assert kubeconfig == Path(env["STRATUS_HOME"]) / "lab" / "kubeconfig"
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "get", "deploy", "geo"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**env, "HOME": str(tmp_path)},
    )
    assert result.returncode == 0 and "1/1" in result.stdout


def test_inject_check_and_reset(lab_process: tuple[dict[str, str], Path]) -> None:
    env, _ = lab_process
    injected = stratus("lab", "inject", "hotel-geo-target-port", env=env)
    assert injected.returncode == 0 and "patched service/geo" in injected.stdout
    failing = stratus("lab", "check", "hotel-geo-target-port", env=env)
    assert failing.returncode == 1 and failing.stdout.startswith("FAIL")
    assert "Service/geo fails 100% of requests" in failing.stdout
    assert stratus("lab", "reset", env=env).returncode == 0
    stratus("lab", "inject", "noop-hotel", env=env)
    passing = stratus("lab", "check", "noop-hotel", "--json", env=env)
    assert passing.returncode == 0 and '"passed": true' in passing.stdout
    fault = stratus(
        "lab", "inject", "scale-to-zero", "-n", "hotel", "--param", "deployment=user", env=env
    )
    assert fault.returncode == 0 and "patched deployment/user" in fault.stdout


def test_listing_needs_no_lab() -> None:
    env = {**os.environ, "STRATUS_HOME": "/nonexistent"}
    listed = stratus("lab", "scenarios", env=env)
    assert listed.returncode == 0 and "hotel-geo-target-port" in listed.stdout
    assert "scale-to-zero" in stratus("lab", "faults", env=env).stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["lab", "inject", "hotel-geo-target-port"], "no kubeconfig at"),
        (["lab", "inject", "nothing-by-that-name"], "no scenario or fault named"),
        (["lab", "check", "noop-hotel"], "no kubeconfig at"),
        (["lab", "up", "--app", "casino"], "unknown app 'casino'"),
        (["lab", "inject", "scale-to-zero"], "needs --namespace"),
    ],
)
def test_errors_are_one_line_without_traceback(
    args: list[str], message: str, tmp_path: Path
) -> None:
    result = stratus(*args, env={**os.environ, "STRATUS_HOME": str(tmp_path)})
    assert result.returncode != 0
    assert message in result.stderr and "Traceback" not in result.stderr


def test_unreachable_lab_is_a_clear_error(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts: [{name: c, context: {cluster: c}}]\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
    )
    result = stratus("lab", "reset", "--kubeconfig", str(kubeconfig), env=dict(os.environ))
    assert result.returncode == 1 and "cannot reach the lab" in result.stderr
    assert "Traceback" not in result.stderr


def test_lab_commands_take_a_lab_from_kubeconfig_env(
    lab_process: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    """``$KUBECONFIG`` naming the lab is enough (the terminal the demo's env file set up);
    the lab is told apart from a cluster by what its /version says."""
    env, kubeconfig = lab_process
    elsewhere = {**env, "STRATUS_HOME": str(tmp_path), "KUBECONFIG": str(kubeconfig)}
    reset = stratus("lab", "reset", env=elsewhere)
    assert reset.returncode == 0, reset.stderr
    assert "lab reset; apps: hotel" in reset.stdout


@pytest.fixture
def real_cluster(tmp_path: Path) -> Iterator[tuple[Path, list[str]]]:
    """Something that answers /version like a real API server, and records every request."""
    import http.server
    import json
    import threading

    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            body = json.dumps({"major": "1", "minor": "30", "gitVersion": "v1.30.2"}).encode()
            self.send_response(200 if self.path == "/version" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "real"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: prod\n"
        "contexts: [{name: prod, context: {cluster: prod}}]\n"
        f"clusters: [{{name: prod, cluster: {{server: 'http://127.0.0.1:{server.server_port}'}}}}]\n"
    )
    yield kubeconfig, seen
    server.shutdown()
    server.server_close()


def test_lab_commands_refuse_a_cluster_that_is_not_a_lab(
    real_cluster: tuple[Path, list[str]], tmp_path: Path
) -> None:
    kubeconfig, seen = real_cluster
    env = {**os.environ, "STRATUS_HOME": str(tmp_path), "KUBECONFIG": str(kubeconfig)}
    refused = stratus("lab", "inject", "hotel-geo-target-port", env=env)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    line = refused.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert f"$KUBECONFIG ({kubeconfig})" in line and "not a Stratus lab" in line
    assert "v1.30.2" in line
    named = stratus("lab", "reset", "--kubeconfig", str(kubeconfig), env=dict(os.environ))
    assert named.returncode == 1 and "not a Stratus lab" in named.stderr
    assert seen and all(request == "GET /version" for request in seen), seen
