"""``stratus serve`` as it runs in a pod: its own listener answers ``/healthz``, ``/readyz``
(each check named, 503 naming the failing one when the policy files break, the database is
locked or the cluster stops answering) and ``/metrics`` (the incident, its proposals, the
approval wait, the write and its undo, the alert taken in, the API errors), in HTTP and in
Socket Mode — and its JSON logs carry the incident and proposal ids and never a token, a
key or a Secret's value it was given (issue 19 §2).

A real process against the lab (through a fault proxy, to take the cluster away) and the
Slack playground, driven as a person would: a slash command, Approve, Undo."""

from __future__ import annotations

import base64
import json
import os
import queue
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from cli.demo_commands import DEMO_POLICY
from lab.slack.client import PlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.agents.alert_payloads import alert, payload
from tests.bot.conftest import inject
from tests.bot.demo_process import text_of, wait_for
from tests.conftest import Lab, stratus
from tests.faultproxy import FaultProxy
from tools.k8s import KubeClient

pytestmark = pytest.mark.timeout(400)
REPO = Path(__file__).resolve().parents[2]
SCENARIO = "hotel-recommendation-scaled-to-zero"
CHANNEL = "C0INCIDENT"
ALERTS_TOKEN = "alerts-token-never-in-a-log-7f3a9c"
AUDIT_KEY = "audit-key-never-in-a-log-51d2e8"
MODEL_KEY = "sk-model-key-never-in-a-log-0123456789"
SECRET_VALUE = "lab-secret-value-never-in-a-log-93b1"
HEALTH = "  health: "


