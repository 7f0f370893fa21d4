"""Text that came from the cluster reaches the thread as quoted data, never as Slack markup: a
crash log line, an annotation and an event message written as ``*bold* <!channel>
<http://x|y> _i_`` are shown, but ping nobody, link nowhere and format nothing — on the
findings, the diagnosis and its evidence, the card, the summary and, in the next incident, the
"seen before" history. Inject, investigate, read back what the playground holds."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from bot.text import LOOKALIKE_BACKTICK
from lab.slack.client import AsyncPlaygroundClient
from proposals.model import ProposalState
from tests.bot.conftest import BotHandle, wait_for
from tests.bot.test_e2e import CHANNEL, first_card, messages, proposal_id
from tests.bot.test_e2e_answers import _open_modal
from tests.conftest import Lab
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
HOSTILE = "a`b *bold* <!channel> <http://x|y> _i_ ~s~ `"
MARKS = ("*bold*", "_i_", "~s~")
BLOCK = re.compile(r"```.*?```", re.S)
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def mrkdwn_texts(message: dict[str, Any]) -> list[str]:
    """Every mrkdwn string of a message's blocks."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn" and isinstance(node.get("text"), str):
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(message.get("blocks", []))
    return found


def live(mrkdwn: str) -> str:
    """What Slack would read as markup: the text outside code spans and blocks."""
    return CODE.sub("", mrkdwn)


def assert_inert(message: dict[str, Any]) -> None:
    for said in [*mrkdwn_texts(message), str(message.get("text", ""))]:
        assert "<!channel>" not in said and "<http://x" not in said, said
        # Its backtick shown as itself could close a code span and free what follows (inside a
        # code block only ``` closes, and those are replaced).
        assert "a`b" not in BLOCK.sub("", said), said
        assert not any(mark in live(said) for mark in MARKS), said


def inject_hostile(lab: Lab, kube: KubeClient) -> None:
    lab.control.post(
        "/lab/v1/faults/prompt-injection/inject",
        {
            "namespace": "hotel",
            "params": {
                "deployment": "profile",
                "container": "profile",
                "log_text": HOSTILE,
                "annotation_text": HOSTILE,
                "event_text": HOSTILE,
            },
        },
    )
    # An Event's reason is whatever its author wrote, too; the card's telemetry lists it.
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "profile.hostile-reason", "namespace": "hotel"},
            "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "profile"},
            "type": "Warning",
            "reason": HOSTILE,
            "message": HOSTILE,
            "count": 1,
            "lastTimestamp": "2099-01-01T00:00:00Z",  # the newest, so the card lists it
        }
    )
    lab.settle()


async def thread_of(slack: AsyncPlaygroundClient, parent: dict[str, Any]) -> list[dict[str, Any]]:
    found = await slack.messages(channel=CHANNEL, thread_ts=parent["ts"])
    return list(found["messages"])


@pytest.fixture
def new_incident_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # The rejected attempt escalates; a new investigation within the hour would look again in
    # that same incident (issue 18 §2). This test needs a second incident, whose "seen before"
    # lists the first.
    monkeypatch.setenv("STRATUS_REOPEN_SECONDS", "0")


async def test_a_hostile_log_line_annotation_and_event_reach_the_thread_inert(
    new_incident_each_time: None,
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
) -> None:
    inject_hostile(lab, kube)
    delivery = await slack.command("U0ALICE", "/stratus", "investigate hotel")
    assert delivery["ok"], delivery

    async def diagnosed() -> list[dict[str, Any]] | None:
        for message in await messages(slack):
            if message.get("thread_ts", message["ts"]) == message["ts"]:
                replies = await thread_of(slack, message)
                if any("stratus.approve" in json.dumps(m.get("blocks")) for m in replies):
                    return replies
        return None

    replies = await wait_for(diagnosed, timeout=60)
    for message in replies:
        assert_inert(message)
    # The hostile text is there to read (escaped, quoted), not dropped.
    shown = "\n".join(t for m in replies for t in mrkdwn_texts(m))
    assert "&lt;!channel&gt;" in shown, shown
    assert f"Recent events: `a{LOOKALIKE_BACKTICK}b *bold*" in shown, shown
    # Rejected (with a reason written the same way) and cancelled, it ends; the next incident
    # on hotel shows the rejected attempt as "seen before", still inert.
    rt = stratus_bot.runtime
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.reject", value=pid)
    modal = await wait_for(lambda: _open_modal(slack, "U0ALICE"))
    await slack.submit(modal["id"], {"reason.text": HOSTILE}, user="U0ALICE")

    async def rejected() -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.REJECTED

    await wait_for(rejected, timeout=30)
    await stratus_bot.settle()
    await slack.command("U0ALICE", "/stratus", "cancel")
    await stratus_bot.settle()

    async def second() -> list[dict[str, Any]] | None:
        for message in await messages(slack):
            if message.get("thread_ts", message["ts"]) == message["ts"]:
                replies = await thread_of(slack, message)
                if any("Seen before" in json.dumps(m.get("blocks")) for m in replies):
                    return replies
        return None

    await slack.command("U0ALICE", "/stratus", "investigate hotel")
    replies = await wait_for(second, timeout=60)
    for message in await messages(slack):
        assert_inert(message)
    for message in replies:
        assert_inert(message)
