"""Issue 22, item 2: a candidate that changes nothing is never an attempt.

Seen: a second attempt whose action would change nothing (``set-image`` to the image already
running) was recorded with an empty proposal id; ``stratus eval``'s report then asked the
service for ``''``, raised ``ProposalNotFound``, and the scenario was lost. Wanted: the plan
skips such a candidate with a note, and nothing downstream ever sees an empty id. Against the
lab over real HTTP, the real proposal service and the eval's own report."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agents.model import Candidate, Category, Diagnosis, PlanResult, ResourceKey, Step
from agents.planner import PlanRequest
from cli import eval_commands
from incidents.model import Attempt, IncidentState
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from policies.model import Rule
from proposals.service import ProposalService
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient
from tools.objects import ObjectRef

St = IncidentState


@pytest.fixture
def policy() -> PolicyBox:
    box = PolicyBox()
    box.set(Rule(name="allow-everything", decision="allow", allow_irreversible=True))
    return box


class SameImageFirst:
    """Its first idea sets geo's image to the one geo already runs; then the real fix."""

    name = "scripted"

    def __init__(self, image: str) -> None:
        self.image = image

    def plan(self, request: PlanRequest) -> PlanResult:
        candidates = [
            Candidate(
                steps=[
                    Step(
                        action="set-image",
                        kind="Deployment",
                        name="geo",
                        params={"container": "geo", "image": self.image},
                    )
                ],
                intent=f"set geo's image to {self.image}",
                mechanism="scaled-to-zero",
            ),
            Candidate(
                steps=[
                    Step(
                        action="scale",
                        kind="Deployment",
                        name="recommendation",
                        params={"replicas": 1},
                    )
                ],
                intent="scale recommendation to 1",
                mechanism="scaled-to-zero",
            ),
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


def test_a_candidate_that_changes_nothing_is_skipped_with_a_note_and_the_report_has_it_all(
    lab: Lab, kube: KubeClient, service: ProposalService
) -> None:
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    lab.settle()
    geo = kube.get(ObjectRef("Deployment", "geo", "hotel"))
    running = geo["spec"]["template"]["spec"]["containers"][0]["image"]
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=SameImageFirst(running),
        config=WorkflowConfig(settle_timeout=20, poll_interval=2.0),
        pause=lambda seconds: lab.control.post("/lab/v1/settle", {"horizon": seconds}),
    )
    incident, _ = flow.start("hotel", requester="cli:alice")
    done = flow.advance(incident.id, budget=200)
    assert done.state == St.RESOLVED, done.reason
    # The eval's report reads every proposal the incident names (it asked for '' before).
    report = eval_commands._report(done, service)
    assert report["attempts"] == 1 and report["actions"] == 1 and report["undos"] == 0
    # The same-image candidate was never an attempt: the one attempt is the real fix.
    assert [a.candidate.steps[0].action for a in done.attempts] == ["scale"]
    assert all(pid for a in done.attempts for pid in [*a.proposals, *a.undo_proposals])
    notes = [e.event.message for e in flow.incidents.events(incident_id=incident.id)]
    assert any("changes nothing" in n and "geo" in n for n in notes), notes
    assert not [p for p in service.by_incident(incident.id) if p.action == "set-image"]


def test_an_attempt_stored_with_an_empty_id_reads_it_as_a_skipped_step() -> None:
    """Incidents stored before: the empty place becomes the step number it stood for."""
    candidate = Candidate(
        steps=[
            Step(action="scale", kind="Deployment", name=n, params={"replicas": 1})
            for n in ("a", "b", "c")
        ],
        intent="three",
    )
    stored = {
        "number": 1,
        "candidate": candidate.model_dump(mode="json"),
        "transaction_id": "tx",
        "proposals": ["prop-1", "", "prop-3"],
        "undo_proposals": ["", "prop-u"],
        "started_at": datetime(2026, 1, 1, tzinfo=UTC).isoformat(),
    }
    attempt = Attempt.model_validate(stored)
    assert attempt.proposals == ["prop-1", "prop-3"] and attempt.skipped == [2]
    assert attempt.undo_proposals == ["prop-u"]
    assert attempt.step_number("prop-3") == 3 and attempt.steps_taken == 3
    assert not attempt.last_step_skipped
