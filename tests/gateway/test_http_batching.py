"""Approval fatigue: one MCP client's proposals for the same approvers in one incident are
gathered on one card (the approvers are asked once, and the card says why), each with its own
diff and buttons; a click on one of them answers that one; a full card starts a new one."""

from __future__ import annotations

from typing import Any

import pytest

from lab.slack.client import AsyncPlaygroundClient
from tests.bot.conftest import BotHandle, blocks_text, inject, wait_for
from tests.bot.test_e2e import SCENARIO, card_with, first_card, messages, replicas
from tests.conftest import Lab
from tests.gateway.conftest import TOKENS, Clients, body, connect
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
GATHERED = "gathered on this one card"


def scale(name: str) -> dict[str, Any]:
    return {
        "action": "scale",
        "target": f"Deployment/{name}",
        "namespace": "hotel",
        "params": {"replicas": 2},
        "intent": f"more {name}",
    }


async def cards_of(slack: AsyncPlaygroundClient, pid: str) -> list[dict[str, Any]]:
    return [m for m in await messages(slack) if f"decide:{pid}" in blocks_text(m)]


async def test_one_clients_proposals_share_one_card(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    mcp_url: str,
    clients: Clients,
) -> None:
    # An approved change waiting its turn is still open: room for the four asked below.
    clients.default(proposals_per_minute=10, open_proposals=5)
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    await first_card(slack)
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        geo = body(await mcp.call_tool("propose_action", scale("geo")))["id"]

        async def shown(pid: str) -> dict[str, Any] | None:
            return await card_with(slack, pid)

        alone = await wait_for(lambda: shown(geo), timeout=60)
        assert GATHERED not in blocks_text(alone)
        frontend = body(await mcp.call_tool("propose_action", scale("frontend")))["id"]

        async def gathered() -> dict[str, Any] | None:
            card = await card_with(slack, geo)
            seen = blocks_text(card) if card else ""
            return card if f"decide:{frontend}" in seen and GATHERED in seen else None

        batch = await wait_for(gathered, timeout=60)
        assert batch["ts"] == alone["ts"]  # the same message, edited: nobody pinged again
        assert "2 proposals from `claude` (MCP client)" in blocks_text(batch)
        assert [m["ts"] for m in await cards_of(slack, frontend)] == [alone["ts"]]
        # Each keeps its own buttons: approving one answers that one only.
        await slack.click("U0ALICE", "stratus.approve", value=frontend)
        # … and it waits its turn behind Stratus's own attempt (one change at a time).
        done = body(await mcp.call_tool("get_proposal", {"proposal_id": frontend}))
        assert done["state"] == "approved" and "waits_its_turn" in done, done
        assert replicas(kube, "frontend") == 1
        assert body(await mcp.call_tool("get_proposal", {"proposal_id": geo}))["state"] == (
            "awaiting_approval"
        )
        assert replicas(kube, "geo") == 1
        # A third joins the card; a fourth finds it full and gets a card of its own.
        rate = body(await mcp.call_tool("propose_action", scale("rate")))["id"]

        async def three() -> bool:
            return "3 proposals from" in blocks_text(await card_with(slack, geo) or {})

        await wait_for(three, timeout=60)
        profile = body(await mcp.call_tool("propose_action", scale("profile")))["id"]

        async def own_card() -> list[dict[str, Any]]:
            return [m for m in await cards_of(slack, profile) if m["ts"] != alone["ts"]]

        (separate,) = await wait_for(own_card, timeout=60)
        assert GATHERED not in blocks_text(separate)
        assert [m["ts"] for m in await cards_of(slack, rate)] == [alone["ts"]]
