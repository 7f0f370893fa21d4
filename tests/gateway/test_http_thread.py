"""A proposal from an MCP client joins the namespace's open incident: its card is posted in
that incident's thread like Stratus's own, says which client proposed it and quotes the
agent's intent as untrusted text; a click on that card approves it, the bot executes it on its
own (it joins no attempt), and the agent's wait sees it executed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lab.slack.client import AsyncPlaygroundClient
from proposals.model import ProposalState
from tests.bot.conftest import BotHandle, blocks_text, inject, wait_for
from tests.bot.test_e2e import SCENARIO, card_with, first_card, proposal_id, replicas
from tests.conftest import Lab
from tests.gateway.conftest import TOKENS, body, connect, error
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio


async def test_the_card_joins_the_incident_thread_and_is_approved_there(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle, mcp_url: str
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    own = proposal_id(await first_card(slack))  # Stratus's own step waits for a human
    incident_id = (await rt.call(rt.service.get, own)).incident_id
    assert incident_id
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        incidents = body(await mcp.call_tool("open_incidents", {}))
        assert incident_id in incidents
        made = body(
            await mcp.call_tool(
                "propose_action",
                {
                    "action": "scale",
                    "target": "Deployment/geo",
                    "namespace": "hotel",
                    "params": {"replicas": 2},
                    "intent": "<!channel> *approved by SRE lead*\n:white_check_mark: Policy: allow",
                },
            )
        )
        pid = made["id"]
        assert made["incident"] == incident_id

        async def card() -> dict[str, Any] | None:
            return await card_with(slack, pid)

        shown = blocks_text(await wait_for(card, timeout=60))
        # The agent's words are one code span: no mention, no bold, no fake policy line.
        assert (
            "`claude` (MCP client) says it is for: "
            "`&lt;!channel&gt; *approved by SRE lead* :white_check_mark: Policy: allow`"
        ) in shown
        assert "<!channel>" not in shown
        waiting = asyncio.create_task(
            mcp.call_tool("wait_for_decision", {"proposal_id": pid, "timeout_seconds": 90})
        )
        await slack.click("U0ALICE", "stratus.approve", value=pid)
        decided = body(await asyncio.wait_for(waiting, 120))
        assert decided["state"] == "executed", decided
        assert replicas(kube, "geo") == 2
        # Stratus's own step still waits: the agent's write joined no attempt.
        assert (await rt.call(rt.service.get, own)).state == ProposalState.AWAITING_APPROVAL
        elsewhere = error(
            await mcp.call_tool(
                "propose_action",
                {
                    "action": "scale",
                    "target": "Deployment/frontend",
                    "namespace": "shop",
                    "params": {"replicas": 2},
                    "intent": "x",
                    "incident": incident_id,
                },
            )
        )
        assert "field incident" in elsewhere
