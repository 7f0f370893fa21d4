"""``stratus serve`` as a pod runs it: a fresh process in HTTP mode against the playground and
a lab (through a kubeconfig), its printed lines collected, stopped by a signal."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from cli.demo_commands import DEMO_POLICY
from lab.slack.client import PlaygroundClient
from lab.slack.server import PlaygroundServer
from store.db import Store
from store.records import ExecutionLog
from tests.bot.conftest import inject
from tests.bot.test_e2e import CHANNEL, SCENARIO
from tests.conftest import Lab
from tests.faultproxy import FaultProxy, Rule
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from undo.entries import UndoEntries

REPO = Path(__file__).resolve().parents[2]
RUNNING = "stratus bot running "
PUT = r"/apis/apps/v1/namespaces/hotel/deployments/recommendation$"


def serve_env(
    playground: PlaygroundServer, kubeconfig: Path, directory: Path, **extra: str
) -> dict[str, str]:
    """The environment of a bot on ``directory``'s database and the demo's policy."""
    policy = directory / "policy"
    policy.mkdir(exist_ok=True)
    (policy / "demo.yaml").write_text(DEMO_POLICY)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SLACK_APP_TOKEN", "OPENAI_API_KEY", "STRATUS_WRITE_NAMESPACES")
    }
    env.update(
        PYTHONUNBUFFERED="1",
        PYTHONPATH=str(REPO),
        SLACK_BOT_TOKEN=playground.bot_token,
        SLACK_SIGNING_SECRET=playground.signing_secret,
        STRATUS_SLACK_API_URL=playground.api_url,
        KUBECONFIG=str(kubeconfig),
        STRATUS_DB=str(directory / "stratus.db"),
        STRATUS_POLICY_DIR=str(policy),
        STRATUS_ACTOR="serve-test",
        STRATUS_HEALTH_PORT="0",  # several bots side by side: each picks a free port
    )
    env.update(extra)
    return env


class ServeProcess:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli", "serve", "--mode", "http", "--port", "0"],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.url = ""

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for_line(self, prefix: str, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        for line in list(self.lines):
            if prefix in line:
                return line
        while True:
            try:
                line = self._queue.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                line = None
            if line is None:
                raise AssertionError(f"never printed {prefix!r}:\n" + self.output)
            if prefix in line:
                return line

    def running(self, timeout: float = 120.0) -> str:
        self.url = self.wait_for_line(RUNNING, timeout).split()[-1]
        return self.url

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def signal(self, sig: signal.Signals = signal.SIGTERM) -> float:
        self.process.send_signal(sig)
        return time.monotonic()

    def wait(self, timeout: float) -> int:
        """The exit code; killed (and -9) when it did not exit in time."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = -9
        self._reader.join(timeout=10)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def wait_until(check: object, timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()  # type: ignore[operator]
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


def approve_first_card(slack: PlaygroundClient) -> str:
    def card() -> str:
        for message in slack.messages(channel=CHANNEL)["messages"]:
            for block in message.get("blocks", []):
                for element in block.get("elements", []):
                    if element.get("action_id") == "stratus.approve":
                        return str(element["value"])
        return ""

    pid = str(wait_until(card, 120, "a proposal card"))
    slack.click("U0ALICE", "stratus.approve", value=pid)
    return pid


def write_in_flight(
    lab: Lab, proxy: FaultProxy, playground: PlaygroundServer, env: dict[str, str], hold: float
) -> tuple[ServeProcess, PlaygroundClient, str, Rule]:
    inject(lab, SCENARIO)
    held = proxy.delay("PUT", PUT, hold, dry_run=False, times=1)
    bot = ServeProcess(env)
    url = bot.running()
    slack = PlaygroundClient(playground.url)
    slack.configure(request_url=url)
    slack.command("U0ALICE", "/stratus", "investigate hotel", channel=CHANNEL)
    pid = approve_first_card(slack)
    wait_until(lambda: held.hits == 1 and proxy.in_flight >= 1, 60, "the approved PUT in flight")
    return bot, slack, pid, held


def replicas(lab: Lab) -> int:
    kube = KubeClient(kubeconfig=str(lab.kubeconfig))
    try:
        return int(kube.get(ObjectRef("Deployment", "recommendation", "hotel"))["spec"]["replicas"])
    finally:
        kube.close()


def every_applied_write_has_its_undo_entry(db: Path, pid: str) -> None:
    store = Store(db)
    try:
        executions = ExecutionLog(store).by_proposal(pid)
        assert [e.state for e in executions] == ["applied"], executions
        entries = UndoEntries(store).history()
        assert [e.execution.proposal_id for e in entries] == [pid]
        assert ExecutionLog(store).pending() == []
        # No incident was opened after the signal: the late command was never taken.
        namespaces = [r["namespace"] for r in store.query("SELECT namespace FROM incidents")]
        assert "shop" not in namespaces
    finally:
        store.close()
