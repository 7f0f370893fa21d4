"""Answering proposals: quorum, self-approval, who may answer, expiry, plan changes — and every
pitfall REFERENCE.md lists, shown impossible — through the proposal service, on the lab."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from policies.evaluate import facts_for
from policies.grants import GrantBook
from policies.model import Match, Rule
from proposals.errors import AnswerRefused, StaleProposal
from proposals.model import Proposal, ProposalState
from proposals.service import ProposalService
from store.clock import ManualClock
from tests.proposals.conftest import PolicyBox
from tools import actions
from tools.k8s import KubeClient
from tools.objects import ObjectRef

S = ProposalState
GEO = ObjectRef("Deployment", "geo", "hotel")
TWO_PERSON = Rule(
    name="two", decision="ask", approvers=["S0SRE", "U0LEAD"], min_approvals=2, self_approval=False
)
REMEMBER = Rule(name="routine", decision="ask", remember=True, max_grant="2h")
ALWAYS_ASK = Rule(name="careful", decision="ask", remember=False)


def scale(service: ProposalService, replicas: int = 2, **kwargs: Any) -> Proposal:
    return service.propose(
        action="scale",
        target=GEO,
        params={"replicas": replicas},
        requester=kwargs.pop("requester", "U0REQ"),
        **kwargs,
    )


def test_two_distinct_approvers_are_needed_and_the_same_person_counts_once(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(TWO_PERSON)
    proposal = scale(service)
    assert proposal.state == S.AWAITING_APPROVAL
    first = service.answer(proposal.id, user="U0ANN", groups=("S0SRE",), choice="approve")
    assert first.state == S.AWAITING_APPROVAL and first.approvals() == ["U0ANN"]
    with pytest.raises(AnswerRefused, match="already approved"):
        service.answer(proposal.id, user="U0ANN", groups=("S0SRE",), choice="approve")
    second = service.answer(proposal.id, user="U0LEAD", choice="approve")
    assert second.state == S.APPROVED and second.approvals() == ["U0ANN", "U0LEAD"]
    with pytest.raises(AnswerRefused, match="already approved"):
        service.answer(proposal.id, user="U0BOB", groups=("S0SRE",), choice="approve")


def test_the_requester_cannot_approve_when_self_approval_is_false(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(TWO_PERSON)
    proposal = scale(service)
    with pytest.raises(AnswerRefused, match="someone else must approve"):
        service.answer(proposal.id, user="U0REQ", groups=("S0SRE",), choice="approve")
    assert service.get(proposal.id).votes == []


def test_a_click_from_a_non_approver_changes_nothing(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(TWO_PERSON)
    proposal = scale(service)
    for choice in ("approve", "reject"):
        with pytest.raises(AnswerRefused, match=r"not an approver|only its approvers"):
            service.answer(proposal.id, user="U0RANDOM", groups=("S0MKT",), choice=choice)  # type: ignore[arg-type]
    after = service.get(proposal.id)
    assert after.state == S.AWAITING_APPROVAL and after.votes == [] and after.version == 0


def test_concurrent_approvals_approve_and_execute_exactly_once(
    service: ProposalService, policy: PolicyBox, kube: KubeClient
) -> None:
    policy.set(Rule(name="one", decision="ask"))
    proposal = scale(service, 3)
    results: list[str] = []

    def click(user: str) -> None:
        try:
            service.answer(proposal.id, user=user, choice="approve")
            service.execute(proposal.id, actor=user)
            results.append("executed")
        except (AnswerRefused, StaleProposal) as refused:
            results.append(refused.message)
        except Exception as other:
            results.append(f"{type(other).__name__}: {other}")

    threads = [threading.Thread(target=click, args=(f"U{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done = service.get(proposal.id)
    assert done.state == S.EXECUTED and len(done.approvals()) == 1
    writes = service.store.query("SELECT id FROM executions WHERE state = 'applied'")
    assert len(writes) == 1 and kube.get(GEO)["spec"]["replicas"] == 3
    assert all("already" in r or r in ("executed",) or "executing" in r for r in results), results


def test_pitfall_approve_once_is_never_stored_as_always(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(REMEMBER)
    proposal = scale(service)
    assert service.answer(proposal.id, user="U1", choice="approve").state == S.APPROVED
    assert GrantBook(service.store).all() == []
    again = scale(service, 3)
    assert again.state == S.AWAITING_APPROVAL  # the next identical proposal asks again


def test_pitfall_a_timeout_is_expired_not_a_human_denial(
    service: ProposalService, policy: PolicyBox, clock: ManualClock
) -> None:
    policy.set(ALWAYS_ASK)
    proposal = scale(service)
    clock.advance(31 * 60)
    [expired] = service.expire()
    assert expired.id == proposal.id and expired.state == S.EXPIRED
    assert expired.votes == [] and expired.reason == "nobody answered in time"
    with pytest.raises(AnswerRefused, match="already expired"):
        service.answer(proposal.id, user="U1", choice="approve")


def test_pitfall_buttons_expire_even_before_anyone_sweeps(
    service: ProposalService, policy: PolicyBox, clock: ManualClock
) -> None:
    policy.set(ALWAYS_ASK)
    proposal = scale(service)
    clock.advance(2 * 3600)
    with pytest.raises(AnswerRefused, match="expired"):
        service.answer(proposal.id, user="U1", choice="approve")
    assert service.get(proposal.id).state == S.EXPIRED


def test_pitfall_one_approval_never_lets_a_different_call_run(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(ALWAYS_ASK)
    first = scale(service, 2)
    second = scale(service, 3)
    service.answer(first.id, user="U1", choice="approve")
    assert service.get(first.id).state == S.APPROVED
    assert service.get(second.id).state == S.AWAITING_APPROVAL
    with pytest.raises(Exception, match="not approved"):
        service.execute(second.id, actor="U1")


def test_pitfall_approvals_never_fail_open_on_unrecognized_input(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(TWO_PERSON)
    proposal = scale(service)
    for user, choice in (("", "approve"), ("U0LEAD", "yes"), ("U0LEAD", "APPROVE")):
        with pytest.raises(AnswerRefused):
            service.answer(proposal.id, user=user, choice=choice)  # type: ignore[arg-type]
    assert service.get(proposal.id).votes == []
    policy.set(ALWAYS_ASK)
    careful = scale(service, 3)
    with pytest.raises(AnswerRefused, match="not available"):
        service.answer(careful.id, user="U1", choice="always")
    assert GrantBook(service.store).all() == []


def test_pitfall_the_governed_agent_cannot_vote_or_declare_its_own_risk(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(Rule(name="one", decision="ask"))
    proposal = scale(service, requester="agent:planner")
    for machine in ("agent:planner", "stratus", "stratus-bot", "stratus-reconciler"):
        with pytest.raises(AnswerRefused, match="only a human"):
            service.answer(proposal.id, user=machine, choice="approve")
    command = actions.build(
        "set-command", {"target": "web", "namespace": "prod", "command": ["sh"]}
    )
    assert facts_for(command, requester="agent:planner").risk == "high"  # from the catalog
    policy.set(Rule(name="no-high", decision="deny", match=Match(risk=["high"])))
    denied = service.propose(
        action="set-command",
        target=GEO,
        params={"command": ["sh"]},
        requester="agent:planner",
    )
    assert denied.state == S.DENIED and "no-high" in denied.decision.reason


def test_always_allow_creates_a_scoped_expiring_revocable_audited_grant(
    service: ProposalService, policy: PolicyBox, clock: ManualClock
) -> None:
    policy.set(REMEMBER)
    proposal = scale(service)
    approved = service.answer(
        proposal.id, user="U1", choice="always", grant_lifetime_seconds=10 * 3600
    )
    assert approved.state == S.APPROVED
    [grant] = GrantBook(service.store).active(clock.now())
    assert grant.created_by == "U1"
    assert grant.expires_at - clock.now() == __import__("datetime").timedelta(hours=2)  # capped
    assert (grant.action, grant.namespace, grant.resource) == ("scale", "hotel", "Deployment/geo")
    assert scale(service, 3).state == S.APPROVED  # the grant allows the next one
    assert "allowed: grant" in scale(service, 4).decision.reason
    GrantBook(service.store).revoke(grant.id, by="U2")
    assert scale(service, 5).state == S.AWAITING_APPROVAL
    events = [r["event"] for r in service.store.query("SELECT event FROM audit_log")]
    assert "grant" in events and "grant-revoked" in events


def test_a_rejection_records_the_reason_and_the_person(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(ALWAYS_ASK)
    proposal = scale(service)
    rejected = service.answer(proposal.id, user="U7", choice="reject", reason="wrong service")
    assert rejected.state == S.REJECTED and rejected.votes[0].user == "U7"
    assert rejected.votes[0].reason == "wrong service"
    with pytest.raises(Exception, match="rejected"):
        service.execute(proposal.id, actor="U7")
