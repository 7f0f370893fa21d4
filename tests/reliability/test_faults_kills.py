"""Issue 19 §5, faults: the bot killed at random points. A real ``stratus serve`` (HTTP mode,
the Slack playground, the demo's ask-for-everything policy) is SIGKILLed at a random moment
after an approval click — before the vote is stored, while the write is on its way (the
proxy holds each real write a little), or after it — and started again (ten times for the
figure, six in the suite). Each restart recovers what the last one left (start-up and periodic
recovery) and carries the open incident on; a proposal whose click died with the bot is
clicked again, as a person would. Afterwards every applied write has its undo entry, the lab
carried out each write exactly once, nothing is pending or stuck, and the audit chain
verifies. The seed of the kill moments is printed (``STRATUS_FAULTS_SEED`` replays it).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.runner import LabServer, write_kubeconfig
from lab.slack.client import PlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.bot.conftest import inject, playground
from tests.bot.serve_process import ServeProcess, serve_env, wait_until
from tests.bot.test_e2e import CHANNEL, SCENARIO
from tests.conftest import Lab
from tests.faultproxy import fault_proxy
from tests.proposals.test_crashes import rows
from tests.reliability.faults_chaos import WRITES, seed_from_env
from tests.reliability.faults_invariants import problems

__all__ = ["playground"]  # the playground fixture, shared with the bot's tests

# The documented figure is for 10 (STRATUS_FAULTS_KILLS=10, about 80 s). A round restarts
# `stratus serve` (about 4 s of the round's 7-10 s: the process starting) and runs an
# investigation to its end, so the suite kills it 3 times (6 took 43-51 s) to stay near 25 s.
KILLS = int(os.environ.get("STRATUS_FAULTS_KILLS", "3"))
HOLD = 0.4  # every real write is held this long at the proxy, so a kill can land during it
LATEST_KILL = 1.5  # seconds after the click


@pytest.fixture
def own_lab(tmp_path: Path) -> Iterator[Lab]:
    """A lab of its own: its audit log holds this test's writes and nothing else."""
    server = LabServer(apps=["hotel"]).start()
    yield Lab(server, write_kubeconfig(tmp_path / "kube" / "config", server.url, "hotel"))
    server.stop()


def awaiting(db: Path) -> list[str]:
    found = rows(db, "SELECT id FROM proposals WHERE state = 'awaiting_approval' ORDER BY id")
    return [str(r["id"]) for r in found]


def open_incidents(db: Path) -> int:
    return len(rows(db, "SELECT id FROM incidents WHERE open = 1"))


def unsettled(db: Path) -> int:
    pending = rows(db, "SELECT id FROM executions WHERE state = 'pending'")
    executing = rows(db, "SELECT id FROM proposals WHERE state IN ('executing', 'approved')")
    return len(pending) + len(executing)


def buttons(slack: PlaygroundClient) -> set[str]:
    """The proposals an Approve button on the channel's cards names."""
    return {
        str(element["value"])
        for message in slack.messages(channel=CHANNEL)["messages"]
        for block in message.get("blocks", [])
        for element in block.get("elements", [])
        if element.get("action_id") == "stratus.approve"
    }


def approvable(db: Path, slack: PlaygroundClient) -> list[str]:
    """Proposals waiting for an answer whose card shows its Approve button."""
    waiting = awaiting(db)
    shown = buttons(slack) if waiting else set()
    return [pid for pid in waiting if pid in shown]


def scene(db: Path, slack: PlaygroundClient, bot: ServeProcess) -> str:
    """What the store, the channel and the bot show, for a wait that timed out."""
    lines = ["incidents:"]
    for r in rows(db, "SELECT id, state, reason, updated_at FROM incidents ORDER BY created_at"):
        lines.append(f"  {r['id']} {r['state']} {r['reason']!r} {r['updated_at']}")
    lines.append("proposals:")
    for r in rows(db, "SELECT id, state, incident_id, intent FROM proposals ORDER BY created_at"):
        lines.append(f"  {r['id']} {r['state']} {r['incident_id']} {r['intent']}")
    lines.append("messages:")
    for m in slack.messages(channel=CHANNEL)["messages"][-12:]:
        lines.append(f"  {m.get('ts')} thread={m.get('thread_ts')} {str(m.get('text'))[:140]}")
    lines.append("bot (last lines):")
    lines += [f"  {line}" for line in bot.lines[-40:]]
    return "\n".join(lines)


def settled(db: Path, slack: PlaygroundClient) -> bool:
    """Nothing open or in flight; a proposal still waiting is clicked (again)."""
    for pid in approvable(db, slack):
        slack.click("U0ALICE", "stratus.approve", value=pid)
    return not awaiting(db) and open_incidents(db) == 0 and unsettled(db) == 0


