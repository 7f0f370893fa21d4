"""A Stratus that does not lead takes nothing from Slack, and the leader carries on the work
another left parked (issue 19, attacker finding 2), in-process against the lab and the
playground. The same with two real ``stratus serve`` processes frozen and thawed is in
``tests/bot/test_serve_leader.py``."""

from __future__ import annotations

from typing import Any

import pytest

from bot.text import command_words
from incidents.model import IncidentState
from lab.slack.client import AsyncPlaygroundClient
from proposals.model import ProposalState
from store.records import ExecutionLog
from tests.bot.conftest import BotHandle, inject, wait_for
from tests.bot.test_e2e import CHANNEL, SCENARIO, ephemerals, first_card, proposal_id, replicas
from tests.conftest import Lab
from tools import errors
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
P = ProposalState


async def test_a_process_that_does_not_lead_answers_handing_over_and_changes_nothing(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    inject(lab, SCENARIO)
    await slack.command("U0ALICE", "/stratus", "investigate hotel", channel=CHANNEL)
    pid = proposal_id(await first_card(slack))
    rt = stratus_bot.runtime
    events_before = rt.service.events.last_seq()
    leading = False
    rt.acting = lambda: leading  # the Lease was lost (or its renewal is past the deadline)

    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def told() -> bool:
        return any(
            command_words.HANDING_OVER in said for said in await ephemerals(slack, "U0ALICE")
        )

    await wait_for(told)
    delivery = await slack.command("U0ALICE", "/stratus", "investigate shop", channel=CHANNEL)
    assert command_words.HANDING_OVER in str(delivery), delivery
    await stratus_bot.settle()
    assert rt.service.get(pid).state == P.AWAITING_APPROVAL
    assert rt.service.events.last_seq() == events_before
    assert "shop" not in [i.namespace for i in rt.incidents.recent(limit=50)]
    assert replicas(kube, "recommendation") == 0

    leading = True  # the card stayed open: the leader takes the same click
    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def executed() -> bool:
        return rt.service.get(pid).state == P.EXECUTED

    await wait_for(executed, timeout=60)


async def test_the_leader_carries_on_an_approved_write_that_was_left_parked_exactly_once(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    """The stranded state of the finding: approved, the incident executing, the write refused
    by the fence. Nothing clicks again; the reconcile carries it on after the grace."""
    await stratus_bot.stop()
    stratus_bot.settings = {"parked_grace": 1.0}
    stratus_bot.reconcile_interval = 0.3
    await stratus_bot.start()
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0ALICE", "/stratus", "investigate hotel", channel=CHANNEL)
    pid = proposal_id(await first_card(slack))
    proposal = rt.service.get(pid)
    assert proposal.incident_id is not None
    fenced = True

    def fence() -> None:
        if fenced:
            raise errors.Unavailable("this Stratus does not hold the leader lease (test)")

    rt.service.executor.fence = fence
    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def stranded() -> Any:
        incident = rt.incidents.get(proposal.incident_id or "")
        return rt.service.get(pid).state == P.APPROVED and incident.state == IncidentState.EXECUTING

    await wait_for(stranded, timeout=60)
    assert replicas(kube, "recommendation") == 0
    fenced = False  # the leader now: its next reconcile, past the grace, carries it on

    async def executed() -> bool:
        return rt.service.get(pid).state == P.EXECUTED

    await wait_for(executed, timeout=60)
    await stratus_bot.settle()
    assert [e.state for e in ExecutionLog(rt.store).by_proposal(pid)] == ["applied"]
    assert replicas(kube, "recommendation") > 0
    incident = rt.incidents.get(proposal.incident_id)
    assert incident.state != IncidentState.EXECUTING
