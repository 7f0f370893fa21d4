"""Approvals: quorum, self-approval, who may answer, expiry, plan changes — and every pitfall
REFERENCE.md lists, shown impossible."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from policies.approvals import ApprovalDesk, ApprovalRequest, plan_digest
from policies.evaluate import (
    CompiledPolicy,
    PolicyDecision,
    ProposalFacts,
    evaluate,
    facts_for,
)
from policies.grants import GrantBook, GrantError
from policies.loader import Policy, SourcedRule
from policies.model import Match, Rule
from store.db import Store
from tools import actions

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
FACTS = ProposalFacts("scale", "prod-web", "Deployment", "web", "medium", True, "U0REQ")


def decide(rule: Rule, facts: ProposalFacts = FACTS, grants: list = []) -> PolicyDecision:  # noqa: B006
    policy = CompiledPolicy.build(Policy((SourcedRule(rule, "x"),)))
    return evaluate(facts, policy, grants, NOW)


TWO_PERSON = Rule(
    name="two", decision="ask", approvers=["S0SRE", "U0LEAD"], min_approvals=2, self_approval=False
)
REMEMBER = Rule(name="routine", decision="ask", remember=True, max_grant="2h")
ALWAYS_ASK = Rule(name="careful", decision="ask", remember=False)


@pytest.fixture
def desk(tmp_path: Path) -> ApprovalDesk:
    return ApprovalDesk(Store(tmp_path / "db.sqlite"))


def request(
    decision: PolicyDecision,
    proposal: str = "p1",
    diff: str = "-a\n+b",
    facts: ProposalFacts = FACTS,
) -> ApprovalRequest:
    return ApprovalRequest(proposal, facts, decision, plan_digest(facts.action, "web", diff), NOW)


def opened(desk: ApprovalDesk, decision: PolicyDecision, proposal: str = "p1") -> ApprovalRequest:
    req = request(decision, proposal)
    desk.open(req)
    return req


def test_two_distinct_approvers_are_needed_and_the_same_person_counts_once(
    desk: ApprovalDesk,
) -> None:
    req = opened(desk, decide(TWO_PERSON))
    first = desk.vote(req, user="U0ANN", groups=("S0SRE",), choice="approve", now=NOW)
    assert first.accepted and first.state == "awaiting_approval"
    again = desk.vote(req, user="U0ANN", groups=("S0SRE",), choice="approve", now=NOW)
    assert again.accepted and again.state == "awaiting_approval" and again.approvals == ("U0ANN",)
    second = desk.vote(req, user="U0LEAD", choice="approve", now=NOW)
    assert second.state == "approved" and second.decided_now
    late = desk.vote(req, user="U0BOB", groups=("S0SRE",), choice="approve", now=NOW)
    assert not late.accepted and "already approved" in late.message


def test_the_requester_cannot_approve_when_self_approval_is_false(desk: ApprovalDesk) -> None:
    req = opened(desk, decide(TWO_PERSON))
    refused = desk.vote(req, user="U0REQ", groups=("S0SRE",), choice="approve", now=NOW)
    assert not refused.accepted and "someone else must approve" in refused.message
    assert desk.approvals("p1", req.digest) == ()


def test_a_click_from_a_non_approver_changes_nothing(desk: ApprovalDesk) -> None:
    req = opened(desk, decide(TWO_PERSON))
    refused = desk.vote(req, user="U0RANDOM", groups=("S0MARKETING",), choice="approve", now=NOW)
    assert not refused.accepted and "not an approver" in refused.message
    rejected = desk.vote(req, user="U0RANDOM", choice="reject", now=NOW)
    assert not rejected.accepted and desk.state("p1") == "awaiting_approval"


def test_concurrent_approvals_approve_exactly_once(desk: ApprovalDesk) -> None:
    req = opened(desk, decide(Rule(name="one", decision="ask")))
    winners: list[bool] = []

    def click(user: str) -> None:
        result = desk.vote(req, user=user, choice="approve", now=NOW)
        winners.append(result.decided_now)

    threads = [threading.Thread(target=click, args=(f"U{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert winners.count(True) == 1 and desk.state("p1") == "approved"


# ---------------------------------------------------------------- REFERENCE.md pitfalls


def test_pitfall_approve_once_is_never_stored_as_always(desk: ApprovalDesk) -> None:
    decision = decide(REMEMBER)
    req = opened(desk, decision)
    assert desk.vote(req, user="U1", choice="approve", now=NOW).state == "approved"
    assert GrantBook(desk.store).active(NOW) == []
    again = decide(REMEMBER, grants=GrantBook(desk.store).active(NOW))
    assert again.outcome == "ask"  # the next identical proposal asks again


def test_pitfall_a_timeout_is_expired_not_a_human_denial(desk: ApprovalDesk) -> None:
    req = opened(desk, decide(ALWAYS_ASK))
    later = NOW + timedelta(minutes=31)
    assert desk.expire(later) == ["p1"]
    assert desk.state("p1") == "expired"
    rows = desk.store.query("SELECT outcome, source, actor FROM decisions")
    assert rows == [{"outcome": "expired", "source": "timeout", "actor": None}]
    late = desk.vote(req, user="U1", choice="approve", now=later)
    assert not late.accepted


def test_pitfall_one_approval_never_lets_a_different_call_run(desk: ApprovalDesk) -> None:
    decision = decide(ALWAYS_ASK)
    first = opened(desk, decision, "p1")
    opened(desk, decision, "p2")
    desk.vote(first, user="U1", choice="approve", now=NOW)
    assert desk.state("p1") == "approved" and desk.state("p2") == "awaiting_approval"
    # the same proposal with a different planned diff needs approval again
    changed = desk.replan(first, plan_digest("scale", "web", "-a\n+c"), NOW)
    assert desk.state("p1") == "awaiting_approval"
    assert desk.approvals("p1", changed.digest) == ()
    stale = desk.vote(first, user="U2", choice="approve", now=NOW)
    assert not stale.accepted and "moved" in stale.message
    assert desk.vote(changed, user="U2", choice="approve", now=NOW).state == "approved"
    assert desk.state("p2") == "awaiting_approval"


def test_pitfall_approvals_never_fail_open_on_unrecognized_input(desk: ApprovalDesk) -> None:
    req = opened(desk, decide(TWO_PERSON))
    for user, choice in (("", "approve"), ("U0LEAD", "yes"), ("U0LEAD", "APPROVE")):
        result = desk.vote(req, user=user, choice=choice, now=NOW)  # type: ignore[arg-type]
        assert not result.accepted
    assert desk.state("p1") == "awaiting_approval"
    always = opened(desk, decide(ALWAYS_ASK), "p3")
    refused = desk.vote(always, user="U1", choice="always", now=NOW)
    assert not refused.accepted and "not available" in refused.message
    assert GrantBook(desk.store).active(NOW) == []


def test_pitfall_buttons_expire(desk: ApprovalDesk) -> None:
    req = opened(desk, decide(ALWAYS_ASK))
    expired = desk.vote(req, user="U1", choice="approve", now=NOW + timedelta(hours=2))
    assert not expired.accepted and "expired" in expired.message


def test_pitfall_the_governed_agent_cannot_vote_or_declare_its_own_risk(desk: ApprovalDesk) -> None:
    req = opened(desk, decide(Rule(name="one", decision="ask")))
    for machine in ("agent:planner", "stratus", "stratus-bot"):
        assert not desk.vote(req, user=machine, choice="approve", now=NOW).accepted
    command = actions.build(
        "set-command", {"target": "web", "namespace": "prod", "command": ["sh"]}
    )
    facts = facts_for(command, requester="agent:planner")
    assert facts.risk == "high"  # from the catalog, whatever the planner claims
    deny_high = Rule(name="no-high", decision="deny", match=Match(risk=["high"]))
    assert decide(deny_high, facts).outcome == "deny"


def test_always_allow_creates_a_scoped_expiring_revocable_grant(desk: ApprovalDesk) -> None:
    decision = decide(REMEMBER)
    req = opened(desk, decision)
    assert (
        desk.vote(req, user="U1", choice="always", now=NOW, grant_lifetime_seconds=10 * 3600).state
        == "approved"
    )
    [grant] = GrantBook(desk.store).active(NOW)
    assert grant.created_by == "U1" and grant.expires_at == NOW + timedelta(hours=2)  # capped
    assert (grant.action, grant.namespace, grant.resource) == (
        "scale",
        "prod-web",
        "Deployment/web",
    )
    assert decide(REMEMBER, grants=[grant]).outcome == "allow"
    elsewhere = ProposalFacts("scale", "prod-db", "Deployment", "web", "medium", True, "U0REQ")
    assert decide(REMEMBER, elsewhere, [grant]).outcome == "ask"
    GrantBook(desk.store).revoke(grant.id, by="U2", now=NOW)
    assert decide(REMEMBER, grants=GrantBook(desk.store).active(NOW)).outcome == "ask"
    with pytest.raises(GrantError, match="already revoked"):
        GrantBook(desk.store).revoke(grant.id, by="U2")


def test_a_rejection_records_the_reason(desk: ApprovalDesk) -> None:
    req = opened(desk, decide(ALWAYS_ASK))
    result = desk.vote(req, user="U7", choice="reject", now=NOW, reason="wrong service")
    assert result.state == "rejected" and "wrong service" in result.message
    rows = desk.store.query("SELECT outcome, actor, reason FROM decisions")
    assert rows == [{"outcome": "reject", "actor": "U7", "reason": "wrong service"}]
