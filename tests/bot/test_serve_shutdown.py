"""SIGTERM to a real ``stratus serve`` while an approved write is on its way to the cluster.

The kubelet stops a pod with SIGTERM and kills it after the grace period (30 s by default).
The bot must stop taking Slack's requests at once, let the write in flight finish and record
it (its undo entry included), and exit 0 — within ``STRATUS_SHUTDOWN_SECONDS``. A write still
hanging at that bound is left as the crash-safe write-ahead record it already is: the process
exits 0 in time, and the next start's recovery records the write once it landed.

The bot reaches the lab through the fault proxy (``tests.faultproxy``), which holds the
approved PUT to make "in flight" last as long as the test needs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.slack.server import PlaygroundServer
from tests.bot.serve_process import (
    every_applied_write_has_its_undo_entry,
    replicas,
    serve_env,
    wait_until,
    write_in_flight,
)
from tests.bot.test_e2e import CHANNEL
from tests.conftest import Lab, stratus
from tests.faultproxy import FaultProxy, fault_proxy


@pytest.fixture
def proxy(lab: Lab, tmp_path: Path) -> Iterator[FaultProxy]:
    with fault_proxy(lab.url, tmp_path / "proxied-kubeconfig") as proxy:
        yield proxy


def test_sigterm_lets_the_write_in_flight_finish_and_record_its_undo_then_exits_0(
    lab: Lab, proxy: FaultProxy, playground: PlaygroundServer, tmp_path: Path
) -> None:
    env = serve_env(playground, proxy.kubeconfig, tmp_path, STRATUS_SHUTDOWN_SECONDS="20")
    bot, slack, pid, _held = write_in_flight(lab, proxy, playground, env, hold=4.0)
    try:
        signalled = bot.signal()
        time.sleep(0.5)
        # Acknowledgements stopped: a command sent now is not taken (Slack retries it
        # elsewhere — at the next pod).
        slack.command("U0ALICE", "/stratus", "investigate shop", channel=CHANNEL)
        code = bot.wait(timeout=30)
        took = time.monotonic() - signalled
    finally:
        bot.close()
    assert code == 0, bot.output
    assert took < 20, (took, bot.output)
    assert "Traceback" not in bot.output and "internal error" not in bot.output
    assert replicas(lab) == 1  # the write landed
    every_applied_write_has_its_undo_entry(Path(env["STRATUS_DB"]), pid)
    verified = stratus("audit", "verify", env=env)
    assert verified.returncode == 0, verified.stderr


def test_a_write_hung_past_the_bound_is_left_recoverable_and_the_bot_exits_0_in_time(
    lab: Lab, proxy: FaultProxy, playground: PlaygroundServer, tmp_path: Path
) -> None:
    env = serve_env(playground, proxy.kubeconfig, tmp_path, STRATUS_SHUTDOWN_SECONDS="3")
    bot, _slack, pid, held = write_in_flight(lab, proxy, playground, env, hold=120.0)
    try:
        signalled = bot.signal()
        code = bot.wait(timeout=30)
        took = time.monotonic() - signalled
    finally:
        bot.close()
    assert code == 0, bot.output
    assert took < 3 + 5, (took, bot.output)  # the bound, and the process's own exit
    assert "left to recovery" in bot.output, bot.output
    assert "Traceback" not in bot.output

    # The held write lands after the bot is gone; the next start records it.
    proxy.open(held)
    wait_until(lambda: replicas(lab) == 1, 30, "the held write landed")
    proxy.clear()
    recovered = stratus("undo", "--list", env=env)
    assert recovered.returncode == 0, recovered.stderr
    assert "recovered an interrupted write" in recovered.stderr
    every_applied_write_has_its_undo_entry(Path(env["STRATUS_DB"]), pid)
    verified = stratus("audit", "verify", env=env)
    assert verified.returncode == 0, verified.stderr
