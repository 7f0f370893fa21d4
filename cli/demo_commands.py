"""``stratus demo``: the lab cluster, the Slack playground and the bot, wired together by one
command, until Ctrl-C.

Three pieces, laid out as they would be deployed: the lab runs as its own process (``stratus
lab up``, real-time clock, the hotel and shop apps), the bot as its own (``stratus serve`` in
HTTP mode with the playground's tokens and signing secret), and the playground here, in this
process, with the page's "inject a fault" menu wired to the lab's control API. The bot finds
the cluster through a kubeconfig and Slack through ``STRATUS_SLACK_API_URL`` — exactly as it
would find a real cluster and a real Slack. Its policy, database and logs live in the demo's
directory (a temporary one unless ``--dir`` names one).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import click

from lab import scenarios
from lab.client import LabClient, LabRequestFailed
from lab.prometheus import unavailable as prometheus_unavailable
from lab.runner import LabNotRunning
from lab.slack.client import PlaygroundClient
from lab.slack.faults import FaultMenu, InjectFailed, ScenarioChoice
from lab.slack.server import PlaygroundServer
from lab.slack.workspace import PlaygroundConfig

APPS = ("hotel", "shop")
START_TIMEOUT = 90.0
STOP_TIMEOUT = 40.0  # the bot waits up to 30 s for background work before it cancels it
LAB_READY = "lab ready: "
BOT_READY = "stratus bot running "

# Ask a human for everything; the playground's @sre group (alice, bob, carol) approves — dave
# is a developer, so a click of his shows the refusal. One approval, requesters may approve.
DEMO_POLICY = """\
# The demo's approval policy (written by `stratus demo`).
apiVersion: stratus/v1
kind: ApprovalPolicy
metadata:
  name: demo
defaults:                   # a floor for every ask rule: no rule lets anyone else approve
  approvers: ["S0SRE"]      # @sre in the playground: alice, bob and carol (not dave)
  min_approvals: 1
  self_approval: true
  approval_timeout: 30m
rules:
  - name: never-touch-system
    description: Stratus never writes to the cluster's own namespaces.
    match:
      namespaces: ["kube-*"]
    decision: deny

  - name: demo-asks-for-everything
    description: >-
      Every write waits for a human in the demo; Always allow lasts an hour, and an attempt
      of several steps may be approved whole with Approve plan.
    decision: ask
    remember: true
    max_grant: 1h
    approve_plan: true
"""


class DemoFailed(click.ClickException):
    """A piece of the demo did not start or stopped on its own."""


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes a child receive SIGTERM when the demo dies, even by SIGKILL
    (Linux ``PR_SET_PDEATHSIG``), so a killed demo leaves no lab or bot behind."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    return preexec


class Child:
    """A ``stratus`` subcommand in its own process: started, waited for until it prints its
    ready line, its remaining output kept in a log file, stopped with SIGINT."""

    def __init__(self, name: str, args: list[str], *, env: dict[str, str], log: Path) -> None:
        self.name = name
        self.log = log
        self._log_file = log.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli", *args],
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            start_new_session=True,  # Ctrl-C reaches the demo, which stops each child in turn
            preexec_fn=_die_with_parent(),  # noqa: PLW1509 - only calls prctl
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name=f"demo-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        stream: IO[bytes] | None = self.process.stdout
        if stream is None:
            return
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            self._log_file.write(raw)
            self._log_file.flush()
            self._lines.put(line)
        self._lines.put(None)

    def wait_for(self, prefix: str, timeout: float) -> str:
        """The first line of its output that starts with ``prefix``."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DemoFailed(
                    f"the {self.name} did not start in {timeout:.0f} s; see {self.log}"
                )
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self.process.wait(timeout=5)
                raise DemoFailed(
                    f"the {self.name} stopped (exit {self.process.returncode}); see {self.log}"
                )
            if line.startswith(prefix):
                return line

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float) -> int | None:
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self._reader.join(timeout=5)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log_file.close()
        return self.process.returncode


def fault_menu(lab_url: str) -> FaultMenu:
    """The bundled scenarios of the demo's apps (not the no-fault ones), injected through the
    lab's control API."""
    offered = tuple(
        ScenarioChoice(s.name, s.app, s.namespace, s.description)
        for s in scenarios.list_scenarios()
        if s.app in APPS and s.root_cause is not None and s.root_cause.category != "none"
    )
    lab = LabClient(lab_url)

    def inject(name: str) -> dict[str, Any]:
        try:
            result: dict[str, Any] = lab.post(f"/lab/v1/scenarios/{name}/inject")
        except (LabRequestFailed, LabNotRunning) as error:
            raise InjectFailed(str(error)) from error
        return {"applied": list(result.get("applied", []))}

    return FaultMenu(scenarios=offered, inject=inject)


