"""The undo of a fix (issue 18 §4), end to end: an alert opens an incident, its fix is approved
and resolves it; then a person undoes the fix from its card. The Undo dialog and the undo's
card say what undoing does ("Set replicas of deployment/recommendation back to 0, as before
Stratus changed it"), the executed undo's card does not claim an Undo of its own, the incident
says in its parent message and its summary that its fix was undone and that it is re-opened,
and when the alert fires again it joins that same incident — one thread — and carries it on."""

from __future__ import annotations

import re
from typing import Any

import pytest

from incidents.model import IncidentState
from lab.slack.client import AsyncPlaygroundClient
from proposals.model import ProposalState
from tests.agents.alert_payloads import alert, payload
from tests.bot.conftest import BotHandle, blocks_text, inject, wait_for
from tests.bot.test_alerts_webhook import (
    AlertBotHandle,
    alert_bot,
    parents,
    send,
    thread_text,
)
from tests.bot.test_e2e import card_with, first_card, proposal_id, replicas
from tests.conftest import Lab
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
__all__ = ["alert_bot"]  # the fixture, used by name
EFFECT = "Set replicas of deployment/recommendation back to 0, as before Stratus changed it"


def button(message: dict[str, Any], action_id: str) -> dict[str, Any] | None:
    for block in message.get("blocks", []):
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                return dict(element)
    return None


async def in_thread(slack: AsyncPlaygroundClient, ts: str) -> list[dict[str, Any]]:
    return list((await slack.messages(channel="C0INCIDENT", thread_ts=ts))["messages"])


async def test_undoing_the_fix_reopens_the_incident_and_the_alert_joins_its_thread(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, alert_bot: AlertBotHandle
) -> None:
    bot = alert_bot.bot
    assert bot is not None
    rt = bot.rt
    inject(lab, "hotel-recommendation-scaled-to-zero")
    firing = alert("ServiceHighErrorRate", service="frontend")
    status, answer = await send(bot.alerts_url, payload(firing))
    assert status == 200 and answer["groups"][0]["opened"], answer
    incident_id = answer["groups"][0]["incident_id"]
    (parent,) = await wait_for(lambda: parents(slack))

    async def card_to_approve() -> dict[str, Any] | None:
        for message in await in_thread(slack, parent["ts"]):
            if button(message, "stratus.approve"):
                return message
        return None

    fix = await wait_for(card_to_approve, timeout=60)
    fix_id = str((button(fix, "stratus.approve") or {})["value"])
    await slack.click("U0ALICE", "stratus.approve", value=fix_id)

    async def resolved() -> bool:
        incident = await rt.call(rt.incidents.get, incident_id)
        return incident.state == IncidentState.RESOLVED

    await wait_for(resolved, timeout=90)
    assert replicas(kube, "recommendation") == 1
    await send(bot.alerts_url, payload({**firing, "status": "resolved"}))

    # The executed fix's Undo button asks with the effect, not the old intent.
    async def undo_button() -> dict[str, Any] | None:
        for message in await in_thread(slack, parent["ts"]):
            found = button(message, "stratus.undo")
            if found:
                return found
        return None

    undo = await wait_for(undo_button, timeout=30)
    assert undo["confirm"]["text"]["text"] == f"`{EFFECT}`", undo["confirm"]
    await slack.click("U0ALICE", "stratus.undo", value=fix_id)

    async def undo_card() -> dict[str, Any] | None:
        for message in await in_thread(slack, parent["ts"]):
            if button(message, "stratus.approve") and EFFECT in blocks_text(message):
                return message
        return None

    card = await wait_for(undo_card, timeout=30)
    assert card["blocks"][0]["text"]["text"] == EFFECT  # the header says what undoing does
    undo_id = str((button(card, "stratus.approve") or {})["value"])
    await slack.click("U0ALICE", "stratus.approve", value=undo_id)

    async def undone() -> bool:
        return (await rt.call(rt.service.get, undo_id)).state == ProposalState.EXECUTED

    await wait_for(undone, timeout=60)
    assert replicas(kube, "recommendation") == 0

    # The fix's own card, now undone, still says when it ran (seen: "*Ran* at —").
    async def fix_card_undone() -> str | None:
        for message in await in_thread(slack, parent["ts"]):
            seen = blocks_text(message)
            if f"`{fix_id}`" in seen and "*Undone* by" in seen:
                return seen
        return None

    fix_card = await wait_for(fix_card_undone, timeout=30)
    assert "*Ran* at " in fix_card and "*Ran* at \u2014" not in fix_card, fix_card
    assert re.search(r"\*Ran\* at \d\d:\d\d:\d\d UTC", fix_card), fix_card

    # The incident says so: re-opened, in its parent message and its summary.
    async def reopened_parent() -> str | None:
        (top,) = await parents(slack)
        seen = blocks_text(top)
        return seen if "Fix undone" in seen else None

    said = await wait_for(reopened_parent, timeout=30)
    assert "U0ALICE" in said and "incident re-opened" in said, said
    incident = await rt.call(rt.incidents.get, incident_id)
    assert incident.state == IncidentState.DETECTING and incident.is_open
    assert incident.fix_undone is not None and incident.fix_undone.reopened
    await slack.command("U0ALICE", "/stratus", f"summary {incident_id}", channel="C0INCIDENT")

    async def summary() -> str | None:
        for message in await in_thread(slack, parent["ts"]):
            seen = blocks_text(message)
            if "Incident summary" in seen and "Fix undone" in seen:
                return seen
        return None

    assert "incident re-opened" in await wait_for(summary, timeout=30)
    # The executed undo's card claims no Undo of its own and says what to do instead.
    done = next(m for m in await in_thread(slack, parent["ts"]) if f"`{undo_id}`" in str(m))
    assert "exact undo available" not in blocks_text(done)
    assert "/stratus investigate hotel" in blocks_text(done)

    # The alert fires again: it joins the same incident, in the same thread, and carries it on.
    again = alert("ServiceHighErrorRate", service="frontend", starts="2026-11-20T10:30:00.000Z")
    status, answer = await send(bot.alerts_url, payload(again))
    assert status == 200 and answer["groups"][0]["incident_id"] == incident_id, answer
    assert not answer["groups"][0]["opened"]

    async def carried_on() -> bool:
        incident = await rt.call(rt.incidents.get, incident_id)
        return incident.state != IncidentState.DETECTING

    await wait_for(carried_on, timeout=60)

    # It looked again and proposes the fix anew, in the same thread, for a person to answer.
    async def fix_again() -> dict[str, Any] | None:
        for message in await in_thread(slack, parent["ts"]):
            found = button(message, "stratus.approve")
            if found and found["value"] not in (fix_id, undo_id):
                return message
        return None

    again_card = await wait_for(fix_again, timeout=60)
    assert "recommendation" in blocks_text(again_card)
    assert len(await parents(slack)) == 1  # one incident, one thread
    seen = await thread_text(slack, parent["ts"])
    assert seen.count("1 alert firing") == 2, seen  # the second firing shown in the same thread


