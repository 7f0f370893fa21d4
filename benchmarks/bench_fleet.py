"""The fleet under load through the bot (issue 19 §4): three labs at once (three API servers,
each a cluster of the fleet), the bot serving all three as ``stratus serve --context a
--context b --context c`` in a process of its own (HTTP mode), the Slack playground sending
``/stratus investigate <namespace> --cluster <c>`` for 50 incidents at once across the
clusters, and 10 commands for one namespace of one cluster. The playground measures each
acknowledgement from sending the signed request to reading the answer.

Goals: every acknowledgement under Slack's 3 s, p99 under 100 ms; no lost update (every
incident reaches a final state with complete events, no duplicate incident or proposal, every
write has its undo entry, the audit chain verifies); locks respected (no lease left behind,
each cluster holds exactly its own fix). The checks are ``tests/fleet/load.py``'s, which
``tests/fleet/test_fleet_load.py`` runs lighter with the bot in the test's process.

Run: ``PYTHONPATH=$PWD .venv/bin/python -m benchmarks.bench_fleet [--incidents N] [--same N]
[--in-process]``. Prints JSON; figures go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from lab.slack.workspace import PlaygroundConfig
from store.db import Store
from tests.fleet import load
from tests.fleet.conftest import CLUSTERS, FleetLabs, fleet_kubeconfig, started, wired
from tests.proposals.conftest import PolicyBox

REPO = Path(__file__).resolve().parent.parent
RUNNING = "stratus bot running (http mode) "
LAB_READY = "lab ready: "
ALLOW_ALL = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata:
  name: bench-allow
rules:
  - name: allow-everything
    decision: allow
    allow_irreversible: true
"""


def serve(folder: Path, labs: FleetLabs, playground: PlaygroundServer) -> subprocess.Popen[str]:
    """``stratus serve`` on the three labs, as an SRE team would run it for a fleet."""
    policies = folder / "policies"
    policies.mkdir()
    (policies / "allow.yaml").write_text(ALLOW_ALL)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PYTHONUNBUFFERED": "1",
        "KUBECONFIG": str(labs.kubeconfig),
        "STRATUS_DB": str(folder / "load.db"),
        "STRATUS_POLICY_DIR": str(policies),
        "SLACK_BOT_TOKEN": playground.bot_token,
        "SLACK_SIGNING_SECRET": playground.signing_secret,
        "STRATUS_SLACK_API_URL": playground.api_url,
        "STRATUS_SLACK_MODE": "http",
        "STRATUS_BOT_PORT": "0",
        "STRATUS_BOT_FOLLOW_SECONDS": "0.2",
    }
    env.pop("OPENAI_API_KEY", None)  # the offline planner
    contexts = [arg for cluster in CLUSTERS for arg in ("--context", cluster)]
    return subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--planner", "offline", *contexts],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@contextmanager
def lab_processes(folder: Path) -> Iterator[FleetLabs]:
    """Each lab in a process of its own (``stratus lab up --clock instant``), as three
    clusters are: the API servers' work does not share an interpreter with the playground
    that times the acknowledgements."""
    processes = []
    try:
        urls = {}
        for cluster in CLUSTERS:
            kubeconfig = str(folder / f"{cluster}.kubeconfig")
            # The open lab (plain HTTP, no RBAC), as the in-process load test runs: the
            # benchmark measures the fleet's acknowledgements, not the lab's TLS handshakes.
            command = ["lab", "up", "--clock", "instant", "--app", "hotel", "--no-rbac"]
            process = subprocess.Popen(
                [sys.executable, "-m", "cli", *command, "--kubeconfig", kubeconfig],
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            processes.append(process)
            urls[cluster] = first_line(process, LAB_READY).split()[0]
        yield FleetLabs(urls, fleet_kubeconfig(folder / "config", urls))
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=60)


def bot_url(process: subprocess.Popen[str], timeout: float = 120) -> str:
    return first_line(process, RUNNING, timeout).strip()


def first_line(process: subprocess.Popen[str], prefix: str, timeout: float = 120) -> str:
    """What follows ``prefix`` on the first line of the process's output that starts so."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            raise SystemExit(f"never printed {prefix!r}:\n" + "".join(seen)) from None
        seen.append(line)
        if line.startswith(prefix):
            return line[len(prefix) :]


async def in_own_process(folder: Path, labs: FleetLabs, args: Any) -> load.LoadResult:
    playground = PlaygroundServer(
        PlaygroundConfig(
            event_retry_delays=(0.0,),
            rate_limits={"chat.postMessage": 100_000, "chat.update": 100_000},
        )
    ).start()
    process = serve(folder, labs, playground)
    try:
        url = bot_url(process)
        slack = AsyncPlaygroundClient(playground.url)
        await slack.configure(request_url=url)
        store = Store(folder / "load.db")
        try:
            with wired(labs, store, PolicyBox()) as stack:  # to read the outcome only
                chosen = load.pairs(args.incidents)
                load.prepare(labs, chosen, stack)
                return await load.send_and_check(
                    slack, stack, labs, chosen, args.same, args.timeout
                )
        finally:
            store.close()
    finally:
        process.terminate()
        process.wait(timeout=60)
        playground.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--incidents", type=int, default=50)
    parser.add_argument("--same", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument(
        "--in-process", action="store_true", help="the bot in this process (as the test runs it)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        with started(folder) if args.in_process else lab_processes(folder) as labs:
            if args.in_process:
                result = asyncio.run(
                    load.run(
                        labs, folder, incidents=args.incidents, same=args.same, timeout=args.timeout
                    )
                )
            else:
                result = asyncio.run(in_own_process(folder, labs, args))
    figures = result.figures()
    figures["processes"] = (
        "labs, playground and bot in one process"
        if args.in_process
        else "each lab, the bot and the playground in a process of its own"
    )
    figures["goals"] = {
        "every_ack_under_3s": figures["ack_max_ms"] < 3000,
        "ack_p99_under_100ms": figures["ack_p99_ms"] < 100,
        "no_lost_update_and_locks_respected": not result.problems,
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
