"""Transactional No-Regression with a model that picks the plausible but wrong fix first.

The scenario: rate 1.2 crashed on start and an hour later was "hot-fixed" to 1.3, a tag that
was never pushed. A (scripted) model reads "image pull failure after a rollout" and rolls back
one revision — straight into the crashing release. The workflow sees the namespace get worse,
undoes the rollback through the proposal service, and the next candidate (the offline
planner's: back to the last revision that did not fail) resolves it. Real HTTP throughout:
the lab, the fake OpenAI-compatible server driven over the real OpenAI client.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.llm import planner_from_env
from agents.planner.offline import OfflinePlanner
from incidents.model import IncidentState
from incidents.repository import IncidentEventType
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.llm import FakeChatServer
from policies.model import Rule
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.db import Store
from tests.agents.llm.conftest import step
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from tools.reads import ClusterReader

SCENARIO = "hotel-rate-failed-hotfix"


def diagnosis() -> dict[str, object]:
    return {
        "healthy": False,
        "kind": "Deployment",
        "name": "rate",
        "category": "bad-deploy",
        "mechanism": "image-pull-failed",
        "summary": "rate's latest rollout points at an image tag that cannot be pulled",
        "evidence": [{"source": "event", "ref": "deployment/rate", "text": "ErrImagePull"}],
    }


def one_revision_back() -> dict[str, object]:
    return {
        "candidates": [
            {
                "steps": [step("rollout-undo", "Deployment", "rate")],
                "intent": "roll rate back to the previous revision",
                "why": "the failure started with the last rollout; a rollback is reversible",
            }
        ]
    }


@pytest.fixture
def fake_llm() -> Iterator[FakeChatServer]:
    server = FakeChatServer().start()
    yield server
    server.stop()


@pytest.fixture
def wstore(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "tnr.db")
    yield store
    store.close()


def test_the_worse_first_attempt_is_undone_and_the_next_resolves(
    lab: Lab, kube: KubeClient, wstore: Store, fake_llm: FakeChatServer
) -> None:
    lab.control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    lab.settle()
    # Each planning round the model answers the same way; the round after the undo its
    # rollback is already tried, so the offline planner's candidate comes next.
    fake_llm.load([{"content": diagnosis()}, {"content": one_revision_back()}] * 2)
    llm = planner_from_env(
        ClusterReader(kube),
        {"OPENAI_BASE_URL": fake_llm.url, "OPENAI_API_KEY": "sk-test", "STRATUS_MODEL": "m"},
    )
    assert llm is not None
    policy = PolicyBox()
    policy.set(Rule(name="allow-all", decision="allow", allow_irreversible=True))
    service = ProposalService(
        store=wstore, executor=Executor(kube, wstore, lock_wait=0.5), policy=policy
    )
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=OfflinePlanner(),
        llm=llm,
        config=WorkflowConfig(settle_timeout=10, poll_interval=0.05),
    )
    incident, _ = flow.start("hotel", requester="cli:alice")
    done = flow.advance(incident.id)

    assert done.state == IncidentState.RESOLVED, [
        (a.candidate.intent, a.outcome) for a in done.attempts
    ]
    first, second = done.attempts
    assert first.candidate.steps[0].params == {} and first.verdict == "worse"
    assert first.outcome == "undone"
    assert service.get(first.proposals[0]).state == ProposalState.UNDONE
    assert service.get(first.undo_proposals[0]).state == ProposalState.EXECUTED
    assert second.verdict == "healthy" and second.candidate.steps[0].params == {"to_revision": 1}
    image = kube.get(ObjectRef("Deployment", "rate", "hotel"))["spec"]["template"]["spec"][
        "containers"
    ][0]["image"]
    assert image == "stratus/hotel-rate:1.0"
    verified = [
        e.event.data
        for e in flow.incidents.events(incident_id=incident.id)
        if e.event.type == IncidentEventType.VERIFIED
    ]
    assert verified[0]["verdict"] == "worse"
    assert verified[0]["after"]["parts"]["crash_looping_containers"] >= 1
    assert verified[0]["after"]["total"] > verified[0]["before"]["total"]
    assert done.usage.model_calls >= 2 and done.planner == "llm"
    assert lab.control.get(f"/lab/v1/scenarios/{SCENARIO}/check")["passed"]