@contextmanager
def _interrupts() -> Iterator[threading.Event]:
    """SIGINT and SIGTERM set an event instead of raising in the middle of the wiring."""
    stop = threading.Event()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, frame: object) -> None:
        stop.set()

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


ALERTS_PATH = "/alerts/alertmanager"  # where `stratus serve` takes Alertmanager's webhook
ALERT_CHANNEL = "C0INCIDENT"  # the playground's #incidents


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _bot_env(playground: PlaygroundServer, kubeconfig: Path, directory: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SLACK_APP_TOKEN", "STRATUS_SLACK_MODE", "STRATUS_WRITE_NAMESPACES")
    }
    env.update(
        SLACK_BOT_TOKEN=playground.bot_token,
        SLACK_SIGNING_SECRET=playground.signing_secret,
        STRATUS_SLACK_API_URL=playground.api_url,
        KUBECONFIG=str(kubeconfig),
        STRATUS_DB=str(directory / "stratus.db"),
        STRATUS_POLICY_DIR=str(directory / "policy"),
    )
    # Several demos (and tests) run side by side: the health endpoints take a free port
    # unless one is asked for (the bot's log names it).
    env.setdefault("STRATUS_HEALTH_PORT", "0")
    return env


@click.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    help="The playground's port (default: a free one).",
)
@click.option(
    "--bot-port",
    type=click.IntRange(0, 65535),
    default=0,
    help="The bot's HTTP port (default: a free one).",
)
@click.option(
    "--lab-port",
    type=click.IntRange(0, 65535),
    default=0,
    help="The lab cluster's port (default: a free one).",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the demo keeps its kubeconfig, database, policy and logs (default: a new "
    "temporary directory, removed when the demo stops).",
)
@click.option(
    "--planner",
    type=click.Choice(["auto", "offline", "llm"]),
    default="auto",
    show_default=True,
    help="auto: the LLM planner when OPENAI_API_KEY (etc.) configure a model, else offline.",
)
@click.option(
    "--rbac/--no-rbac",
    default=True,
    show_default=True,
    help="The lab cluster authorizes with RBAC over HTTPS, as kind and minikube do; "
    "--no-rbac serves it open over plain HTTP.",
)
def demo(
    port: int, bot_port: int, lab_port: int, directory: Path | None, planner: str, rbac: bool
) -> None:
    """The lab cluster (hotel and shop), the Slack playground and the bot, wired together;
    prints the playground's URL and runs until Ctrl-C."""
    temporary = directory is None
    folder = Path(tempfile.mkdtemp(prefix="stratus-demo-")) if directory is None else directory
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "policy").mkdir(exist_ok=True)
    (folder / "policy" / "demo.yaml").write_text(DEMO_POLICY)
    kubeconfig = folder / "kubeconfig"
    children: list[Child] = []
    playground: PlaygroundServer | None = None
    failure: DemoFailed | None = None
    # Prometheus scrapes the lab when Debian's packages are installed; otherwise the demo
    # runs on cluster signals alone and says why.
    no_prometheus = prometheus_unavailable()
    # Alertmanager posts to the bot, so the bot's port is chosen before the lab starts; the
    # webhook's token is made up for this run.
    bot_port = bot_port or _free_port()
    alerts_token = secrets.token_urlsafe(24)
    webhook = f"http://127.0.0.1:{bot_port}{ALERTS_PATH}"
    with _interrupts() as stop:
        try:
            lab = Child(
                "lab",
                [
                    "lab",
                    "up",
                    *(a for app in APPS for a in ("--app", app)),
                    "--port",
                    str(lab_port),
                    "--kubeconfig",
                    str(kubeconfig),
                    "--clock",
                    "realtime",
                    *([] if rbac else ["--no-rbac"]),
                    *([] if no_prometheus else ["--prometheus", "--alert-webhook", webhook]),
                ],
                env=dict(os.environ) | {"STRATUS_ALERTS_TOKEN": alerts_token},
                log=folder / "lab.log",
            )
            children.append(lab)
            lab_ready = lab.wait_for(LAB_READY, START_TIMEOUT)
            lab_url = lab_ready.split()[2]
            prometheus = next(
                (f.split("=", 1)[1] for f in lab_ready.split() if f.startswith("prometheus=")),
                f"not started ({no_prometheus})",
            )
            playground = PlaygroundServer(
                PlaygroundConfig(), port=port, menu=fault_menu(lab_url)
            ).start()
            bot = Child(
                "bot",
                ["serve", "--mode", "http", "--port", str(bot_port), "--planner", planner],
                env=_bot_env(playground, kubeconfig, folder)
                | {"STRATUS_ALERTS_TOKEN": alerts_token, "STRATUS_ALERT_CHANNEL": ALERT_CHANNEL}
                | ({} if no_prometheus else {"STRATUS_PROMETHEUS_URL": prometheus}),
                log=folder / "bot.log",
            )
            children.append(bot)
            bot_url = bot.wait_for(BOT_READY, START_TIMEOUT).split()[-1]
            PlaygroundClient(playground.url).configure(request_url=bot_url)
            env_file = write_env_file(folder, kubeconfig, no_prometheus, prometheus)
            alertmanager = next(
                (f.split("=", 1)[1] for f in lab_ready.split() if f.startswith("alertmanager=")),
                "not started",
            )
            _announce(
                playground,
                kubeconfig,
                folder,
                bot_url,
                temporary,
                started=[
                    f"  prometheus: {prometheus}",
                    f"  terminal:   source {shlex.quote(str(env_file))}  (the cluster, database, "
                    "policy and Prometheus of this demo, for stratus and kubectl)",
                    *(
                        []
                        if no_prometheus
                        else [
                            f"  alerts:     {alertmanager} posts to {webhook} "
                            "(thread in #incidents)"
                        ]
                    ),
                ],
            )
            sys.stdout.flush()
            while not stop.wait(0.5):
                ended = next((c for c in children if not c.running), None)
                if ended is not None:
                    raise DemoFailed(
                        f"the {ended.name} stopped on its own (exit "
                        f"{ended.process.returncode}); see {ended.log}"
                    )
        except DemoFailed as error:
            failure = error
        finally:
            click.echo("stratus demo: stopping…", err=True)
            for child in reversed(children):
                child.stop(STOP_TIMEOUT)
            if playground is not None:
                playground.stop()
            if temporary and failure is None:
                shutil.rmtree(folder, ignore_errors=True)
    if failure is not None:
        raise failure
    click.echo("stratus demo stopped")


