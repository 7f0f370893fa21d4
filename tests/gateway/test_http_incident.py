"""A proposal from an MCP client in a namespace with no open incident opens one — requester
the client, the agent's intent quoted as untrusted — whose thread shows the proposal's card,
approved there by a person; the proposal is that incident's one attempt, so once executed it is
verified like an attempt of Stratus's own (Transactional No-Regression): healthy is kept and
resolves the incident, worse is undone automatically, and ``wait_for_decision`` says which.
Stratus proposes nothing of its own on top of the agent's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from incidents.model import IncidentState
from lab.slack.client import AsyncPlaygroundClient
from policies.model import Match, Rule
from proposals.model import ProposalState
from tests.bot.conftest import SRE, BotHandle, blocks_text, wait_for
from tests.bot.test_e2e import card_with, replicas
from tests.conftest import Lab
from tests.gateway.conftest import AGENT_CHANNEL, TOKENS, body, connect
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio


async def test_a_proposal_with_no_incident_opens_one_whose_thread_shows_its_card(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    agent_thread_url: str,
) -> None:
    rt = stratus_bot.runtime
    assert await rt.call(rt.incidents.open_for, "hotel") is None
    before = replicas(kube, "geo")
    async with connect(agent_thread_url, TOKENS["claude"]) as mcp:
        made = body(
            await mcp.call_tool(
                "propose_action",
                {
                    "action": "scale",
                    "target": "Deployment/geo",
                    "namespace": "hotel",
                    "params": {"replicas": before + 1},
                    "intent": "<!channel> more geo capacity",
                },
            )
        )
        pid, incident_id = made["id"], made["incident"]
        incident = await rt.call(rt.incidents.get, incident_id)
        assert incident.requester == "mcp:claude" and incident.source == "mcp"
        assert "mcp:claude says (untrusted)" in incident.question

        async def card() -> dict[str, Any] | None:
            return await card_with(slack, pid)

        shown = await wait_for(card, timeout=60)
        assert shown.get("thread_ts"), "the card is posted in the incident's thread"
        thread = await rt.call(rt.links.thread, incident_id)
        assert thread is not None and thread.channel == AGENT_CHANNEL
        assert shown["thread_ts"] == thread.ts
        said = blocks_text(shown)
        assert "`claude` (MCP client) says it is for: `" in said
        assert "an outside agent's words, untrusted" in said and "<!channel>" not in said

        waiting = asyncio.create_task(
            mcp.call_tool("wait_for_decision", {"proposal_id": pid, "timeout_seconds": 90})
        )
        await slack.click("U0ALICE", "stratus.approve", value=pid)
        decided = body(await asyncio.wait_for(waiting, 120))
        assert decided["state"] == "executed", decided
        checked = decided["verification"]
        assert checked["verdict"] == "healthy" and checked["done"], checked
        assert not checked["undone_automatically"] and checked["incident"] == incident_id
        assert replicas(kube, "geo") == before + 1
        again = body(await mcp.call_tool("get_proposal", {"proposal_id": pid}))
        assert again["verification"]["verdict"] == "healthy"
    ended = await rt.call(rt.incidents.get, incident_id)
    assert ended.state == IncidentState.RESOLVED, ended.reason
    # The agent's proposal is the incident's one attempt: Stratus proposed nothing of its own.
    assert [p.id for p in await rt.call(rt.service.by_incident, incident_id)] == [pid]


async def test_a_fix_that_makes_things_worse_is_undone_automatically(
    lab: Lab,
    kube: KubeClient,
    stratus_bot: BotHandle,
    agent_thread_url: str,
    policy: PolicyBox,
) -> None:
    """Agents may scale in hotel without a human; the agent scales a service its callers need
    to zero. The namespace is verified worse and the write undone (the policy allows Stratus's
    undo), as for an attempt of Stratus's own; the agent's wait says so."""
    policy.set(
        Rule(
            name="agents-may-scale",
            decision="allow",
            match=Match(requesters=["mcp:*"], actions=["scale"], namespaces=["hotel"]),
        ),
        Rule(name="undo-freely", decision="allow", match=Match(actions=["undo"])),
        defaults=SRE,
    )
    rt = stratus_bot.runtime
    before = replicas(kube, "recommendation")
    assert before > 0
    async with connect(agent_thread_url, TOKENS["claude"]) as mcp:
        made = body(
            await mcp.call_tool(
                "propose_action",
                {
                    "action": "scale",
                    "target": "Deployment/recommendation",
                    "namespace": "hotel",
                    "params": {"replicas": 0},
                    "intent": "save money",
                },
            )
        )
        pid = made["id"]
        decided = body(
            await mcp.call_tool("wait_for_decision", {"proposal_id": pid, "timeout_seconds": 90})
        )
        assert decided["state"] == ProposalState.UNDONE.value, decided
        checked = decided["verification"]
        assert checked["verdict"] == "worse", checked
        assert checked["undone_automatically"] and checked["done"], checked
        assert "undid it automatically" in checked["summary"]
        assert replicas(kube, "recommendation") == before
    incident = await rt.call(rt.incidents.get, made["incident"])
    assert incident.state == IncidentState.ESCALATED, incident.reason
    assert incident.attempts[0].result == "undone"
    # The undo was Stratus's (TNR); Stratus planned no fix of its own on top of the agent's.
    others = [p for p in await rt.call(rt.service.by_incident, incident.id) if p.id != pid]
    assert [p.action for p in others] == ["undo"] and others[0].requester == "agent:stratus"
