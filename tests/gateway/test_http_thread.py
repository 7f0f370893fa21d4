"""A proposal from an MCP client joins the namespace's open incident: its card is posted in
that incident's thread like Stratus's own, says which client proposed it and quotes the
agent's intent as untrusted text. An incident verifies one change at a time: approved while
Stratus's own attempt is in flight, the agent's change waits its turn, then runs as the
incident's next attempt — verified like Stratus's own — and the agent's wait sees both."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from incidents import moves
from incidents.model import IncidentState
from lab.slack.client import AsyncPlaygroundClient, PlaygroundRequestFailed
from proposals.model import ProposalState
from store.errors import StratusError
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
        await slack.click("U0ALICE", "stratus.approve", value=pid)
        # Approved, but Stratus's attempt 1 still waits: the agent's write must not land
        # inside that attempt's before/after.
        early = body(
            await mcp.call_tool("wait_for_decision", {"proposal_id": pid, "timeout_seconds": 4})
        )
        assert early["state"] == "approved" and early["timed_out"], early
        assert incident_id in early["waits_its_turn"]
        assert replicas(kube, "geo") == 1
        waiting = asyncio.create_task(
            mcp.call_tool("wait_for_decision", {"proposal_id": pid, "timeout_seconds": 150})
        )
        await slack.click("U0ALICE", "stratus.approve", value=own)
        decided = body(await asyncio.wait_for(waiting, 180))
        assert decided["state"] == "executed", decided
        assert replicas(kube, "geo") == 2
        # Stratus's step ran first, as attempt 1; the agent's change was attempt 2, verified.
        assert decided["verification"]["attempt"] == 2, decided
        assert decided["verification"]["verdict"] in ("healthy", "better", "same"), decided
        assert "waits_its_turn" not in decided
        assert (await rt.call(rt.service.get, own)).state == ProposalState.EXECUTED
        ended = await rt.call(rt.incidents.get, incident_id)
        assert [a.proposals for a in ended.attempts] == [[own], [pid]]
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


async def test_an_incident_that_ends_withdraws_the_changes_waiting_their_turn(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle, mcp_url: str
) -> None:
    """An incident that ends (here: escalated by a person's rule — the store's own move, as
    an undo that failed ends one) leaves no agent's change waiting for a turn that will not
    come: it is withdrawn saying why, and an approval afterwards runs nothing."""
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    own = proposal_id(await first_card(slack))
    incident_id = (await rt.call(rt.service.get, own)).incident_id
    assert incident_id
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        made = body(
            await mcp.call_tool(
                "propose_action",
                {
                    "action": "scale",
                    "target": "Deployment/geo",
                    "namespace": "hotel",
                    "params": {"replicas": 2},
                    "intent": "more geo",
                },
            )
        )
        pid = made["id"]
        assert incident_id in made["waits_its_turn"]

        def escalate() -> None:
            incident = rt.incidents.get(incident_id)
            moves.move(
                rt.workflow.deps,
                incident,
                IncidentState.ESCALATED,
                message="a person took over",
                reason="taken over",
            )

        await rt.call(escalate)
        gone = body(await mcp.call_tool("get_proposal", {"proposal_id": pid}))
        assert gone["state"] == "cancelled", gone
        assert "ended (escalated) before its turn" in gone["reason"], gone
        # A click lands or finds the card's buttons gone (the card follows the events a
        # moment later); either way nothing runs, and an answer reaching the service is refused.
        with contextlib.suppress(PlaygroundRequestFailed):
            await slack.click("U0ALICE", "stratus.approve", value=pid)
        await asyncio.sleep(2)
        with pytest.raises(StratusError):
            await rt.call(rt.service.answer, pid, user="U0ALICE", choice="approve")
        assert (await rt.call(rt.service.get, pid)).state == ProposalState.CANCELLED
        assert replicas(kube, "geo") == 1