@pytest.mark.timeout(900)
def test_the_bot_killed_at_random_moments_ten_times_keeps_every_write_undoable(
    own_lab: Lab, playground: PlaygroundServer, tmp_path: Path
) -> None:
    seed = seed_from_env()
    draws = random.Random(seed)
    print(f"\nfaults seed: {seed} (STRATUS_FAULTS_SEED={seed} replays it)")
    lab = own_lab
    slack = PlaygroundClient(playground.url)
    bots: list[ServeProcess] = []
    kills: list[str] = []
    started = time.monotonic()
    with fault_proxy(lab.url, tmp_path / "proxied-kubeconfig") as proxy:
        # Real writes only. (A "*" rule with dry_run=False held every GET too — a GET carries no
        # dryRun — and an investigation took 25-30 s to show its card.)
        for method in WRITES:
            proxy.delay(method, r"^/api", HOLD, dry_run=False)
        env = serve_env(
            playground,
            proxy.kubeconfig,
            tmp_path,
            STRATUS_KUBE_TIMEOUT="2",
            STRATUS_POLL_SECONDS="0.2",
            STRATUS_SETTLE_SECONDS="10",
            STRATUS_RECONCILE_SECONDS="1",
            # Each round is an incident of its own. A kill before the write fails its proposal
            # ("interrupted before the write") and the incident escalates; looking again in
            # that incident (the default, within an hour) keeps its candidate as tried, so
            # the next round would find nothing left to propose and show no card.
            STRATUS_REOPEN_SECONDS="0",
        )
        db = Path(env["STRATUS_DB"])

        def start() -> ServeProcess:
            bot = ServeProcess(env)
            bots.append(bot)
            slack.configure(request_url=bot.running())
            return bot

        try:
            bot = start()
            for number in range(KILLS):
                round_started = time.monotonic()
                inject(lab, SCENARIO)
                slack.command("U0ALICE", "/stratus", "investigate hotel", channel=CHANNEL)
                try:
                    shown = wait_until(lambda: approvable(db, slack), 60, "a card to approve")
                except AssertionError as missing:
                    raise AssertionError(f"{missing}\n{scene(db, slack, bot)}") from None
                pid = str(shown[0])  # type: ignore[index]
                card_at = time.monotonic() - round_started
                slack.click("U0ALICE", "stratus.approve", value=pid)
                moment = draws.uniform(0, LATEST_KILL)
                time.sleep(moment)
                state = rows(db, "SELECT state FROM proposals WHERE id = ?", (pid,))[0]["state"]
                bot.signal(signal.SIGKILL)
                assert bot.wait(timeout=30) == -signal.SIGKILL, bot.output
                bot.close()
                restarting = time.monotonic()
                bot = start()
                restarted = time.monotonic() - restarting
                wait_until(lambda: settled(db, slack), 90, f"round {number + 1} to settle")
                kills.append(
                    f"{moment:.2f} s after the click ({state}); card after {card_at:.1f} s, "
                    f"restart {restarted:.1f} s, round {time.monotonic() - round_started:.1f} s"
                )
                print(f"faults: kill {number + 1}: {kills[-1]}", flush=True)
            bot.signal(signal.SIGTERM)
            assert bot.wait(timeout=30) == 0, bot.output
        finally:
            for each in bots:
                each.close()
        recovered = sum("recovered an interrupted write" in b.output for b in bots)
        writes_held = len(proxy.seen(outcome="delayed"))
    elapsed = time.monotonic() - started
    found, figures = problems(db, lab.control)
    print(f"faults: bot killed {len(kills)} times in {elapsed:.1f} s (seed {seed}):")
    for line in kills:
        print(f"faults:   killed {line}")
    print(f"faults: kills: real writes sent through the proxy: {writes_held}")
    print(f"faults: kills: restarts that recovered an interrupted write: {recovered}")
    for name, value in figures.items():
        print(f"faults: kills: {name}: {value}")
    print(f"faults: kills: duplicates found: {sum('the lab carried out' in p for p in found)}")
    assert not found, f"seed {seed}:\n" + "\n".join(found)
    # A kill before the write (the vote not yet stored, or executing but not yet sent) writes
    # nothing: recovery fails the proposal "interrupted before the write" and the incident
    # escalates. Every round ends one way or the other.
    interrupted = rows(
        db,
        "SELECT id FROM proposals WHERE state = 'failed' AND body LIKE ?",
        ("%interrupted before the write%",),
    )
    print(f"faults: kills: proposals interrupted before their write: {len(interrupted)}")
    assert figures["writes applied"] + len(interrupted) == KILLS, (figures, len(interrupted))
    assert all("Traceback" not in b.output for b in bots), "\n".join(b.output for b in bots)
