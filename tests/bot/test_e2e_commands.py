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
from tests.bot.conftest import SRE, BotHandle, inject, make_runtime, wait_for
from tests.bot.test_e2e import SCENARIO, first_card, proposal_id
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
    nothing = said(await slack.command("U0ALICE", "/stratus", "cancel"))
    assert "No incident is open in this channel" in nothing
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
