"""Fixtures for the LLM planner: a lab namespace with a real fault (and injected text), the
request the workflow would build for it, scripted model answers, and the fake model server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agents import snapshot as snapshots
from agents.model import (
    Candidate,
    Category,
    Diagnosis,
    Evidence,
    Finding,
    PlanResult,
    ResourceKey,
    Step,
)
from agents.planner import PlanRequest
from agents.snapshot import Snapshot
from lab.llm import FakeChatServer
from tests.conftest import Lab
from tools.k8s import KubeClient

SCENARIO = "hotel-profile-prompt-injection"
PROFILE = ResourceKey(kind="Deployment", name="profile", namespace="hotel")


@pytest.fixture
def injected(lab: Lab, kube: KubeClient) -> Snapshot:
    """The hotel namespace after the prompt-injection scenario, read once."""
    lab.control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    lab.settle()
    return snapshots.take(kube, "hotel")


def finding() -> Finding:
    return Finding(
        analyzer="test",
        mechanism="rejected-config-value",
        category=Category.CONFIGURATION,
        resource=PROFILE,
        summary="profile crashes: its image rejects the value of LOG_LEVEL",
        evidence=[
            Evidence(source="log", ref="pod/profile", text="FATAL invalid value for LOG_LEVEL")
        ],
    )


def offline_result() -> PlanResult:
    """What the offline planner would say (hand-made: this suite does not depend on it)."""
    return PlanResult(
        diagnosis=Diagnosis(
            resource=PROFILE,
            category=Category.CONFIGURATION,
            mechanism="rejected-config-value",
            summary="profile's LOG_LEVEL was changed to a value its image rejects",
            findings=[finding()],
        ),
        candidates=[
            Candidate(
                steps=[Step(action="rollout-undo", kind="Deployment", name="profile")],
                intent="Roll back deployment/profile to the previous revision",
                score=10.0,
            )
        ],
    )


def request_for(snap: Snapshot, **extra: Any) -> PlanRequest:
    return PlanRequest(snapshot=snap, findings=[finding()], offline=offline_result(), **extra)


def diagnosis_json(**overrides: Any) -> dict[str, Any]:
    return {
        "healthy": False,
        "kind": "Deployment",
        "name": "profile",
        "category": "configuration",
        "mechanism": "rejected-config-value",
        "summary": "LOG_LEVEL of profile holds a value the image rejects; it crash-loops.",
        "evidence": [
            {"source": "log", "ref": "deployment/profile", "text": "invalid value for LOG_LEVEL"}
        ],
        **overrides,
    }


def step(action: str, kind: str, name: str, **params: Any) -> dict[str, Any]:
    return {"action": action, "kind": kind, "name": name, "params_json": json.dumps(params)}


def mitigation_json(*steps: dict[str, Any]) -> dict[str, Any]:
    return {
        "candidates": [
            {"steps": [s], "intent": f"{s['action']} {s['name']}", "why": "reversible"}
            for s in steps
        ]
    }


@pytest.fixture
def fake_llm() -> Iterator[FakeChatServer]:
    server = FakeChatServer().start()
    yield server
    server.stop()
