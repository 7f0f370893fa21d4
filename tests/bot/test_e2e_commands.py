"""The other slash commands, end to end over HTTP (the playground types them, the bot answers
with its acknowledgement, which the playground shows as an ephemeral) — and the bot over
Socket Mode, connected to the playground's websocket."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.app import StratusBot
from bot.config import BotConfig
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from policies.model import Match, Rule
from proposals.model import Proposal, ProposalState
from tests.bot.conftest import SRE, BotHandle, blocks_text, inject, make_runtime, wait_for
from tests.bot.test_e2e import SCENARIO, first_card, proposal_id, replicas
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio


def said(delivery: dict[str, Any]) -> str:
    """What the person sees: the acknowledgement's text and blocks."""
    assert delivery["ok"], delivery
    assert delivery["attempts"][-1]["status"] == 200
    response = delivery["response"] or ""
    if isinstance(response, str):  # bolt answers a text-only ack as text/plain
        return response
    return str(response.get("text", "")) + json.dumps(response.get("blocks", []))


async def test_help_and_unknown_or_malformed_commands_get_a_helpful_reply(
    slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    for words in ("help", ""):
        reply = said(await slack.command("U0DAVE", "/stratus", words))
        assert "/stratus investigate <namespace>" in reply and "/stratus status" in reply
    unknown = said(await slack.command("U0DAVE", "/stratus", "frobnicate the cluster"))
    assert "I don't know `frobnicate`" in unknown and "/stratus investigate" in unknown
    bad = said(await slack.command("U0DAVE", "/stratus", "investigate Not_A_Namespace"))
    assert "Usage: `/stratus investigate <namespace>" in bad
    missing = said(await slack.command("U0DAVE", "/stratus", "investigate"))
    assert "Usage:" in missing
    too_many = said(await slack.command("U0DAVE", "/stratus", "undo a b c"))
    assert "Usage:" in too_many
    assert "Usage: `/stratus status`" in said(await slack.command("U0DAVE", "/stratus", "status x"))
    # A wrong incident id is never taken for "the incident of this channel".
    for words in ("cancel inc-0123456789", "cancel inc-doesnotexist", "summary inc-zzz"):
        reply = said(await slack.command("U0ALICE", "/stratus", words))
        assert "There is no incident `inc-" in reply and "nothing changed" in reply, words
    # Seen: `/stratus cancel ../x` answered "No incident is open in this channel".
    for words in ("cancel ../x", "summary ../x", "cancel INC-0123456789", "cancel inc/1"):
        reply = said(await slack.command("U0ALICE", "/stratus", words))
        assert "is not a valid incident id" in reply and "nothing changed" in reply, reply
        assert "No incident is open" not in reply and "can't tell which" not in reply, reply
    nothing = said(await slack.command("U0ALICE", "/stratus", "cancel"))
    assert "No incident is open in this channel" in nothing
    not_needed = said(await slack.command("U0ALICE", "/stratus", "cancel not needed"))
    assert "No incident is open in this channel" in not_needed, "a reason is no id"
    # Every one of these was an ephemeral reply: nothing was posted in the channel.
    assert (await slack.messages(channel="C0INCIDENT"))["messages"] == []
    assert not await stratus_bot.runtime.call(stratus_bot.runtime.incidents.recent, limit=5)


async def test_status_lists_open_incidents_and_pending_approvals(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    quiet = said(await slack.command("U0DAVE", "/stratus", "status"))
    assert "No open incidents." in quiet and "No approvals pending." in quiet
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    busy = said(await slack.command("U0DAVE", "/stratus", "status"))
    incident = (await stratus_bot.runtime.call(stratus_bot.runtime.incidents.recent, limit=1))[0]
    assert incident.id in busy and "hotel" in busy and pid in busy and "running" in busy


async def test_a_terminal_proposal_is_answered_from_status_and_the_app_home(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle, kube: KubeClient
) -> None:
    """A proposal made at a terminal has no card: ``/stratus status`` and the App Home list
    it with the card's buttons, and a click there answers it like a click on a card."""
    rt = stratus_bot.runtime

    async def terminal_proposal(count: int) -> Proposal:
        proposal: Proposal = await rt.call(
            rt.service.propose,
            action="scale",
            kind="Deployment",
            name="geo",
            namespace="hotel",
            params={"replicas": count},
            requester="cli:dave",
        )
        assert proposal.state == ProposalState.AWAITING_APPROVAL
        return proposal

    async def executed(pid: str) -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.EXECUTED

    first = await terminal_proposal(2)
    status = said(await slack.command("U0ALICE", "/stratus", "status"))
    assert first.id in status and "asked from a terminal" in status
    assert "stratus.approve" in status and "stratus.reject" in status
    await slack.click("U0ALICE", "stratus.approve", value=first.id, ephemeral=True)
    await wait_for(lambda: executed(first.id), timeout=60)
    assert replicas(kube, "geo") == 2

    async def told() -> bool:
        found = (await slack.ephemerals("U0ALICE"))["ephemerals"]
        return any(
            first.id in e["message"]["text"] and "executed" in e["message"]["text"] for e in found
        )

    await wait_for(told)

    second = await terminal_proposal(3)
    await slack.open_home("U0DAVE")  # not an approver: nothing of it in his Home

    async def home_of(user: str, needle: str, present: bool = True) -> dict[str, Any] | None:
        for view in reversed((await slack.views(user))["views"]):
            if view["kind"] == "home":
                found: dict[str, Any] = view["view"]
                return found if (needle in blocks_text(found)) == present else None
        return None

    assert await wait_for(lambda: home_of("U0DAVE", second.id, present=False))
    await slack.open_home("U0ALICE")
    home = await wait_for(lambda: home_of("U0ALICE", second.id))
    assert "stratus.approve" in blocks_text(home) and "stratus.reject" in blocks_text(home)
    await slack.click("U0ALICE", "stratus.approve", value=second.id, view_id=home["id"])
    await wait_for(lambda: executed(second.id), timeout=60)
    assert replicas(kube, "geo") == 3
    assert await wait_for(lambda: home_of("U0ALICE", second.id, present=False))


async def test_policy_shows_the_rules_defaults_and_grants(
    slack: AsyncPlaygroundClient, stratus_bot: BotHandle, policy: PolicyBox
) -> None:
    policy.set(
        Rule(name="no-prod", decision="deny", match=Match(namespaces=["prod-*"])),
        Rule(name="remember-hotel", decision="ask", remember=True, max_grant="4h"),
        defaults=SRE,
    )
    everything = said(await slack.command("U0DAVE", "/stratus", "policy"))
    assert "no-prod" in everything and "remember-hotel" in everything and "S0SRE" in everything
    assert "Defaults (a floor no rule loosens): approvers" in everything
    hotel = said(await slack.command("U0DAVE", "/stratus", "policy hotel"))
    assert "`hotel`" in hotel and "remember-hotel" in hotel and "no-prod" not in hotel
    assert "Usage:" in said(await slack.command("U0DAVE", "/stratus", "policy Bad_Name"))


@pytest_asyncio.fixture
async def socket_bot(
    playground: PlaygroundServer, lab: Lab, kube: KubeClient, tmp_path: Path, policy: PolicyBox
) -> AsyncIterator[StratusBot]:
    config = BotConfig(
        mode="socket",
        bot_token=playground.bot_token,
        app_token=playground.app_token,
        api_url=playground.api_url,
        follow_interval=0.1,
    )
    bot = StratusBot(make_runtime(kube, tmp_path / "socket.db", policy), config)
    await bot.start()
    yield bot
    await bot.stop()
    bot.rt.store.close()


async def test_socket_mode_connects_to_the_playground_and_handles_commands_and_clicks(
    lab: Lab, slack: AsyncPlaygroundClient, socket_bot: StratusBot
) -> None:
    async def connected() -> bool:
        return bool((await slack.config())["socket_mode_connected"])

    await wait_for(connected)
    assert (await slack.config())["request_url"] is None  # no HTTP endpoint at all
    reply = await slack.command("U0DAVE", "/stratus", "help")
    assert reply["transport"] == "socket_mode" and "/stratus investigate" in said(reply)
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    click = await slack.click("U0ALICE", "stratus.approve", value=pid)
    assert click["transport"] == "socket_mode" and click["ok"], click

    async def executed() -> bool:
        return (await socket_bot.rt.call(socket_bot.rt.service.get, pid)).state.value == "executed"

    await wait_for(executed, timeout=60)


async def test_cancel_of_a_closed_incident_says_it_is_closed(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    """Issue 18 §6: cancelling an incident that has ended says so (and how it ended) instead
    of acknowledging a cancel that does nothing."""
    lab.settle()
    flow = stratus_bot.runtime.workflow
    incident, _ = await stratus_bot.runtime.call(flow.start, "hotel", requester="U0ALICE")
    ended = await stratus_bot.runtime.call(flow.advance, incident.id)
    assert not ended.is_open
    reply = said(await slack.command("U0ALICE", "/stratus", f"cancel {incident.id}"))
    assert f"incident {incident.id} is closed ({ended.state.value}" in reply, reply
    assert "Nothing changed" in reply
