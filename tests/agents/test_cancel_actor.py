"""A cancelled incident's withdrawn proposals name who cancelled it: the proposal the attempt
was waiting on is withdrawn like every other open proposal of the incident, with the
canceller as the actor of its event and audit row (`withdrawn: incident … was cancelled by
<who>`, docs/workflow.md) — never Stratus's agent."""

from __future__ import annotations

import pytest

from incidents.model import IncidentState
from proposals.errors import AnswerRefused
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.audit import AuditLog
from store.db import Store
from tests.agents.test_workflow import ASK, FIX, ScriptedPlanner, replicas, workflow
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient


def test_the_waiting_proposal_is_withdrawn_by_whoever_cancelled(
    broken: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox, wstore: Store
) -> None:
    policy.set(ASK)
    flow = workflow(service, kube, ScriptedPlanner(FIX))
    incident, _ = flow.start("hotel", requester="U0DAVE")
    waiting = flow.advance(incident.id)
    pid = waiting.attempts[0].proposals[0]
    assert service.get(pid).state == ProposalState.AWAITING_APPROVAL
    cancelled = flow.cancel(incident.id, actor="U0CAROL", reason="handled by hand")
    assert cancelled.state == IncidentState.CANCELLED
    withdrawn = service.get(pid)
    assert withdrawn.state == ProposalState.CANCELLED
    assert withdrawn.reason == f"incident {incident.id} was cancelled by U0CAROL"
    last = service.events.since(0, proposal_id=pid)[-1].event
    assert last.message == f"withdrawn: incident {incident.id} was cancelled by U0CAROL"
    rows = [
        r
        for r in AuditLog(wstore).records(limit=500)
        if r.payload.get("proposal") == pid and r.payload.get("to") == "cancelled"
    ]
    assert len(rows) == 1 and rows[0].actor == "U0CAROL", rows
    assert "agent:stratus" not in str(rows[0].payload["message"])
    # An approval that comes after is told what happened.
    with pytest.raises(AnswerRefused, match="already cancelled"):
        service.answer(pid, user="U0BOB", choice="approve")
    assert replicas(kube, "recommendation") == 0
