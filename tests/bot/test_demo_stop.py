"""``stratus demo`` as someone at a terminal reads it: everything it started (the playground,
the cluster, the bot, Prometheus, the terminal's env file, Alertmanager) is printed before
"Ctrl-C stops everything", and Ctrl-C while a browser tab is still long-polling the page
stops it without asyncio's "Task was destroyed but it is pending!" on the way out."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.demo_process import DemoProcess, wait_for

pytestmark = pytest.mark.timeout(300)
CTRL_C = "Ctrl-C stops everything"
NOISE = ("Task was destroyed", "Unclosed", "Traceback", "Event loop is closed", "Exception ignored")


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    process = DemoProcess(tmp_path / "demo").start()
    yield process
    process.stop()


def _long_poll(url: str) -> None:
    """What an open playground tab does: wait up to 20 s for the workspace to change."""
    with urllib.request.urlopen(f"{url}/playground/v1/state?user=U0ALICE&after=-1&wait=0") as r:
        version = json.loads(r.read())["version"]
    for user in ("U0ALICE", "U0BOB"):
        query = f"user={user}&after={version}&wait=20"
        threading.Thread(
            target=lambda q=query: _quietly(f"{url}/playground/v1/state?{q}"), daemon=True
        ).start()


def _quietly(url: str) -> None:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            response.read()
    except OSError:
        pass  # the demo stopped under it: what a tab sees too


def test_the_demo_says_all_it_started_before_ctrl_c_and_stops_quietly(
    demo: DemoProcess,
) -> None:
    wait_for(lambda: any(line.startswith(CTRL_C) for line in demo.lines), timeout=60)
    time.sleep(1.0)  # anything printed late would be here by now
    last = max(i for i, line in enumerate(demo.lines) if line.startswith(CTRL_C))
    assert last == len(demo.lines) - 1, "\n".join(demo.lines)
    said = "\n".join(demo.lines)
    for started in ("kubeconfig:", "database:", "bot:", "prometheus:", "terminal:"):
        assert started in said, said
    _long_poll(demo.url)
    time.sleep(1.0)
    assert demo.stop() == 0, "\n".join(demo.lines)
    tail = "\n".join(demo.lines[last:])
    assert not any(noise in tail for noise in NOISE), tail
    assert demo.lines[-1] == "stratus demo stopped", tail