ENV_FILE = "demo.env"


def write_env_file(
    folder: Path, kubeconfig: Path, prometheus_missing: str | None, prometheus: str
) -> Path:
    """``<dir>/demo.env``: every variable a terminal needs to act on what the bot acts on —
    the cluster, the database, the policy and Prometheus — for ``source``. Without it a
    terminal's command would open another database under no policy."""
    values = {
        "KUBECONFIG": kubeconfig,
        "STRATUS_LAB_KUBECONFIG": kubeconfig,
        "STRATUS_DB": folder / "stratus.db",
        "STRATUS_POLICY_DIR": folder / "policy",
    }
    lines = [
        "# Written by `stratus demo`: `source` this file in a terminal, and stratus, kubectl",
        "# and `stratus lab` act on the demo's cluster, database, policy and Prometheus.",
        *(f"export {name}={shlex.quote(str(value))}" for name, value in values.items()),
    ]
    if prometheus_missing is None:
        lines.append(f"export STRATUS_PROMETHEUS_URL={shlex.quote(prometheus)}")
    else:
        lines.append(
            f"unset STRATUS_PROMETHEUS_URL  # Prometheus did not start: {prometheus_missing}"
        )
    path = folder / ENV_FILE
    path.write_text("\n".join(lines) + "\n")
    return path


def _announce(
    playground: PlaygroundServer,
    kubeconfig: Path,
    folder: Path,
    bot_url: str,
    temporary: bool,
    *,
    started: list[str],
) -> None:
    """Everything the demo started, then how to use it, and "Ctrl-C" last: a person reads the
    bottom line as "ready", so nothing it started may be printed below it."""
    click.echo(f"stratus demo ready: {playground.url}/")
    click.echo(f"  kubeconfig: {kubeconfig}  (export KUBECONFIG={kubeconfig})")
    click.echo(
        f"  database:   {folder / 'stratus.db'}  (export STRATUS_DB={folder / 'stratus.db'})"
    )
    click.echo(f"  bot:        {bot_url}  (log: {folder / 'bot.log'})")
    click.echo(f"  policy:     {folder / 'policy' / 'demo.yaml'}")
    for line in started:
        click.echo(line)
    click.echo(
        "Open the page, pick a scenario under Lab and click 'Inject a fault', then type "
        "/stratus investigate hotel (or shop). Approve as alice, bob or carol (@sre); dave "
        "is not an approver."
    )
    click.echo(
        "Ctrl-C stops everything" + (" and removes the demo's directory." if temporary else ".")
    )
    sys.stdout.flush()  # a script or a test waits for the URL on a pipe
