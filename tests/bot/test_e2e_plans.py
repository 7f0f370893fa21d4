"""Issue 18 §1, in Slack: ``shop-payment-bad-config`` is fixed in two steps, and people were
asked twice, each card alone, with nothing saying it was one of two. Now the thread shows the
whole plan, each card says "Step k of n", and where the rule says ``approve_plan: true`` the
first card offers **Approve plan**: one click by an approver runs both steps, the second card
saying who approved it with the plan. A click by someone who may not approve, the same click
again, a resent click, a forged click and a stale one change nothing; a click after a
restart works on the card posted before it. Over real HTTP: the
playground delivers signed clicks to the bot, which drives the lab."""

from __future__ import annotations

import time
from typing import Any

import pytest

from lab.slack.client import AsyncPlaygroundClient
from policies.model import Match, Rule
from proposals.model import ProposalState
from tests.bot.conftest import SRE, BotHandle, blocks_text, inject, resend_click, wait_for
from tests.bot.test_e2e import _has, messages
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient
from tools.objects import ObjectRef

pytestmark = pytest.mark.asyncio
SCENARIO = "shop-payment-bad-config"
PLAN_RULE = Rule(
    name="shop-as-a-plan", decision="ask", approve_plan=True, match=Match(namespaces=["shop"])
)
P = ProposalState


def provider(kube: KubeClient) -> str:
    config = kube.get(ObjectRef("ConfigMap", "shop-config", "shop"))
    return str(config["data"]["payment-provider"])


def button_value(message: dict[str, Any], action_id: str) -> str | None:
    for block in message.get("blocks", []):
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                return str(element["value"])
    return None


async def card_of_step(slack: AsyncPlaygroundClient, step: str) -> dict[str, Any] | None:
    for message in await messages(slack):
        seen = blocks_text(message)
        if f"Step {step}" in seen and "Diff" in seen:
            return message
    return None


async def thread_with(slack: AsyncPlaygroundClient, needle: str) -> str:
    for message in await messages(slack):
        if needle in blocks_text(message):
            return blocks_text(message)
    return ""


async def test_approve_plan_runs_both_steps_once_and_refuses_what_it_must(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    policy: PolicyBox,
) -> None:
    policy.set(PLAN_RULE, defaults=SRE)
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate shop")

    async def first_with_plan() -> dict[str, Any] | None:
        card = await card_of_step(slack, "1 of 2")
        return card if card and button_value(card, "stratus.plan") else None

    first = await wait_for(first_with_plan, timeout=60)
    pid = button_value(first, "stratus.plan")
    assert pid is not None
    # The whole plan is in the thread, once, before anything is approved.
    plan = await wait_for(lambda: thread_with(slack, "Plan (2 steps)"))
    assert "shop-config" in plan and "payment" in plan and "1." in plan and "2." in plan
    assert "Approve the whole plan?" in blocks_text(first)  # the confirm dialog

    # Dave is not an SRE: refused, nothing changes.
    refused = await slack.click("U0DAVE", "stratus.plan", value=pid)
    await wait_for(lambda: _has(slack, "U0DAVE", "not an approver"))
    assert (await rt.call(rt.service.get, pid)).votes == []
    assert provider(kube) != "mock"
    # A forged Approve plan in Carol's name, naming the card's proposal from another message
    # (the incident's parent): refused as not from its card, nothing changes.
    parent = (await messages(slack))[0]
    assert parent["ts"] != first["ts"]
    forged = {
        **refused["payload"],
        "user": {**refused["payload"]["user"], "id": "U0CAROL", "username": "carol"},
        "container": {**refused["payload"]["container"], "message_ts": parent["ts"]},
        "message": parent,
        "actions": [{**refused["payload"]["actions"][0], "action_ts": f"{time.time():.6f}"}],
    }
    assert await resend_click(stratus_bot, forged) == 200
    await wait_for(lambda: _has(slack, "U0CAROL", "does not come from the proposal's card"))
    assert (await rt.call(rt.service.get, pid)).votes == []

    # The bot restarts; the card posted before it still works. Alice approves the plan,
    # clicking twice and Slack resending it: one vote, both steps run.
    await stratus_bot.stop()
    await stratus_bot.start()
    rt = stratus_bot.runtime
    click = await slack.click("U0ALICE", "stratus.plan", value=pid)
    assert await resend_click(stratus_bot, click["payload"]) == 200
    assert await resend_click(stratus_bot, click["payload"], **{"X-Slack-Retry-Num": "1"}) == 200

    async def second_done() -> dict[str, Any] | None:
        card = await card_of_step(slack, "2 of 2")
        return card if card and "Approved with the plan by" in blocks_text(card) else None

    second = await wait_for(second_done, timeout=90)
    assert "U0ALICE" in blocks_text(second)
    assert button_value(second, "stratus.approve") is None  # nobody was asked again
    assert provider(kube) == "mock"
    await stratus_bot.settle()
    first_now = await rt.call(rt.service.get, pid)
    assert first_now.state == P.EXECUTED
    assert [v.choice for v in first_now.votes] == ["plan"]
    summary = await wait_for(lambda: thread_with(slack, "Incident summary"), timeout=60)
    assert "approved with the plan by" in summary

    # Bob, on a stale copy of the first card, clicks Approve plan: told why, nothing runs.
    stale = {
        **click["payload"],
        "user": {**click["payload"]["user"], "id": "U0BOB", "username": "bob", "name": "bob"},
        "actions": [{**click["payload"]["actions"][0], "action_ts": f"{time.time():.6f}"}],
    }
    assert await resend_click(stratus_bot, stale) == 200
    await wait_for(lambda: _has(slack, "U0BOB", "already executed"))

    rt = stratus_bot.runtime
    executed = await rt.call(
        rt.store.query,
        "SELECT COUNT(*) AS n FROM events WHERE type = 'proposal.state_changed' "
        "AND json_extract(payload, '$.state') = 'executed'",
    )
    assert int(executed[0]["n"]) == 2  # each step once
