"""The other answers on a card, end to end over HTTP with the playground, the bot and the lab:
Always allow (a scoped, expiring grant that lets the next identical proposal through, shown
in App Home with Revoke), the Reject modal (its reason goes to the planner, which proposes the
next candidate), Other options, and stale buttons."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest

from lab.slack.client import AsyncPlaygroundClient
from policies.model import Defaults, Rule
from proposals.model import ProposalState
from tests.bot.conftest import SRE, BotHandle, blocks_text, inject, resend_click, wait_for
from tests.bot.test_e2e import SCENARIO, _card_state, _has, first_card, proposal_id, replicas
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
REMEMBER = Rule(name="ask-may-remember", decision="ask", remember=True, max_grant="2h")
MANY = "hotel-rate-buggy-image"  # the offline planner has more than one candidate for it


async def _incident_over(stratus_bot: BotHandle) -> None:
    async def closed() -> bool:
        recent = await stratus_bot.runtime.call(stratus_bot.runtime.incidents.recent, limit=5)
        return bool(recent) and not any(i.is_open for i in recent)

    await wait_for(closed, timeout=60)


async def _home(slack: AsyncPlaygroundClient, user: str) -> dict[str, Any] | None:
    for view in reversed((await slack.views(user))["views"]):
        if view["kind"] == "home":
            found: dict[str, Any] = view["view"]
            return found
    return None


async def test_always_allow_makes_a_scoped_expiring_grant_that_app_home_can_revoke(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    policy: PolicyBox,
) -> None:
    policy.set(REMEMBER, defaults=SRE)
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    card = await first_card(slack)
    pid = proposal_id(card)
    assert "stratus.always" in blocks_text(card)
    # App Home lists what Alice may approve; Dave (not an approver) sees nothing waiting.
    await slack.open_home("U0ALICE")
    home = await wait_for(lambda: _home(slack, "U0ALICE"))
    assert pid in blocks_text(home)
    await slack.open_home("U0DAVE")
    assert pid not in blocks_text(await wait_for(lambda: _home(slack, "U0DAVE")))

    before = rt.store.clock.now()
    await slack.click("U0ALICE", "stratus.always", value=pid)
    await wait_for(lambda: _card_state(slack, pid, "Executed"), timeout=60)
    grants = await rt.call(rt.grants.active, rt.store.clock.now())
    assert len(grants) == 1
    grant = grants[0]
    assert (grant.action, grant.namespace, grant.created_by) == ("scale", "hotel", "U0ALICE")
    assert "recommendation" in grant.resource
    assert before + timedelta(hours=2) - timedelta(seconds=5) <= grant.expires_at
    assert grant.expires_at <= rt.store.clock.now() + timedelta(hours=2)
    await _incident_over(stratus_bot)

    # The same fault again: the identical proposal is allowed by the grant, no human asked.
    inject(lab, SCENARIO)
    assert replicas(kube, "recommendation") == 0
    await slack.command("U0DAVE", "/stratus", "investigate hotel")

    async def allowed_by_grant() -> bool:
        for proposal in await rt.call(rt.service.recent, limit=20):
            if proposal.id != pid and proposal.state == ProposalState.EXECUTED:
                return proposal.decision.grant == grant.id
        return False

    await wait_for(allowed_by_grant, timeout=60)
    assert replicas(kube, "recommendation") == 1
    await _incident_over(stratus_bot)

    # App Home shows the grant Alice made, with Revoke; revoking it asks again next time.
    await slack.open_home("U0ALICE")

    async def home_with_grant() -> dict[str, Any] | None:
        view = await _home(slack, "U0ALICE")
        return view if view and grant.id in blocks_text(view) else None

    home = await wait_for(home_with_grant)
    assert "stratus.revoke" in blocks_text(home)
    await slack.click("U0ALICE", "stratus.revoke", value=grant.id, view_id=home["id"])

    async def republished() -> bool:  # the Home tab is the answer: no channel for an ephemeral
        view = await _home(slack, "U0ALICE")
        return view is not None and "stratus.revoke" not in blocks_text(view)

    await wait_for(republished)
    assert await rt.call(rt.grants.active, rt.store.clock.now()) == []


async def test_the_reject_modal_sends_the_reason_to_the_planner_which_proposes_the_next(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    inject(lab, MANY)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.reject", value=pid)
    modal = await wait_for(lambda: _open_modal(slack, "U0ALICE"))
    # Too short a reason keeps the modal open with the error.
    short = await slack.submit(modal["id"], {"reason.text": "no"}, user="U0ALICE")
    assert short["open"] and "reason" in short["view"].get("errors", {}), short
    # So does one past the modal's max_length (a forged submission is not held to it).
    long = await slack.submit(modal["id"], {"reason.text": "x" * 600}, user="U0ALICE")
    assert long["open"] and "500" in long["view"]["errors"]["reason"], long
    assert (await rt.call(rt.service.get, pid)).state == ProposalState.AWAITING_APPROVAL
    await slack.submit(modal["id"], {"reason.text": "a rollback is safer than that"})

    async def rejected() -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.REJECTED

    await wait_for(rejected)
    assert "a rollback is safer than that" in (await rt.call(rt.service.get, pid)).reason

    async def next_card() -> str | None:
        for proposal in await rt.call(rt.service.pending):
            if proposal.id != pid:
                return proposal.id
        return None

    second = await wait_for(next_card, timeout=60)
    incident = await rt.call(rt.incidents.get, (await rt.call(rt.service.get, pid)).incident_id)
    assert any("a rollback is safer than that" in reason for _, reason in incident.rejected)
    await wait_for(lambda: _card_with_button(slack, second))


async def test_other_options_makes_a_new_proposal_from_the_chosen_candidate(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    inject(lab, MANY)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    card = await first_card(slack)
    pid = proposal_id(card)
    options = _options(card)
    assert options, "the card offers no other options"
    value, label = options[0]
    await slack.click("U0ALICE", "stratus.other", selected=value)

    async def chosen() -> Any:
        for proposal in await rt.call(rt.service.pending):
            if proposal.id != pid:
                return proposal
        return None

    new = await wait_for(chosen, timeout=60)
    assert (await rt.call(rt.service.get, pid)).state != ProposalState.AWAITING_APPROVAL
    assert "image" in label and new.action == "set-image"  # the chosen candidate, not the first
    await wait_for(lambda: _card_with_button(slack, new.id))


async def test_stale_buttons_duplicate_clicks_and_retries_execute_nothing_twice(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    policy: PolicyBox,
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    click = await slack.click("U0ALICE", "stratus.approve", value=pid)
    # The same click again at once (a double click) and as Slack's retry: dropped.
    assert await resend_click(stratus_bot, click["payload"]) == 200
    assert await resend_click(stratus_bot, click["payload"], **{"X-Slack-Retry-Num": "1"}) == 200
    await wait_for(lambda: _card_state(slack, pid, "Executed"), timeout=60)
    await stratus_bot.settle()
    assert await _executions(stratus_bot, pid) == 1

    # A stale copy of the card (a second screen that did not refresh): Bob clicks Approve on
    # the executed proposal; he is told why and nothing runs again.
    stale = {
        **click["payload"],
        "user": {**click["payload"]["user"], "id": "U0BOB", "username": "bob", "name": "bob"},
        "actions": [{**click["payload"]["actions"][0], "action_ts": f"{time.time():.6f}"}],
    }
    assert await resend_click(stratus_bot, stale) == 200
    await wait_for(lambda: _has(slack, "U0BOB", "already executed"))
    await stratus_bot.settle()
    assert await _executions(stratus_bot, pid) == 1
    await _incident_over(stratus_bot)

    # An expired request: the policy gives humans one second.
    policy.set(Rule(name="quick", decision="ask"), defaults=_quick())
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")

    async def waiting() -> str | None:
        pending = await rt.call(rt.service.pending)
        return pending[0].id if pending else None

    expiring = await wait_for(waiting, timeout=60)
    await asyncio.sleep(1.5)
    await slack.click("U0CAROL", "stratus.approve", value=expiring)
    await wait_for(lambda: _has(slack, "U0CAROL", "expired"))
    assert replicas(kube, "recommendation") == 0


async def _executions(handle: BotHandle, pid: str) -> int:
    rows = await handle.runtime.call(
        handle.runtime.store.query,
        "SELECT COUNT(*) AS n FROM events WHERE subject = ? AND type = 'proposal.state_changed' "
        "AND json_extract(payload, '$.state') = 'executed'",
        [pid],
    )
    return int(rows[0]["n"])


def _quick() -> Defaults:
    return Defaults(approvers=["S0SRE"], approval_timeout="1s")


def _options(card: dict[str, Any]) -> list[tuple[str, str]]:
    for block in card["blocks"]:
        for element in [*block.get("elements", []), block.get("accessory") or {}]:
            if element.get("action_id") == "stratus.other":
                return [(o["value"], o["text"]["text"]) for o in element.get("options", [])]
    return []


async def _open_modal(slack: AsyncPlaygroundClient, user: str) -> dict[str, Any] | None:
    for view in (await slack.views(user))["views"]:
        if view["kind"] == "modal" and view["open"]:
            found: dict[str, Any] = view["view"]
            return found
    return None


async def _card_with_button(slack: AsyncPlaygroundClient, pid: str) -> bool:
    for message in (await slack.messages(channel="C0INCIDENT"))["messages"]:
        if f'"value": "{pid}"' in blocks_text(message) and "stratus.approve" in blocks_text(
            message
        ):
            return True
    return False
