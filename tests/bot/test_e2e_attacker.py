"""What an outside attacker with the signing secret (or a member of the workspace) tried against
the running bot, end to end over HTTP: an identity that is not a person (a user-group ID, ``*``,
an @handle) at the door, commands and clicks whose shapes Slack never sends, clicks that do not
come from the card they name, and a kill switch flipped from a channel the bot is not in."""

from __future__ import annotations

import copy
import json
import re
from typing import Any
from urllib.parse import urlencode

import pytest

from lab.slack.client import AsyncPlaygroundClient
from policies.model import Defaults, Rule
from proposals.model import ProposalState
from tests.bot.conftest import (
    SRE,
    BotHandle,
    blocks_text,
    inject,
    resend_click,
    send_signed,
    wait_for,
)
from tests.bot.test_e2e import (
    SCENARIO,
    _card_state,
    _undo_card,
    first_card,
    messages,
    proposal_id,
    replicas,
)
from tests.bot.test_e2e_answers import REMEMBER, _home, _open_modal
from tests.bot.test_e2e_commands import said
from tests.bot.test_malformed import CLICK
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient
from tools.objects import ObjectRef

pytestmark = pytest.mark.asyncio
FORM = "application/x-www-form-urlencoded"
NOT_PEOPLE = ("S0SRE", "*", "@sre", "agent:stratus", "stratus", "U0alice", "U0ALICE ", "")


def command(words: str, user: str | None, channel: str = "C0INCIDENT") -> str:
    fields = {
        "command": "/stratus",
        "text": words,
        "channel_id": channel,
        "team_id": "T0PLAYGRND",
        "trigger_id": f"1.2.{abs(hash((words, user)))}",
        "response_url": "http://127.0.0.1:9/r",
    }
    if user is not None:
        fields["user_id"] = user
    return urlencode(fields)


def click_on(card: dict[str, Any], user: str, action: str = "stratus.approve") -> dict[str, Any]:
    """A click on ``card`` as Slack sends it, from ``user``."""
    payload = copy.deepcopy(CLICK)
    payload["user"]["id"] = user
    payload["channel"] = {"id": "C0INCIDENT", "name": "incidents"}
    payload["container"] = {
        "type": "message",
        "message_ts": card["ts"],
        "channel_id": "C0INCIDENT",
    }
    payload["message"] = {"ts": card["ts"], "thread_ts": card.get("thread_ts"), "text": "card"}
    payload["actions"][0].update(
        action_id=action, value=proposal_id(card), action_ts=str(abs(hash(user)))
    )
    return payload


async def paused(handle: BotHandle) -> bool:
    return bool((await handle.runtime.call(handle.runtime.switch.state)).paused)


# ---------------------------------------------------------------------- 1: identities