async def test_an_investigation_joins_the_reopened_incident_and_carries_it_on(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    inject(lab, "hotel-recommendation-scaled-to-zero")
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    fix_id = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.approve", value=fix_id)
    (incident,) = await rt.call(rt.incidents.recent, limit=5)

    async def resolved() -> bool:
        found = await rt.call(rt.incidents.get, incident.id)
        return found.state == IncidentState.RESOLVED

    await wait_for(resolved, timeout=90)

    # Alice undoes the fix: the card's Undo, then Approve on the undo's card.
    async def undo_button() -> bool:
        card = await card_with(slack, fix_id)
        return card is not None and button(card, "stratus.undo") is not None

    await wait_for(undo_button, timeout=30)
    await slack.click("U0ALICE", "stratus.undo", value=fix_id)

    async def undo_card() -> dict[str, Any] | None:
        for message in (await slack.messages(channel="C0INCIDENT"))["messages"]:
            if button(message, "stratus.approve") and EFFECT in blocks_text(message):
                return dict(message)
        return None

    undo_id = str((button(await wait_for(undo_card, timeout=30), "stratus.approve") or {})["value"])
    await slack.click("U0ALICE", "stratus.approve", value=undo_id)

    async def reopened() -> bool:
        found = await rt.call(rt.incidents.get, incident.id)
        return found.state == IncidentState.DETECTING and found.fix_undone is not None

    await wait_for(reopened, timeout=60)
    threads_before = {m.get("thread_ts") or m["ts"] for m in await parents(slack)}
    await slack.command("U0DAVE", "/stratus", "investigate hotel")

    async def carried_on() -> bool:
        found = await rt.call(rt.incidents.get, incident.id)
        return found.state == IncidentState.AWAITING_APPROVAL

    await wait_for(carried_on, timeout=60)
    assert {m.get("thread_ts") or m["ts"] for m in await parents(slack)} == threads_before
    assert len(await rt.call(rt.incidents.recent, limit=5)) == 1  # the same incident
