"""An incident whose Slack thread is gone — the demo restarted on the same database with an
empty playground, or the thread's parent message deleted — carries on in a new thread that
says which incident it continues; its cards are posted again, not edited into nothing, and
every slash command about it gets a reply. ``/stratus status`` says who asked for a proposal
from its requester, not from whether it has a card."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from policies.model import Rule
from proposals.model import Proposal, ProposalState
from tests.bot.conftest import ASK, SRE, BotHandle, blocks_text, inject, wait_for
from tests.bot.test_e2e import CHANNEL, SCENARIO, first_card, messages, proposal_id, replicas
from tests.bot.test_e2e_commands import said
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
GONE_WORDS = "earlier thread is gone"
DENY = Rule(name="deny-everything", decision="deny")


async def _waiting_incident(slack: AsyncPlaygroundClient, bot: BotHandle) -> tuple[str, str]:
    """An investigation of hotel waiting on its first card: (incident id, proposal id)."""
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    proposal: Proposal = await bot.runtime.call(bot.runtime.service.get, pid)
    assert proposal.incident_id is not None
    return proposal.incident_id, pid


async def _new_parent(slack: AsyncPlaygroundClient, incident_id: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        for message in await messages(slack):
            shown = blocks_text(message)
            top = message.get("thread_ts") in (None, message["ts"])
            if top and incident_id in shown and GONE_WORDS in shown:
                return message
        return None

    found: dict[str, Any] = await wait_for(check, timeout=30)
    return found


async def _in_thread(slack: AsyncPlaygroundClient, thread_ts: str, needle: str) -> bool:
    replies = (await slack.messages(channel=CHANNEL, thread_ts=thread_ts))["messages"]
    return any(needle in blocks_text(m) for m in replies if m["ts"] != thread_ts)


async def test_a_restart_with_an_empty_slack_carries_the_incident_on_in_a_new_thread(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    inject(lab, SCENARIO)
    incident_id, pid = await _waiting_incident(slack, stratus_bot)
    old = await stratus_bot.runtime.call(stratus_bot.runtime.links.thread, incident_id)
    assert old is not None
    # The demo restarts on the same database; the playground starts empty.
    await stratus_bot.stop()
    await slack.reset()
    await stratus_bot.start()
    parent = await _new_parent(slack, incident_id)
    assert parent["ts"] != old.ts
    # The card still waiting for an answer is posted again in the new thread, with buttons.
    card = await first_card(slack)
    assert proposal_id(card) == pid and card["thread_ts"] == parent["ts"]
    rt = stratus_bot.runtime
    now = await rt.call(rt.links.thread, incident_id)
    assert now is not None and now.ts == parent["ts"]
    # Approving it there carries the incident on to its end, in the new thread.
    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def ended() -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.EXECUTED

    await wait_for(ended, timeout=60)
    assert replicas(kube, "recommendation") == 1
    await wait_for(lambda: _in_thread(slack, parent["ts"], "Incident summary"), timeout=60)
    errors = [c for c in (await slack.calls())["calls"] if c.get("error")]
    assert not [c for c in errors if c["error"] in ("thread_not_found", "message_not_found")][1:]


async def test_a_deleted_parent_gets_a_new_thread_and_cancel_gets_a_reply(
    lab: Lab,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    playground: PlaygroundServer,
) -> None:
    inject(lab, SCENARIO)
    incident_id, pid = await _waiting_incident(slack, stratus_bot)
    rt = stratus_bot.runtime
    old = await rt.call(rt.links.thread, incident_id)
    assert old is not None
    web = AsyncWebClient(token=playground.bot_token, base_url=playground.api_url)
    await web.chat_delete(channel=old.channel, ts=old.ts)
    # Every slash command gets a reply, and the cancel is shown in a thread that exists.
    reply = said(await slack.command("U0ALICE", "/stratus", f"cancel {incident_id}"))
    assert incident_id in reply and "Cancelling" in reply
    parent = await _new_parent(slack, incident_id)
    await wait_for(lambda: _in_thread(slack, parent["ts"], "Incident summary"), timeout=30)
    # The card is posted again (it was in the deleted thread), showing its end.
    assert await wait_for(lambda: _in_thread(slack, parent["ts"], pid), timeout=30)


async def test_status_says_who_asked_from_the_requester(
    slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    """Proposals with no card: the label comes from who asked — Stratus's own step, a Slack
    user, a terminal user — not from the missing card."""
    rt = stratus_bot.runtime

    async def propose(count: int, requester: str) -> Proposal:
        proposal: Proposal = await rt.call(
            rt.service.propose,
            action="scale",
            kind="Deployment",
            name="geo",
            namespace="hotel",
            params={"replicas": count},
            requester=requester,
        )
        return proposal

    by_agent = await propose(2, "agent:stratus")
    by_slack = await propose(3, "U0DAVE")
    by_terminal = await propose(4, "cli:dave")
    status = said(await slack.command("U0ALICE", "/stratus", "status"))
    # Each cardless proposal's own line in the reply's blocks (a JSON string), the last
    # place its id is named.
    lines = {}
    for p in (by_agent, by_slack, by_terminal):
        at = status.rfind(f"`{p.id}`")
        lines[p.id] = status[at : status.find('"', at)]
    assert "asked from a terminal" in lines[by_terminal.id]
    assert "terminal" not in lines[by_agent.id] and "Stratus" in lines[by_agent.id]
    assert "terminal" not in lines[by_slack.id] and "<@U0DAVE>" in lines[by_slack.id]


async def test_looking_again_in_an_escalated_incident_whose_thread_is_gone_posts_a_new_one(
    lab: Lab,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    playground: PlaygroundServer,
    policy: PolicyBox,
) -> None:
    """ "I am looking again in its thread" names a thread that exists: the escalated
    incident's lost thread is posted anew before the bot says so, and the work goes on there."""
    policy.set(DENY, defaults=SRE)
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    rt = stratus_bot.runtime

    async def escalated() -> str | None:
        found = await rt.call(rt.incidents.recent, limit=1)
        return found[0].id if found and found[0].state.value == "escalated" else None

    incident_id = await wait_for(escalated, timeout=60)
    await stratus_bot.settle()
    old = await rt.call(rt.links.thread, incident_id)
    assert old is not None
    web = AsyncWebClient(token=playground.bot_token, base_url=playground.api_url)
    await web.chat_delete(channel=old.channel, ts=old.ts)
    policy.set(ASK, defaults=SRE)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")

    async def told() -> str | None:
        for e in (await slack.ephemerals("U0DAVE"))["ephemerals"]:
            if "looking again" in e["message"]["text"]:
                return str(e["message"]["ts"])
        return None

    said_at = await wait_for(told, timeout=30)
    # By the time it says so, the thread it means is there: posted before the words.
    parent = await _new_parent(slack, incident_id)
    assert float(parent["ts"]) < float(said_at)
    now = await rt.call(rt.links.thread, incident_id)
    assert now is not None and now.ts == parent["ts"] != old.ts
    card = await first_card(slack)
    assert card["thread_ts"] == now.ts
