"""Every way a model can fail ends in the offline plan, with a note, within the time bound.

Issue 16, item 21: an answer the client could not parse (``choices: []``) raised past the
planner's fallback, and the incident stayed in ``diagnosing`` for ever. Each shape here is
served over real HTTP by the lab's fake OpenAI-compatible server to the real OpenAI client, as
``planner_from_env`` builds it; the workflow test at the end drives a whole incident.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from agents.llm import LLMPlanner, planner_from_env
from agents.planner.offline import OfflinePlanner
from agents.snapshot import Snapshot
from incidents.model import IncidentState
from incidents.repository import IncidentEventType
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.llm import FakeChatServer
from policies.model import Rule
from proposals.service import ProposalService
from store.db import Store
from tests.agents.llm.conftest import diagnosis_json, request_for
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.reads import ClusterReader

TIMEOUT = 8.0
HUGE = 4 * 1024 * 1024


def _no_message() -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop"}]}  # fmt: skip


# (name, one script entry): every entry is served for every request of the planning.
SHAPES: list[tuple[str, dict[str, Any]]] = [
    ("empty choices", {"raw": {"choices": []}}),
    ("no choices", {"raw": {"id": "x", "object": "chat.completion"}}),
    ("null answer", {"raw": None}),
    ("a list for an answer", {"raw": []}),
    ("choice without a message", {"raw": _no_message()}),
    ("not JSON at all", {"body": "<html><body>502 Bad Gateway</body></html>"}),
    ("truncated body", {"content": diagnosis_json(), "truncate": True}),
    ("refusal", {"refusal": "I can't help with that."}),
    ("cut at the token limit", {"content": '{"healthy": false, "ki', "finish_reason": "length"}),
    ("empty content", {"content": ""}),
    ("unknown tool", {"tool_calls": [{"name": "delete_namespace", "arguments": {}}]}),
    ("tool arguments not JSON", {"tool_calls": [{"name": "logs", "arguments": "{not json"}]}),
    ("tool arguments missing", {"tool_calls": [{"name": "pod_status", "arguments": {}}]}),
    ("bad request", {"status": 400, "error": "context too long"}),
    ("unauthorized", {"status": 401, "error": "bad key"}),
    ("rate limited", {"status": 429, "error": "slow down"}),
    ("server error", {"status": 500, "error": "boom"}),
    ("huge answer", {"content": diagnosis_json(summary="x" * HUGE)}),
]


def planner(server: FakeChatServer, reader: ClusterReader, timeout: float = TIMEOUT) -> LLMPlanner:
    found = planner_from_env(
        reader,
        {
            "OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "sk-test",
            "STRATUS_MODEL": "local-model",
            "STRATUS_LLM_TIMEOUT": str(timeout),
        },
    )
    assert found is not None
    return found


@pytest.mark.parametrize("entry", [e for _, e in SHAPES], ids=[n for n, _ in SHAPES])
def test_every_model_failure_falls_back_to_the_offline_plan_with_a_note(
    entry: dict[str, Any], injected: Snapshot, reader: ClusterReader, fake_llm: FakeChatServer
) -> None:
    fake_llm.load([entry] * 12)
    request = request_for(injected)
    started = time.monotonic()
    result = planner(fake_llm, reader).plan(request)
    elapsed = time.monotonic() - started

    assert result.planner == "offline", result.notes
    assert result.diagnosis == request.offline.diagnosis
    assert [c.key() for c in result.candidates] == [c.key() for c in request.offline.candidates]
    assert any("offline plan is used" in note for note in result.notes), result.notes
    assert elapsed < TIMEOUT + 5
    assert 1 <= result.usage.model_calls <= 8
    assert all(len(note) <= 1_000 for note in result.notes)  # a note, not the answer


# ------------------------------------------------------------------ the whole incident


@pytest.fixture
def wstore(tmp_path: Path) -> Any:
    store = Store(tmp_path / "model-failures.db")
    yield store
    store.close()


@pytest.mark.parametrize(
    "entry",
    [{"raw": {"choices": []}}, {"body": "not json"}, {"refusal": "no"}],
    ids=["empty choices", "not JSON", "refusal"],
)
def test_an_incident_never_stays_in_diagnosing_when_the_model_fails(
    entry: dict[str, Any],
    lab: Lab,
    kube: KubeClient,
    wstore: Store,
    fake_llm: FakeChatServer,
) -> None:
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    lab.settle()
    fake_llm.load([entry] * 40)
    policy = PolicyBox()
    policy.set(Rule(name="ask", decision="ask"))
    service = ProposalService(
        store=wstore, executor=Executor(kube, wstore, lock_wait=0.5), policy=policy
    )
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=OfflinePlanner(),
        llm=planner(fake_llm, ClusterReader(kube)),
        config=WorkflowConfig(settle_timeout=5, poll_interval=0.05),
    )
    incident, _ = flow.start("hotel", requester="cli:alice")
    done = flow.advance(incident.id)

    assert done.state == IncidentState.AWAITING_APPROVAL, done.state
    assert done.planner == "offline"
    notes = [
        e.event.message
        for e in flow.incidents.events(incident_id=incident.id)
        if e.event.type == IncidentEventType.NOTE
    ]
    assert any("offline plan is used" in n for n in notes), notes
    assert fake_llm.requests  # the model was asked
    assert json.dumps(notes).count("x" * 100) == 0
