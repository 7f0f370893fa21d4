"""A policy change reaches a running bot: a deny rule written into the demo's policy directory
while ``stratus serve`` runs decides the next proposal (and ``/stratus policy`` shows it); a
change that does not load keeps the last good policy and says so."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.demo_process import DemoProcess, text_of, wait_for
from tests.bot.test_demo import SCENARIO, card, messages

pytestmark = pytest.mark.timeout(300)
FREEZE = """\
apiVersion: stratus/v1
kind: ApprovalPolicy
metadata:
  name: freeze
rules:
  - name: hotel-freeze
    description: A change freeze on hotel.
    match:
      namespaces: ["hotel"]
    decision: deny
"""


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    process = DemoProcess(tmp_path / "demo").start()
    yield process
    process.stop()


def policy_reply(demo: DemoProcess) -> str:
    delivery = demo.slack.command("U0ALICE", "/stratus", "policy hotel")
    return str(delivery.get("response") or "") + text_of(delivery)


def test_a_rule_added_while_the_bot_runs_decides_the_next_proposal(demo: DemoProcess) -> None:
    slack = demo.slack
    folder = demo.directory / "policy"
    (folder / "freeze.yaml").write_text(FREEZE)
    time.sleep(1.5)  # the bot looks at the files at most once a second
    assert "hotel-freeze" in policy_reply(demo)

    slack.inject(SCENARIO)
    slack.command("U0ALICE", "/stratus", "investigate hotel")
    denied = wait_for(lambda: card(slack, "hotel-freeze", "recommendation"), timeout=90)
    assert "stratus.approve" not in text_of(denied)
    assert not any("stratus.approve" in text_of(m) for m in messages(slack))

    # A broken change keeps the freeze in force and says so.
    (folder / "freeze.yaml").write_text(FREEZE.replace("decision: deny", "decison: allow"))
    time.sleep(1.5)
    reply = policy_reply(demo)
    assert "hotel-freeze" in reply and "rejected" in reply and "decison" in reply
