"""Issue 22, item 1: a fix that uncovers a hidden fault is kept, and the fault it revealed is
the next attempt.

Seen: a caller Deployment scaled to 0 hid a broken selector on the Service it calls. Stratus
scaled the caller back up — correct — its requests then failed against the broken Service,
the namespace's score rose, TNR undid the scale-up as "worse" and escalated with "no
candidates left". Wanted: the new failures are attributed to the callee the attempt did not
write; the scale-up is kept, the callee diagnosed and fixed next, and the card and the summary
say which it was. Whole incidents on the offline planner, against the lab over real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.model import Candidate, Category, Diagnosis, PlanResult, ResourceKey, Step
from agents.planner import PlanRequest
from agents.planner.offline import OfflinePlanner
from bot import blocks, cards, summary
from incidents.model import Incident, IncidentState
from incidents.repository import IncidentEventType
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from policies.model import Rule
from proposals.model import ProposalState
from proposals.service import ProposalService
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

St = IncidentState
P = ProposalState
REVEALED = "revealed a fault already there behind it"


@pytest.fixture
def policy() -> PolicyBox:
    box = PolicyBox()
    box.set(Rule(name="allow-everything", decision="allow", allow_irreversible=True))
    return box


def flow(lab: Lab, service: ProposalService, kube: KubeClient, planner: Any) -> IncidentWorkflow:
    return IncidentWorkflow(
        service=service,
        kube=kube,
        offline=planner,
        config=WorkflowConfig(settle_timeout=20, poll_interval=2.0),
        # The lab's instant clock: letting time pass is a settle with that horizon, as
        # ``stratus eval`` does.
        pause=lambda seconds: lab.control.post("/lab/v1/settle", {"horizon": seconds}),
    )


def run(lab: Lab, service: ProposalService, kube: KubeClient, scenario: str, ns: str) -> Incident:
    lab.control.post(f"/lab/v1/scenarios/{scenario}/inject")
    lab.settle()
    workflow = flow(lab, service, kube, OfflinePlanner())
    incident, _ = workflow.start(ns, requester="cli:alice")
    return workflow.advance(incident.id, budget=200)


@pytest.mark.parametrize(
    ("scenario", "namespace", "caller", "callee", "worse"),
    [
        ("s3-hotel-zero-caller-hides-geo-selector", "hotel", "search", "service/geo", True),
        ("s3-hotel-zero-caller-hides-db-selector", "hotel", "user", "service/mongodb-user", True),
        ("s3-shop-zero-caller-hides-redis-port", "shop", "cart", "service/redis", False),
        ("s3-shop-zero-caller-hides-payment-policy", "shop", "checkout", "", False),
    ],
)
def test_a_fix_that_reveals_the_next_fault_is_kept_and_the_next_fault_fixed(
    lab: Lab,
    kube: KubeClient,
    service: ProposalService,
    scenario: str,
    namespace: str,
    caller: str,
    callee: str,
    worse: bool,
) -> None:
    done = run(lab, service, kube, scenario, namespace)
    assert done.state == St.RESOLVED, (done.reason, [(a.verdict, a.outcome) for a in done.attempts])
    first, *rest = done.attempts
    assert first.candidate.steps[0].name == caller and first.candidate.steps[0].action == "scale"
    # The first fix is kept: executed, never undone, no undo proposed for it.
    assert first.undo_proposals == [] and first.outcome == "improved"
    assert service.get(first.proposals[0]).state == P.EXECUTED
    assert rest and rest[-1].verdict == "healthy"
    assert all(not a.undo_proposals for a in done.attempts)
    if worse:  # the score rose, and the look says whose that was
        assert first.verdict == "worse" and first.revealed == [callee] and first.caused == []
        assert rest[0].candidate.steps[0].name == callee.split("/")[1]
    check = lab.control.get(f"/lab/v1/scenarios/{scenario}/check")
    assert check["mitigated"] and check["no_collateral_damage"], check


def test_the_verification_line_the_card_and_the_summary_say_it_revealed_a_fault(
    lab: Lab, kube: KubeClient, service: ProposalService
) -> None:
    done = run(lab, service, kube, "s3-hotel-zero-caller-hides-geo-selector", "hotel")
    workflow = flow(lab, service, kube, OfflinePlanner())
    verified = [
        e.event
        for e in workflow.incidents.events(incident_id=done.id)
        if e.event.type == IncidentEventType.VERIFIED
    ]
    assert verified[0].data["verdict"] == "worse"
    assert verified[0].data["revealed"] == ["service/geo"]
    assert REVEALED in verified[0].message and "service/geo" in verified[0].message
    scale_up = service.get(done.attempts[0].proposals[0])
    card = json.dumps(blocks.render(cards.proposal_card(scale_up, incident=done, telemetry=None)))
    assert "Verification:" in card and REVEALED in card and "the fix is kept" in card
    proposals = service.by_incident(done.id)
    events = workflow.incidents.events(incident_id=done.id)
    said = json.dumps(blocks.render(summary.summary_blocks(done, proposals, events)))
    assert REVEALED in said and "service/geo" in said


class HarmThenFix:
    """Scales geo to zero first (it breaks search's calls), then fixes recommendation."""

    name = "scripted"

    def plan(self, request: PlanRequest) -> PlanResult:
        candidates = [
            Candidate(
                steps=[Step(action="scale", kind="Deployment", name=name, params={"replicas": n})],
                intent=f"scale {name} to {n}",
                mechanism="scaled-to-zero",
            )
            for name, n in (("geo", 0), ("recommendation", 1))
        ]
        return PlanResult(
            diagnosis=Diagnosis(
                resource=ResourceKey(kind="Deployment", name="recommendation"),
                category=Category.CAPACITY,
                mechanism="scaled-to-zero",
                summary="recommendation has no replicas",
            ),
            candidates=[c for c in candidates if c.key() not in request.tried],
            planner=self.name,
        )


def test_an_attempt_that_breaks_something_is_still_undone_and_says_what_it_broke(
    lab: Lab, kube: KubeClient, service: ProposalService
) -> None:
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    lab.settle()
    workflow = flow(lab, service, kube, HarmThenFix())
    incident, _ = workflow.start("hotel", requester="cli:alice")
    done = workflow.advance(incident.id, budget=200)
    assert done.state == St.RESOLVED
    harm = done.attempts[0]
    assert harm.verdict == "worse" and harm.outcome == "undone" and harm.revealed == []
    assert "service/geo" in harm.caused
    undone = service.get(harm.proposals[0])
    card = json.dumps(blocks.render(cards.proposal_card(undone, incident=done, telemetry=None)))
    assert "it broke something" in card and "service/geo" in card


def test_a_rollback_goes_back_past_every_revision_seen_failing_and_says_why(
    lab: Lab, kube: KubeClient, service: ProposalService
) -> None:
    """Issue 22, item 3: three bad releases in a row (readiness never passing, a crash loop, a
    tag never pushed): one rollback, to revision 1, the newest not seen failing; it says why
    it passes over revisions 3 and 2."""
    scenario = "s3-hotel-three-bad-revisions"
    done = run(lab, service, kube, scenario, "hotel")
    assert done.state == St.RESOLVED, (done.reason, [a.candidate.key() for a in done.attempts])
    (attempt,) = done.attempts
    (step,) = attempt.candidate.steps
    assert step.action == "rollout-undo" and step.params == {"to_revision": 1}
    assert "the newer revisions 3 and 2 were seen failing" in attempt.candidate.intent
    why = attempt.candidate.why
    assert "revision 3: its pods failed to run" in why
    assert "revision 2: its pods' readiness kept failing" in why and "Readiness probe" in why
    check = lab.control.get(f"/lab/v1/scenarios/{scenario}/check")
    assert check["mitigated"] and check["no_collateral_damage"], check


def test_a_rollback_that_did_not_help_is_evidence_against_its_revision(
    lab: Lab, kube: KubeClient, service: ProposalService
) -> None:
    """Releases hours apart: the oldest bad revision's events have expired, so the first
    rollback lands on it. What that attempt saw fail sends the next rollback to revision 1 —
    never back to the same template under its new number."""
    scenario = "s3-hotel-three-bad-revisions-hours-apart"
    done = run(lab, service, kube, scenario, "hotel")
    assert done.state == St.RESOLVED, (done.reason, [a.candidate.key() for a in done.attempts])
    first, last = done.attempts[0], done.attempts[-1]
    assert first.candidate.steps[0].params == {"to_revision": 2} and first.outcome == "undone"
    assert any(c.startswith("pod/profile-") for c in first.caused)
    assert first.failed_pods and all(p.startswith("profile-") for p in first.failed_pods)
    (step,) = last.candidate.steps
    assert step.action == "rollout-undo" and step.params == {"to_revision": 1}
    assert "failed while attempt 1 of this incident ran" in last.candidate.why
    assert len(done.attempts) == 2
    check = lab.control.get(f"/lab/v1/scenarios/{scenario}/check")
    assert check["mitigated"] and check["no_collateral_damage"], check


def test_a_rollback_whose_pods_no_node_would_take_is_no_evidence_against_its_revision(
    lab: Lab, kube: KubeClient, service: ProposalService
) -> None:
    """A taint on every node masks the rollback that fixes an affinity: its pods stay Pending,
    so the rollback is judged "same" and undone — but a pod no node took says nothing of its
    template, and once the taint is gone the rollback is tried again and resolves it."""
    scenario = "s2-hotel-two-faults-taint-masks-affinity"
    done = run(lab, service, kube, scenario, "hotel")
    assert done.state == St.RESOLVED, (done.reason, [a.candidate.key() for a in done.attempts])
    first = done.attempts[0]
    assert first.candidate.steps[0].action == "rollout-undo" and first.outcome == "undone"
    assert first.failed_pods == []
    check = lab.control.get(f"/lab/v1/scenarios/{scenario}/check")
    assert check["mitigated"] and check["no_collateral_damage"], check
