"""The bot end to end over HTTP: the playground delivers signed slash commands and clicks, the
bot drives the real workflow and proposal service against the lab cluster, and what people see
is read back from the playground's channel."""

from __future__ import annotations

from typing import Any

import pytest

from lab.slack.client import AsyncPlaygroundClient
from proposals.model import ProposalState
from tests.bot.conftest import BotHandle, blocks_text, inject, wait_for
from tests.conftest import Lab
from tools.k8s import KubeClient
from tools.objects import ObjectRef

pytestmark = pytest.mark.asyncio
SCENARIO = "hotel-recommendation-scaled-to-zero"
CHANNEL = "C0INCIDENT"


def replicas(kube: KubeClient, name: str) -> int:
    return int(kube.get(ObjectRef("Deployment", name, "hotel"))["spec"]["replicas"])


async def messages(slack: AsyncPlaygroundClient) -> list[dict[str, Any]]:
    return list((await slack.messages(channel=CHANNEL))["messages"])


async def card_with(slack: AsyncPlaygroundClient, needle: str) -> dict[str, Any] | None:
    for message in await messages(slack):
        seen = blocks_text(message)
        if ("stratus.approve" in seen or "stratus.undo" in seen) and needle in seen:
            return message
    return None


async def first_card(slack: AsyncPlaygroundClient) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        return await card_with(slack, "stratus.approve")

    found: dict[str, Any] = await wait_for(check)
    return found


def proposal_id(card: dict[str, Any]) -> str:
    for block in card["blocks"]:
        for element in block.get("elements", []):
            if element.get("action_id") in ("stratus.approve", "stratus.undo"):
                return str(element["value"])
    raise AssertionError("no proposal button on the card")


async def ephemerals(slack: AsyncPlaygroundClient, user: str) -> list[str]:
    return [e["message"]["text"] for e in (await slack.ephemerals(user))["ephemerals"]]


async def test_investigate_approve_verify_undo_and_summary(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    inject(lab, SCENARIO)
    delivery = await slack.command("U0DAVE", "/stratus", "investigate hotel why is search failing?")
    assert delivery["ok"], delivery
    assert delivery["attempts"][0]["status"] == 200 and delivery["attempts"][0]["ms"] < 3000
    card = await first_card(slack)
    pid = proposal_id(card)
    text = blocks_text(card)
    assert "recommendation" in text and "ask-everything" in text and "Diff" in text
    assert "Telemetry" in text
    # A developer who is not in the SRE group cannot approve.
    await slack.click("U0DAVE", "stratus.approve", value=pid)
    await wait_for(lambda: _has(slack, "U0DAVE", "not an approver"))
    assert stratus_bot.runtime.service.get(pid).state == ProposalState.AWAITING_APPROVAL
    assert replicas(kube, "recommendation") == 0
    # Alice (in S0SRE) approves; it runs, is verified and the card is updated in place.
    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def executed() -> dict[str, Any] | None:
        found = await card_with(slack, pid)
        return (
            found
            if found and "Verification" in blocks_text(found) and ("healthy" in blocks_text(found))
            else None
        )

    done = await wait_for(executed, timeout=60)
    assert "U0ALICE" in blocks_text(done) and "stratus.undo" in blocks_text(done)
    assert replicas(kube, "recommendation") == 1
    await wait_for(lambda: _thread_has(slack, "Incident summary"), timeout=30)
    summary = await _thread_has(slack, "Incident summary")
    assert "Time to detect" in summary and "Root cause" in summary and "U0ALICE" in summary
    # Undo from the card.
    await slack.click("U0ALICE", "stratus.undo", value=pid)
    undo_card = await wait_for(lambda: _undo_card(slack))
    undo_id = proposal_id(undo_card)
    await slack.click("U0ALICE", "stratus.approve", value=undo_id)
    await wait_for(lambda: _card_state(slack, pid, "Undone"), timeout=30)
    assert replicas(kube, "recommendation") == 0
    await wait_for(lambda: _thread_has(slack, "Undone:"))

    # The incident's one summary is edited in place to say its write was undone.
    async def summaries() -> list[str] | None:
        found = [blocks_text(m) for m in await messages(slack) if "Incident summary" in str(m)]
        return found if any(":leftwards_arrow_with_hook: Undone" in f for f in found) else None

    (edited,) = await wait_for(summaries, timeout=30)
    assert "Root cause" in edited


async def _has(slack: AsyncPlaygroundClient, user: str, needle: str) -> bool:
    return any(needle in t for t in await ephemerals(slack, user))


async def _thread_has(slack: AsyncPlaygroundClient, needle: str) -> str:
    for message in await messages(slack):
        if needle in blocks_text(message):
            return blocks_text(message)
    return ""


async def _undo_card(slack: AsyncPlaygroundClient) -> dict[str, Any] | None:
    for message in await messages(slack):
        text = blocks_text(message)
        if "as before Stratus" in text and "stratus.approve" in text:
            return message
    return None


async def _card_state(slack: AsyncPlaygroundClient, pid: str, state: str) -> bool:
    for message in await messages(slack):
        text = blocks_text(message)
        if f"`{pid}`" in text and state in text and "Diff" in text:
            return True
    return False
