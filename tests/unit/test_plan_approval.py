"""Plan approvals (issue 18 §1) as pure decisions: the ``approve_plan`` rule key (validated,
never loosening a stricter rule when rules combine), and "is this step covered by the plan
approval?" as a function of the incident and its proposals — no store, no cluster, no socket."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agents.model import Candidate, Step
from bot import blocks as b
from bot import cards
from incidents import plans
from incidents.model import Attempt, Incident, IncidentState, PlannedStep
from policies.evaluate import CompiledPolicy, ProposalFacts, evaluate
from policies.loader import Policy, SourcedRule, parse_file
from policies.model import Defaults, Rule
from proposals.killswitch import SwitchState, while_paused
from proposals.model import (
    Decision,
    Facts,
    PlanSnapshot,
    Proposal,
    ProposalState,
    Target,
    Vote,
)

P = ProposalState
St = IncidentState
NOW = datetime(2026, 1, 1, tzinfo=UTC)
PLAN = Rule(name="plan-ok", decision="ask", approve_plan=True)


def decide(*rules: Rule, action: str = "restore-configmap-key", reversible: bool = True) -> Any:
    policy = CompiledPolicy.build(
        Policy(tuple(SourcedRule(r, f"t:{i}") for i, r in enumerate(rules)), Defaults())
    )
    facts = ProposalFacts(
        action=action,
        namespace="shop",
        kind="ConfigMap",
        name="shop-config",
        risk="medium",
        reversible=reversible,
        requester="agent:stratus",
    )
    return evaluate(facts, policy, [], NOW)


# ---------------------------------------------------------------------- the rule key


@pytest.mark.parametrize("decision", ["allow", "deny"])
def test_approve_plan_is_refused_outside_an_ask_rule(decision: str) -> None:
    with pytest.raises(ValidationError, match="approve_plan only applies to decision: ask"):
        Rule(name="x", decision=decision, approve_plan=True)  # type: ignore[arg-type]


def test_a_policy_file_with_approve_plan_on_a_deny_rule_fails_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: p}\nrules:\n"
        "  - name: never\n    decision: deny\n    approve_plan: true\n"
    )
    _, problems, _ = parse_file(path)
    assert problems and "approve_plan only applies to decision: ask" in str(problems[0])
    strict = tmp_path / "q.yaml"
    strict.write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: q}\nrules:\n"
        '  - {name: quoted, decision: ask, approve_plan: "true"}\n'
    )
    _, problems, _ = parse_file(strict)
    assert problems and "approve_plan" in str(problems[0]), "a quoted boolean is refused"


def test_one_opting_in_ask_rule_allows_a_plan_approval() -> None:
    assert decide(PLAN).approve_plan


@pytest.mark.parametrize(
    ("others", "why"),
    [
        ((Rule(name="always-ask", decision="ask"),), "an always-ask rule that does not opt in"),
        ((Rule(name="two", decision="ask", approve_plan=True, min_approvals=2),), "a quorum"),
        ((Rule(name="no", decision="deny"),), "a deny"),
    ],
)
def test_a_stricter_rule_beside_it_is_never_loosened(others: tuple[Rule, ...], why: str) -> None:
    decision = decide(PLAN, *others)
    assert not decision.approve_plan, why
    assert not decide(*others, PLAN).approve_plan, "the order of the rules changes nothing"


def test_no_plan_approval_by_default_for_an_allow_or_for_what_cannot_be_undone() -> None:
    assert not decide().approve_plan  # no rule: the defaults never offer it
    assert not decide(Rule(name="ok", decision="allow")).approve_plan
    assert not decide(PLAN, action="delete-pod", reversible=False).approve_plan


def test_while_paused_a_plan_approval_stands_for_nothing() -> None:
    policy = CompiledPolicy.build(Policy((SourcedRule(PLAN, "t"),), Defaults()))
    paused = SwitchState(paused=True, actor="U1")
    assert not while_paused(decide(PLAN), policy, paused).approve_plan


def test_the_new_fields_are_left_out_of_old_records_so_their_seals_still_match() -> None:
    vote = Vote(user="U1", choice="approve", digest="d", at=NOW)
    assert "plan" not in vote.model_dump() and "with_plan" not in vote.model_dump()
    assert "approve_plan" not in decision(plan=False).model_dump()
    assert decision(plan=True).model_dump()["approve_plan"] is True


# ---------------------------------------------------------------------- is this step covered?


def decision(*, plan: bool = True, quorum: int = 1) -> Decision:
    return Decision(
        outcome="ask",
        reason="asks: rule plan-ok requires 1 approval from anyone",
        source="rule",
        approve_plan=plan,
        min_approvals=quorum,
        decided_at=NOW,
    )


def proposal(
    pid: str,
    *,
    state: ProposalState = P.AWAITING_APPROVAL,
    digest: str = "",
    votes: list[Vote] | None = None,
    plan: bool = True,
    incident: str = "inc-1",
) -> Proposal:
    facts = Facts(
        action="scale",
        namespace="shop",
        kind="Deployment",
        name=pid,
        risk="low",
        reversible=True,
        requester="agent:stratus",
    )
    return Proposal(
        id=pid,
        incident_id=incident,
        action="scale",
        target=Target(kind="Deployment", name=pid, namespace="shop"),
        requester="agent:stratus",
        facts=facts,
        plan=PlanSnapshot(operation="replace", before=None, after=None, diff="", digest=digest),
        intent=f"scale {pid}",
        risk="low",
        reversible=True,
        decision=decision(plan=plan),
        votes=votes or [],
        state=state,
        created_at=NOW,
        updated_at=NOW,
        expires_at=NOW + timedelta(minutes=30),
    )


def planned(number: int, digest: str, *, plan: bool = True) -> PlannedStep:
    return PlannedStep(
        number=number,
        action="scale",
        target=f"deployment/s{number}",
        digest=digest,
        decision=decision(plan=plan),
    )


def incident(*proposals: str, finished: bool = False, steps: int = 2) -> Incident:
    candidate = Candidate(
        steps=[
            Step(action="scale", kind="Deployment", name=f"s{i}", params={"replicas": 1})
            for i in range(steps)
        ],
        intent="two steps",
    )
    attempt = Attempt(
        number=1,
        candidate=candidate,
        transaction_id="tx-1",
        proposals=list(proposals),
        plan=[planned(i + 1, f"d{i + 1}") for i in range(steps)],
        started_at=NOW,
        finished_at=NOW if finished else None,
    )
    return Incident(
        id="inc-1",
        namespace="shop",
        requester="U1",
        state=St.EXECUTING,
        created_at=NOW,
        updated_at=NOW,
        attempts=[attempt],
    )


PLAN_VOTE = Vote(user="U0ALICE", choice="plan", digest="d1", at=NOW, plan=["d2"])


def first(*, votes: list[Vote] | None = None, state: ProposalState = P.EXECUTED) -> Proposal:
    return proposal("p1", state=state, digest="d1", votes=[PLAN_VOTE] if votes is None else votes)


def test_a_later_step_whose_digest_the_plan_bound_is_covered() -> None:
    second = proposal("p2", digest="d2")
    assert plans.coverage(incident("p1", "p2"), second, first()) == (True, "")


def test_a_later_step_whose_object_moved_is_asked_alone_saying_why() -> None:
    moved = proposal("p2", digest="d2-moved")
    covered, why = plans.coverage(incident("p1", "p2"), moved, first())
    assert not covered and "changed since the plan was approved" in why


def test_a_step_the_policy_asks_alone_today_is_not_covered() -> None:
    alone = proposal("p2", digest="d2", plan=False)
    covered, why = plans.coverage(incident("p1", "p2"), alone, first())
    assert not covered and "asks for p2 alone" in why


@pytest.mark.parametrize(
    ("case", "the_incident", "the_first"),
    [
        ("the attempt ended", incident("p1", "p2", finished=True), first()),
        ("nobody approved a plan", incident("p1", "p2"), first(votes=[])),
        (
            "an approve once is no plan",
            incident("p1", "p2"),
            first(votes=[Vote(user="U0ALICE", choice="approve", digest="d1", at=NOW)]),
        ),
        ("the vote is on another attempt's step", incident("p9", "p2"), first()),
    ],
)
def test_no_plan_approval_no_cover(case: str, the_incident: Incident, the_first: Proposal) -> None:
    covered, why = plans.coverage(the_incident, proposal("p2", digest="d2"), the_first)
    assert not covered and why == "", case


def test_a_first_step_that_did_not_run_covers_nothing() -> None:
    covered, why = plans.coverage(
        incident("p1", "p2"), proposal("p2", digest="d2"), first(state=P.FAILED)
    )
    assert not covered and "did not run" in why


def test_a_vote_from_another_incident_covers_nothing() -> None:
    other = proposal("p1", state=P.EXECUTED, digest="d1", votes=[PLAN_VOTE], incident="inc-2")
    covered, why = plans.coverage(incident("p1", "p2"), proposal("p2", digest="d2"), other)
    assert not covered and "not a step of the same incident" in why


def test_approve_plan_is_offered_on_the_first_waiting_step_of_a_plan_only() -> None:
    waiting = proposal("p1", digest="d1")
    assert plans.plan_offered(incident("p1"), waiting)
    assert not plans.plan_offered(incident("p1", steps=1), waiting)  # one step: no plan
    assert not plans.plan_offered(incident("p1"), proposal("p1", digest="d1", plan=False))
    assert not plans.plan_offered(incident("p0", "p1"), waiting)  # not the first step
    assert not plans.plan_offered(None, waiting)  # a proposal of no incident
    assert not plans.plan_offered(incident("p1", finished=True), waiting)
    assert not plans.plan_offered(incident("p1"), proposal("p1", state=P.APPROVED))


def test_a_step_says_which_of_how_many_it_is() -> None:
    assert plans.position(incident("p1", "p2"), "p2") == (2, 2)
    assert plans.position(incident("p1", steps=1), "p1") is None
    assert plans.position(incident("p1"), "elsewhere") is None


def test_only_planned_asked_steps_that_opt_in_can_be_covered() -> None:
    assert plans.coverable(planned(2, "d2"))
    assert not plans.coverable(planned(2, ""))  # not planned yet
    assert not plans.coverable(planned(2, "d2", plan=False))


# ---------------------------------------------------------------------- the card


def card_text(p: Proposal, inc: Incident | None) -> str:
    return json.dumps(b.render(cards.proposal_card(p, incident=inc, telemetry=None)))


def test_the_first_card_says_step_1_of_2_and_offers_approve_plan_with_a_confirm() -> None:
    shown = card_text(proposal("p1", digest="d1"), incident("p1"))
    assert "Step 1 of 2" in shown and "stratus.plan" in shown and "Approve the whole plan?" in shown
    alone = card_text(proposal("p1", digest="d1", plan=False), incident("p1"))
    assert "Step 1 of 2" in alone and "stratus.plan" not in alone
    single = card_text(proposal("p1", digest="d1"), incident("p1", steps=1))
    assert "Step 1" not in single and "stratus.plan" not in single


def test_a_step_approved_with_the_plan_says_so_and_by_whom() -> None:
    carried = Vote(user="U0ALICE", choice="approve", digest="d2", at=NOW, with_plan="p1")
    shown = card_text(
        proposal("p2", state=P.EXECUTED, digest="d2", votes=[carried]), incident("p1", "p2")
    )
    assert "Step 2 of 2" in shown and "Approved with the plan by" in shown and "U0ALICE" in shown
    assert "stratus.approve" not in shown
