"""``/stratus undo last`` that meets a later change (issue 18 §4), end to end over HTTP: whoever
may undo the write is shown, in a message only they see, what changed since and a **Force undo**
button whose dialog shows the diff — no terminal flag; someone who may not undo it gets no
button; a Force click that was forged (not from the offer, by someone else) or is stale (the
object moved again since the diff was shown) changes nothing; a Force pressed on what was shown
proposes an undo whose card says what it does, and approving it puts the object back."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from lab.slack.client import AsyncPlaygroundClient
from proposals.model import ProposalState
from tests.bot.conftest import BotHandle, blocks_text, inject, resend_click, wait_for
from tests.bot.test_e2e import card_with, first_card, proposal_id, replicas
from tests.bot.test_malformed import CLICK
from tests.conftest import Lab
from tools.k8s import KubeClient
from tools.objects import ObjectRef

pytestmark = pytest.mark.asyncio
SCENARIO = "hotel-recommendation-scaled-to-zero"
FORCE = "stratus.force_undo"


def scale_by_hand(kube: KubeClient, count: int) -> None:
    """Someone changes the object outside Stratus (kubectl scale, say), and waits for the
    rollout, as they would before going on: until then the controller keeps writing the
    Deployment's status, and a Force offered in between is bound to a resourceVersion that
    moves under it (Force then answers "the object changed again", as it should)."""
    ref = ObjectRef("Deployment", "recommendation", "hotel")
    current = kube.get(ref)
    current["spec"]["replicas"] = count
    kube.replace(current)
    deadline = time.monotonic() + 60
    while not rolled_out(kube.get(ref), count):
        assert time.monotonic() < deadline, f"recommendation never rolled out to {count}"
        time.sleep(0.2)


def rolled_out(deployment: dict[str, Any], count: int) -> bool:
    status = deployment.get("status") or {}
    generation = int((deployment.get("metadata") or {}).get("generation") or 0)
    return int(status.get("observedGeneration") or 0) >= generation and all(
        int(status.get(field) or 0) == count
        for field in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
    )


async def whispers(slack: AsyncPlaygroundClient, user: str) -> list[dict[str, Any]]:
    return [e["message"] for e in (await slack.ephemerals(user))["ephemerals"]]


async def force_offer(slack: AsyncPlaygroundClient, user: str, after: int) -> dict[str, Any]:
    """The newest message only ``user`` sees that offers Force, once there are more than
    ``after`` of them."""

    async def offered() -> dict[str, Any] | None:
        found = [m for m in await whispers(slack, user) if FORCE in blocks_text(m)]
        return found[-1] if len(found) > after else None

    found: dict[str, Any] = await wait_for(offered, timeout=30)
    return found


def force_button(message: dict[str, Any]) -> dict[str, Any]:
    for block in message["blocks"]:
        for element in block.get("elements", []):
            if element.get("action_id") == FORCE:
                return dict(element)
    raise AssertionError("no Force button")


def forged(user: str, value: str, *, ephemeral: bool, stamp: str) -> dict[str, Any]:
    payload = copy.deepcopy(CLICK)
    payload["user"]["id"] = user
    payload["container"] = {
        "type": "message",
        "message_ts": "1.1",
        "channel_id": "C0INCIDENT",
        "is_ephemeral": ephemeral,
    }
    if ephemeral:
        payload.pop("message")
    payload["actions"][0].update(action_id=FORCE, value=value, action_ts=stamp)
    return payload


async def test_undo_last_over_a_later_change_offers_force_with_the_diff(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def executed() -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.EXECUTED

    await wait_for(executed, timeout=60)
    assert replicas(kube, "recommendation") == 1
    scale_by_hand(kube, 2)

    # Someone who may not undo the write is told so, and offered nothing.
    dave = await slack.command("U0DAVE", "/stratus", "undo last")
    assert "may not undo" in str(dave), dave
    # Alice (an approver of the write) is shown what changed and a Force button.
    await slack.command("U0ALICE", "/stratus", "undo last")
    offer = await force_offer(slack, "U0ALICE", 0)
    said = blocks_text(offer)
    assert "replicas: 1" in said and "replicas: 2" in said, said
    assert "--force" not in said and "--" not in offer["text"]
    button = force_button(offer)
    dialog = button["confirm"]["text"]["text"]
    assert "replicas: 2" in dialog and "replicas: 1" in dialog, dialog
    assert not any(FORCE in blocks_text(m) for m in await whispers(slack, "U0DAVE"))
    assert replicas(kube, "recommendation") == 2

    # Forged: not from the offer (a channel message), or from someone who may not undo.
    value = str(button["value"])
    from_channel = forged("U0ALICE", value, ephemeral=False, stamp="1")
    assert await resend_click(stratus_bot, from_channel) == 200
    assert (
        await resend_click(stratus_bot, forged("U0DAVE", value, ephemeral=True, stamp="2")) == 200
    )
    await wait_for(
        lambda: _said(slack, "U0ALICE", "Force is offered only in the message"), timeout=15
    )
    await wait_for(lambda: _said(slack, "U0DAVE", "may not force this undo"), timeout=15)
    # Stale: the object moved again after the diff was shown.
    scale_by_hand(kube, 3)
    await slack.click("U0ALICE", FORCE, value=value, ephemeral=True)
    await wait_for(lambda: _said(slack, "U0ALICE", "changed again since the diff"), timeout=15)
    await stratus_bot.settle()
    assert not [p for p in await rt.call(rt.service.recent) if p.undo_entry is not None]
    assert replicas(kube, "recommendation") == 3

    # Asked again, Force on what is shown now: an undo proposal whose card says its effect.
    await slack.command("U0ALICE", "/stratus", "undo last")
    fresh = await force_offer(slack, "U0ALICE", 1)
    assert "replicas: 3" in blocks_text(fresh)
    await slack.click("U0ALICE", FORCE, value=str(force_button(fresh)["value"]), ephemeral=True)

    async def forced_card() -> dict[str, Any] | None:
        return await card_with(slack, "overwriting the change made since")

    card = await wait_for(forced_card, timeout=30)

    async def spent() -> bool:  # the used offer was replaced: only the stale one keeps Force
        offers = [m for m in await whispers(slack, "U0ALICE") if FORCE in blocks_text(m)]
        return len(offers) == 1 and await _said(slack, "U0ALICE", "Undo proposed as")

    await wait_for(spent, timeout=15)
    header = card["blocks"][0]["text"]["text"]
    assert header == (
        "Set replicas of deployment/recommendation back to 0, as before Stratus changed it"
        " — overwriting the change made since"
    ), header
    undo_id = proposal_id(card)
    await slack.click("U0ALICE", "stratus.approve", value=undo_id)

    async def undone() -> bool:
        return (await rt.call(rt.service.get, undo_id)).state == ProposalState.EXECUTED

    await wait_for(undone, timeout=60)
    assert replicas(kube, "recommendation") == 0

    async def executed_card() -> str:
        for message in (await slack.messages(channel="C0INCIDENT"))["messages"]:
            seen = blocks_text(message)
            if f"`{undo_id}`" in seen and "Executed" in seen and "Diff" in seen:
                return seen
        return ""

    done = await wait_for(executed_card, timeout=30)
    # An undo's card has no Undo button: it does not claim one, and says what to do instead.
    assert "exact undo available" not in done and "stratus.undo" not in done
    assert "/stratus investigate hotel" in done


async def _said(slack: AsyncPlaygroundClient, user: str, needle: str) -> bool:
    return any(needle in blocks_text(m) for m in await whispers(slack, user))


async def test_the_undo_button_over_a_later_change_offers_force_too(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def executed() -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.EXECUTED

    await wait_for(executed, timeout=60)
    await stratus_bot.settle()
    scale_by_hand(kube, 2)
    await slack.click("U0ALICE", "stratus.undo", value=pid)
    offer = await force_offer(slack, "U0ALICE", 0)
    assert "replicas: 2" in blocks_text(offer)
    await slack.click("U0ALICE", FORCE, value=str(force_button(offer)["value"]), ephemeral=True)

    async def forced() -> dict[str, Any] | None:
        return await card_with(slack, "overwriting the change made since")

    assert await wait_for(forced, timeout=30)
    assert replicas(kube, "recommendation") == 2  # proposed, not run: the policy asks
