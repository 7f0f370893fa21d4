"""A revoked MCP client's open proposals: an outside tester revoked a client and its proposal
stayed open on its card, approvable. Now the bot's periodic reconcile withdraws them (cancelled,
the reason naming the revocation, the card updated as any cancel updates it), and an approval
of one is refused below every surface while the client is not configured with the token it
proposed with — removed from the clients file, or its token changed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from lab.slack.client import AsyncPlaygroundClient
from policies.clients import Registry, hash_token
from proposals.errors import AnswerRefused
from proposals.model import ProposalState
from tests.bot.conftest import BotHandle, blocks_text, wait_for
from tests.bot.test_e2e import card_with, ephemerals, replicas
from tests.conftest import Lab
from tests.gateway.conftest import AGENT_CHANNEL, TOKENS, Clients, body, connect, gateway_on
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
S = ProposalState


async def _revocable(bot: BotHandle, clients: Clients, reconcile: float) -> None:
    """The bot knows its MCP clients file (as ``stratus serve`` with STRATUS_MCP_CLIENTS)."""
    await bot.stop()
    bot.clients = Registry(clients.path)
    bot.settings["mcp_channel"] = AGENT_CHANNEL
    bot.reconcile_interval = reconcile
    await bot.start()


@pytest_asyncio.fixture
async def slow_sweep(stratus_bot: BotHandle, clients: Clients) -> AsyncIterator[str]:
    await _revocable(stratus_bot, clients, reconcile=300.0)  # no sweep during the test
    async with gateway_on(stratus_bot, clients) as url:
        yield url


@pytest_asyncio.fixture
async def quick_sweep(stratus_bot: BotHandle, clients: Clients) -> AsyncIterator[str]:
    await _revocable(stratus_bot, clients, reconcile=0.3)
    async with gateway_on(stratus_bot, clients) as url:
        yield url


def _scale(deployment: str, replicas: int) -> dict[str, Any]:
    return {
        "action": "scale",
        "target": f"Deployment/{deployment}",
        "namespace": "hotel",
        "params": {"replicas": replicas},
        "intent": "more capacity",
    }


async def _card(slack: AsyncPlaygroundClient, pid: str) -> dict[str, Any]:
    async def card() -> dict[str, Any] | None:
        return await card_with(slack, pid)

    found: dict[str, Any] = await wait_for(card, timeout=60)
    return found


async def test_an_approval_of_a_removed_clients_proposal_is_refused(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    clients: Clients,
    slow_sweep: str,
) -> None:
    rt = stratus_bot.runtime
    before = replicas(kube, "geo")
    async with connect(slow_sweep, TOKENS["claude"]) as mcp:
        pid = body(await mcp.call_tool("propose_action", _scale("geo", before + 1)))["id"]
    await _card(slack, pid)
    clients.revoke("claude")
    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def refused() -> bool:
        return any("revoked" in e for e in await ephemerals(slack, "U0ALICE"))

    await wait_for(refused, timeout=30)
    assert (await rt.call(rt.service.get, pid)).state == S.AWAITING_APPROVAL
    assert replicas(kube, "geo") == before  # nothing was written


async def test_a_revoked_clients_proposals_are_withdrawn_and_their_cards_say_so(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    clients: Clients,
    quick_sweep: str,
) -> None:
    rt = stratus_bot.runtime
    before = replicas(kube, "geo")
    async with connect(quick_sweep, TOKENS["claude"]) as mcp:
        mine = body(await mcp.call_tool("propose_action", _scale("geo", before + 1)))["id"]
    async with connect(quick_sweep, TOKENS["other"]) as mcp:
        theirs = body(await mcp.call_tool("propose_action", _scale("search", 3)))["id"]
    await _card(slack, mine)

    # claude's token is changed (a new one issued): what it proposed with the old one goes.
    clients.write(
        [
            {"name": "claude", "token_sha256": hash_token("a-new-token-0123456789")},
            {"name": "other", "token_sha256": hash_token(TOKENS["other"])},
        ]
    )

    async def withdrawn(pid: str) -> Any:
        found = await rt.call(rt.service.get, pid)
        return found if found.state == S.CANCELLED else None

    gone = await wait_for(lambda: withdrawn(mine), timeout=30)
    assert "claude" in gone.reason and "token was revoked" in gone.reason, gone.reason
    assert (await rt.call(rt.service.get, theirs)).state == S.AWAITING_APPROVAL

    async def card_cancelled() -> bool:
        found = await card_with(slack, mine)
        shown = blocks_text(found) if found else ""
        return "Cancelled" in shown or (found is None and await _cancelled_card(slack, mine))

    await wait_for(card_cancelled, timeout=30)  # its buttons are gone: no click reaches it
    with pytest.raises(AnswerRefused, match="already cancelled"):
        await rt.call(rt.service.answer, mine, user="U0ALICE", choice="approve")

    clients.revoke("other")  # removed from the file altogether
    other_gone = await wait_for(lambda: withdrawn(theirs), timeout=30)
    assert "no longer in the clients file" in other_gone.reason
    assert replicas(kube, "geo") == before


async def _cancelled_card(slack: AsyncPlaygroundClient, pid: str) -> bool:
    """The card without its buttons: found by the proposal's id in its text."""
    from tests.bot.test_e2e import messages

    for message in await messages(slack):
        shown = blocks_text(message)
        if pid in shown and "Cancelled" in shown:
            return True
    return False