class Served:
    """A ``stratus serve`` process: its printed lines, its log lines, its URLs."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli", "serve", *args],
            cwd=REPO,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._printed: queue.Queue[str | None] = queue.Queue()
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        self.health = ""
        self.bot = ""
        deadline = time.monotonic() + 180
        while not self.health:
            try:
                line = self._printed.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                line = None
            if line is None:
                self.stop()
                raise AssertionError("serve printed no health URL:\n" + "\n".join(self.lines()))
            if line.startswith("stratus bot running"):
                self.bot = line.split()[-1]
            if line.startswith(HEALTH):
                self.health = line.removeprefix(HEALTH).split()[0]

    def _read(self, stream: Any, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))
            if into is self.out:
                self._printed.put(line.rstrip("\n"))
        if into is self.out:
            self._printed.put(None)

    def lines(self) -> list[str]:
        return [*self.out, *self.err]

    def get(self, path: str) -> requests.Response:
        return requests.get(self.health + path, timeout=30)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        for reader in self._readers:
            reader.join(timeout=10)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        return code


def serve_env(lab_kubeconfig: Path, playground: PlaygroundServer, tmp_path: Path) -> dict[str, str]:
    policy = tmp_path / "policy"
    policy.mkdir(exist_ok=True)
    (policy / "policy.yaml").write_text(DEMO_POLICY)
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("STRATUS_", "SLACK_", "OPENAI_"))
    }
    return {
        **clean,
        "KUBECONFIG": str(lab_kubeconfig),
        "STRATUS_DB": str(tmp_path / "stratus.db"),
        "STRATUS_POLICY_DIR": str(policy),
        "STRATUS_HOME": str(tmp_path / "home"),
        "SLACK_BOT_TOKEN": playground.bot_token,
        "SLACK_APP_TOKEN": playground.app_token,
        "SLACK_SIGNING_SECRET": playground.signing_secret,
        "STRATUS_SLACK_API_URL": playground.api_url,
        "STRATUS_ALERTS_TOKEN": ALERTS_TOKEN,
        "STRATUS_ALERT_CHANNEL": CHANNEL,
        "STRATUS_ALERTS_PORT": "0",
        "STRATUS_AUDIT_KEY": AUDIT_KEY,
        "OPENAI_API_KEY": MODEL_KEY,
        "STRATUS_LOG_FORMAT": "json",
        "STRATUS_HEALTH_PORT": "0",
        "STRATUS_BOT_FOLLOW_SECONDS": "0.1",
    }


def figures(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def total(
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return sum(
        value
        for (sample, have), value in found.items()
        if sample == name and labels.items() <= dict(have).items()
    )


def card(slack: PlaygroundClient, *needles: str) -> dict[str, Any] | None:
    for message in reversed(slack.messages(channel=CHANNEL)["messages"]):
        if all(n in text_of(message) for n in needles):
            return dict(message)
    return None


def button(message: dict[str, Any], action_id: str) -> str:
    for block in message["blocks"]:
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                return str(element["value"])
    raise AssertionError(f"no {action_id} button")


def ready_as(served: Served, ok: bool, timeout: float = 60) -> dict[str, Any]:
    def answered() -> dict[str, Any] | None:
        response = served.get("/readyz")
        body: dict[str, Any] = response.json()
        assert response.status_code == (200 if body["ready"] else 503), body
        return body if body["ready"] == ok else None

    found: dict[str, Any] = wait_for(answered, timeout=timeout, interval=0.5)
    return found


@pytest.fixture
def playground() -> Iterator[PlaygroundServer]:
    server = PlaygroundServer().start()
    yield server
    server.stop()


@pytest.fixture
def proxy(lab: Lab, tmp_path: Path) -> Iterator[FaultProxy]:
    through = FaultProxy(lab.url, tmp_path / "proxied-kubeconfig")
    yield through
    through.close()


def test_serve_is_ready_counts_an_incident_and_logs_ids_but_no_secret(
    lab: Lab, kube: KubeClient, playground: PlaygroundServer, proxy: FaultProxy, tmp_path: Path
) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "hotel-api-key", "namespace": "hotel"},
            "type": "Opaque",
            "data": {"key": base64.b64encode(SECRET_VALUE.encode()).decode()},
        }
    )
    env = serve_env(proxy.kubeconfig, playground, tmp_path)
    served = Served(["--mode", "http", "--port", "0", "--planner", "offline"], env)
    try:
        slack = PlaygroundClient(playground.url)
        slack.configure(request_url=served.bot)

        alive = served.get("/healthz")
        assert alive.status_code == 200 and alive.json() == {"alive": True}
        body = ready_as(served, ok=True)
        assert list(body["checks"]) == ["database", "policies", "cluster", "slack"]
        assert all(check["ok"] for check in body["checks"].values()), body

        # A whole incident: investigate, approve, verified; then undo it, approved too.
        inject(lab, SCENARIO)
        slack.command("U0ALICE", "/stratus", "investigate hotel")
        waiting = wait_for(lambda: card(slack, "stratus.approve", "recommendation"), timeout=90)
        pid = button(waiting, "stratus.approve")
        slack.click("U0ALICE", "stratus.approve", value=pid)
        wait_for(lambda: card(slack, f"`{pid}`", "stratus.undo"), timeout=120)
        slack.click("U0ALICE", "stratus.undo", value=pid)
        undo = wait_for(lambda: card(slack, "as before Stratus", "stratus.approve"), timeout=60)
        slack.click("U0BOB", "stratus.approve", value=button(undo, "stratus.approve"))
        wait_for(lambda: card(slack, f"`{pid}`", "Undone"), timeout=90)

        # An Alertmanager notification naming no namespace: taken in and refused.
        alerts_url = served.bot.rsplit("/slack/events", 1)[0] + "/alerts/alertmanager"
        refused = requests.post(
            alerts_url,
            json=payload(alert(namespace=None)),
            headers={"Authorization": f"Bearer {ALERTS_TOKEN}"},
            timeout=30,
        )
        assert refused.status_code in (200, 422), refused.text

        def settled() -> dict[Any, float] | None:
            found = figures(served.get("/metrics").text)
            done = total(found, "stratus_executions_total", kind="undo", outcome="applied")
            return found if done == 1 else None

        found = wait_for(settled, timeout=60, interval=0.5)
        assert total(found, "stratus_incidents") == 1
        assert total(found, "stratus_proposals", decision="ask", provenance="rule") == 2
        assert total(found, "stratus_proposals", state="undone") == 1
        assert total(found, "stratus_proposals", state="executed") == 1
        assert total(found, "stratus_approval_latency_seconds_count", answer="approve") == 2
        assert total(found, "stratus_approval_latency_seconds_bucket", le="+Inf") == 2
        assert total(found, "stratus_executions_total", kind="write", outcome="applied") == 1
        assert total(found, "stratus_undos_total", trigger="request") == 1
        assert total(found, "stratus_undos_total", trigger="tnr") == 0
        assert total(found, "stratus_alert_notifications_total", outcome="refused") == 1
        assert total(found, "stratus_model_calls_total") == 0  # the offline planner
        assert total(found, "stratus_ready") == 1

        # Readiness fails, naming the check, and comes back: a broken policy file …
        broken = Path(env["STRATUS_POLICY_DIR"]) / "zz-broken.yaml"
        broken.write_text("apiVersion: stratus/v1\nkind: ApprovalPolicy\nrules: [\n")
        body = ready_as(served, ok=False)
        assert [n for n, c in body["checks"].items() if not c["ok"]] == ["policies"], body
        assert "zz-broken.yaml" in body["checks"]["policies"]["detail"]
        broken.unlink()
        ready_as(served, ok=True)

        # … the database held by another process …
        holder = sqlite3.connect(env["STRATUS_DB"], isolation_level=None)
        try:
            holder.execute("BEGIN EXCLUSIVE")
            body = ready_as(served, ok=False)
            assert [n for n, c in body["checks"].items() if not c["ok"]] == ["database"], body
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        ready_as(served, ok=True)

        # … the cluster answering nothing but 503s.
        proxy.fail("*", ".*")
        body = ready_as(served, ok=False)
        assert [n for n, c in body["checks"].items() if not c["ok"]] == ["cluster"], body
        assert "503" in body["checks"]["cluster"]["detail"]
        found = figures(served.get("/metrics").text)
        assert total(found, "stratus_kubernetes_api_errors_total", code="503") >= 1
        assert total(found, "stratus_readiness_check", check="cluster") == 0
        assert total(found, "stratus_ready") == 0
        proxy.clear()
        ready_as(served, ok=True)
    finally:
        code = served.stop()

    assert code == 0, "\n".join(served.lines())
    # Every log line is one JSON object; the incident's and the proposals' lines carry ids.
    logged = [json.loads(line) for line in served.err if line.strip()]
    assert logged and all({"time", "level", "logger", "message"} <= set(e) for e in logged)
    assert any(e.get("incident_id") and e.get("proposal_id") == pid for e in logged), logged
    assert any(e.get("incident_id") and "proposal_id" not in e for e in logged)
    # No secret it was given, nor the cluster's Secret, in anything it wrote.
    everything = "\n".join(served.lines())
    given = [
        playground.bot_token,
        playground.app_token,
        playground.signing_secret,
        ALERTS_TOKEN,
        AUDIT_KEY,
        MODEL_KEY,
        SECRET_VALUE,
        base64.b64encode(SECRET_VALUE.encode()).decode(),
    ]
    assert [s for s in given if s in everything] == []


def test_socket_mode_serves_health_and_names_slack_when_it_is_gone(
    lab: Lab, playground: PlaygroundServer, tmp_path: Path
) -> None:
    env = serve_env(lab.kubeconfig, playground, tmp_path)
    env["STRATUS_LOG_FORMAT"] = "text"
    served = Served(["--mode", "socket", "--planner", "offline"], env)
    try:
        assert served.get("/healthz").status_code == 200
        body = ready_as(served, ok=True)
        assert body["checks"]["slack"] == {"ok": True, "detail": ""}
        assert "stratus_incidents" in served.get("/metrics").text
        playground.stop()  # Slack goes away: the Socket Mode connection drops
        body = ready_as(served, ok=False)
        assert not body["checks"]["slack"]["ok"], body
        assert body["checks"]["database"]["ok"] and body["checks"]["cluster"]["ok"]
        assert served.get("/healthz").status_code == 200  # alive: not a restart's business
    finally:
        served.stop()
    everything = "\n".join(served.lines())
    assert playground.app_token not in everything and playground.bot_token not in everything


def test_a_taken_health_port_or_an_unknown_log_format_is_one_line(
    env: dict[str, str], playground: PlaygroundServer
) -> None:
    """Bad settings stop ``stratus serve`` with one line naming what to change, before the
    bot talks to Slack; nothing ends in a traceback."""
    slack = {
        "SLACK_BOT_TOKEN": playground.bot_token,
        "SLACK_SIGNING_SECRET": playground.signing_secret,
        "STRATUS_SLACK_API_URL": playground.api_url,
    }
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = stratus(
            "serve",
            "--mode",
            "http",
            "--port",
            "0",
            env={**env, **slack, "STRATUS_HEALTH_PORT": port},
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and f"127.0.0.1:{port}" in errors[0], done.stderr
    assert "hint: set STRATUS_HEALTH_PORT" in done.stderr
    assert PlaygroundClient(playground.url).calls("auth.test")["calls"] == []

    done = stratus("serve", "--mode", "http", env={**env, **slack, "STRATUS_LOG_FORMAT": "yaml"})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "STRATUS_LOG_FORMAT" in errors[0], done.stderr
    assert "json or text" in errors[0]