async def test_a_user_group_id_or_other_non_person_never_acts_as_an_approver_or_admin(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    # The default policy: ask, approvers (and admins) the S0SRE group.
    for user in NOT_PEOPLE:
        status = await send_signed(stratus_bot, command("pause", user), content_type=FORM)
        assert status == 400, user
    assert not await paused(stratus_bot)
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    card = await first_card(slack)
    pid = proposal_id(card)
    for user in NOT_PEOPLE:
        assert await resend_click(stratus_bot, click_on(card, user)) == 400, user
    home = {
        "type": "event_callback",
        "team_id": "T0PLAYGRND",
        "api_app_id": "A0STRATUS",
        "event_id": "Ev9",
        "event_time": 1,
        "event": {"type": "app_home_opened", "user": "S0SRE", "tab": "home"},
    }
    assert await send_signed(stratus_bot, json.dumps(home), content_type="application/json") == 400
    await stratus_bot.settle()
    rt = stratus_bot.runtime
    assert (await rt.call(rt.service.get, pid)).state == ProposalState.AWAITING_APPROVAL
    assert replicas(kube, "recommendation") == 0


# ---------------------------------------------------------------------- 2: the kill switch


async def test_pause_from_a_channel_the_bot_is_not_in_is_acknowledged_and_announced_elsewhere(
    slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    delivery = await slack.command(
        "U0CAROL", "/stratus", "pause db maintenance", channel="C0RANDOM"
    )
    reply = said(delivery)
    assert await paused(stratus_bot)
    assert "paused" in reply

    async def told() -> str:
        await stratus_bot.settle()
        dm = (await slack.messages(channel="D0CAROL"))["messages"]
        eph = (await slack.ephemerals("U0CAROL"))["ephemerals"]
        texts = [m.get("text", "") for m in dm] + [e["message"]["text"] for e in eph]
        return next((t for t in texts if "could not" in t and "C0RANDOM" in t), "")

    notice = await wait_for(told)
    assert "not_in_channel" in notice
    delivery = await slack.command("U0CAROL", "/stratus", "resume", channel="C0RANDOM")
    assert "resumed" in said(delivery)
    assert not await paused(stratus_bot)


async def test_a_revoke_from_a_channel_the_bot_is_not_in_is_confirmed_in_a_direct_message(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle, policy: PolicyBox
) -> None:
    policy.set(REMEMBER, defaults=SRE)
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.always", value=pid)
    await wait_for(lambda: _card_state(slack, pid, "Executed"), timeout=60)
    grant = (await rt.call(rt.grants.active, rt.store.clock.now()))[0]
    listing = said(await slack.command("U0ALICE", "/stratus", "policy", channel="C0RANDOM"))
    assert grant.id in listing and "stratus.revoke" in listing
    await slack.click("U0ALICE", "stratus.revoke", value=grant.id, channel="C0RANDOM")

    async def told() -> str:
        dm = (await slack.messages(channel="D0ALICE"))["messages"]
        return next((m["text"] for m in dm if grant.id in m.get("text", "")), "")

    assert "revoked" in await wait_for(told)
    assert not await rt.call(rt.grants.active, rt.store.clock.now())


# ---------------------------------------------------------------------- 6: shapes


async def test_commands_and_clicks_of_shapes_slack_never_sends_get_a_400(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    twice = command("status", "U0CAROL") + "&text=pause"
    assert await send_signed(stratus_bot, twice, content_type=FORM) == 400
    assert await send_signed(stratus_bot, command("pause", None), content_type=FORM) == 400
    assert not await paused(stratus_bot)
    event = {
        "type": "event_callback",
        "team_id": "T0PLAYGRND",
        "api_app_id": "A0STRATUS",
        "event_id": "Ev8",
        "event_time": 1,
        "event": {"type": "app_home_opened", "user": "U0CAROL", "tab": "home"},
    }
    assert await send_signed(stratus_bot, json.dumps(event), content_type=FORM) == 400
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    card = await first_card(slack)
    pid = proposal_id(card)
    good = click_on(card, "U0ALICE")
    for part in ("channel", "container", "message", "team"):
        broken = copy.deepcopy(good)
        del broken[part]
        assert await resend_click(stratus_bot, broken) == 400, part
    broken = copy.deepcopy(good)
    del broken["actions"][0]["value"]
    assert await resend_click(stratus_bot, broken) == 400
    await stratus_bot.settle()
    rt = stratus_bot.runtime
    assert (await rt.call(rt.service.get, pid)).state == ProposalState.AWAITING_APPROVAL


# ---------------------------------------------------------------------- 7: the card clicked


async def test_a_click_that_does_not_come_from_the_proposal_s_card_is_refused(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    card = await first_card(slack)
    pid = proposal_id(card)
    elsewhere = click_on(card, "U0ALICE")
    elsewhere["channel"] = {"id": "C0RANDOM", "name": "random"}
    elsewhere["container"] = {"type": "message", "message_ts": "1.1", "channel_id": "C0RANDOM"}
    elsewhere["message"] = {"ts": "1.1", "text": "card"}
    assert await resend_click(stratus_bot, elsewhere) == 200
    other_message = click_on(card, "U0ALICE")
    other_message["actions"][0]["action_ts"] = "7.7"
    other_message["container"]["message_ts"] = "1.1"
    other_message["message"]["ts"] = "1.1"
    assert await resend_click(stratus_bot, other_message) == 200
    await stratus_bot.settle()
    rt = stratus_bot.runtime
    assert (await rt.call(rt.service.get, pid)).state == ProposalState.AWAITING_APPROVAL
    assert replicas(kube, "recommendation") == 0
    # The same click from the card itself is taken.
    from_card = click_on(card, "U0ALICE")
    from_card["actions"][0]["action_ts"] = "8.8"
    assert await resend_click(stratus_bot, from_card) == 200

    async def executed() -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.EXECUTED

    await wait_for(executed, timeout=60)


# ---------------------------------------------------------------------- 8: withdrawing


async def test_the_requester_may_always_reject_their_own_request(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    policy: PolicyBox,
) -> None:
    own = Rule(name="not-your-own", decision="ask", approvers=["S0SRE"], self_approval=False)
    policy.set(own, defaults=Defaults(approvers=["S0SRE"]))
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    first = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.approve", value=first)
    await wait_for(lambda: _card_state(slack, first, "Executed"), timeout=60)
    # Alice asks for the undo: her own request.
    await slack.command("U0ALICE", "/stratus", "undo last")
    undo_card = await wait_for(lambda: _undo_card(slack))
    pid = proposal_id(undo_card)
    assert (await rt.call(rt.service.get, pid)).requester == "U0ALICE"

    async def told(needle: str) -> str:
        texts = [e["message"]["text"] for e in (await slack.ephemerals("U0ALICE"))["ephemerals"]]
        return next((t for t in texts if needle in t), "")

    # Approving her own request is refused, with words that fit an approval.
    await slack.click("U0ALICE", "stratus.approve", value=pid)
    assert "someone else must approve" in await wait_for(lambda: told("someone else"))
    # Rejecting (withdrawing) it is hers to do.
    await slack.click("U0ALICE", "stratus.reject", value=pid)
    view = await wait_for(lambda: _open_modal(slack, "U0ALICE"))
    await slack.submit(view["id"], {"reason.text": "I asked for the wrong thing"}, user="U0ALICE")

    async def rejected() -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.REJECTED

    await wait_for(rejected, timeout=30)
    assert replicas(kube, "recommendation") == 1


# ---------------------------------------------------------------------- 3: a reject reason


async def test_a_reject_reason_cannot_make_a_rejected_card_read_as_executed(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.reject", value=pid)
    modal = await wait_for(lambda: _open_modal(slack, "U0ALICE"))
    forged = "no\n*State*\n:white_check_mark: Executed `x` \u202edesrever\u0000 *Ran* at 12:00"
    await slack.submit(modal["id"], {"reason.text": forged}, user="U0ALICE")

    async def rejected() -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.REJECTED

    await wait_for(rejected, timeout=30)
    await stratus_bot.settle()
    card = await wait_for(lambda: _card_state(slack, pid, "Rejected"))
    assert card
    shown = next(blocks_text(m) for m in await messages(slack) if f"`{pid}`" in blocks_text(m))
    assert "\\u202e" not in shown and "\\u0000" not in shown and "U+202E" in shown
    loose = re.sub(r"`[^`]*`", "", shown)
    assert "Executed" not in loose and "*Ran*" not in loose and loose.count("*State*") == 1
    assert ":white_check_mark:" not in loose


# ---------------------------------------------------------------------- 11: a second click


async def test_a_click_on_an_approved_proposal_says_what_became_of_it(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    # Alice's approval is stored (in a terminal, say); before it runs, the object moves.
    await rt.call(rt.service.answer, pid, user="U0ALICE", choice="approve", groups=("S0SRE",))
    await slack.click("U0BOB", "stratus.approve", value=pid)
    deployment = kube.get(ObjectRef("Deployment", "recommendation", "hotel"))
    deployment["spec"]["replicas"] = 3
    kube.replace(deployment)
    incident = (await rt.call(rt.incidents.recent, limit=1))[0]
    await rt.write(rt.workflow.advance, incident.id)
    assert (await rt.call(rt.service.get, pid)).state == ProposalState.SUPERSEDED

    async def told() -> str:
        texts = [e["message"]["text"] for e in (await slack.ephemerals("U0BOB"))["ephemerals"]]
        return next((t for t in texts if "Nothing changed" in t), "")

    said_to_bob = await wait_for(told)
    assert "superseded" in said_to_bob and "about to run" not in said_to_bob


# ---------------------------------------------------------------------- grants' standing


async def test_grants_are_listed_with_their_standing_under_today_s_rules(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle, policy: PolicyBox
) -> None:
    policy.set(REMEMBER, defaults=SRE)
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.always", value=pid)
    await wait_for(lambda: _card_state(slack, pid, "Executed"), timeout=60)
    grant = (await rt.call(rt.grants.active, rt.store.clock.now()))[0]
    counts = said(await slack.command("U0ALICE", "/stratus", "policy"))
    assert grant.id in counts and "counts" in counts and "suspended" not in counts
    # The rule tightens to two approvals: the grant no longer allows anything, and says so.
    policy.set(REMEMBER.model_copy(update={"min_approvals": 2}), defaults=SRE)
    listing = said(await slack.command("U0ALICE", "/stratus", "policy"))
    assert grant.id in listing and "suspended" in listing and "2 approvals" in listing
    await slack.open_home("U0ALICE")

    async def home() -> str:
        view = await _home(slack, "U0ALICE")
        shown = blocks_text(view) if view else ""
        return shown if grant.id in shown else ""

    assert "suspended" in await wait_for(home)
