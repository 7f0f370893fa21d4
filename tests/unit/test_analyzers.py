"""The analyzers and the offline planner on snapshots recorded from lab scenarios: no lab, no
sockets. The same judgement as tests/agents/test_scenarios_offline.py makes live (the
diagnosis names the scenario's root cause, in its category, with evidence), plus what being a
pure function of a snapshot means: the same findings twice, and the snapshot left untouched."""

from __future__ import annotations

import copy

import pytest

from agents.analyzers import all_analyzers, analyze
from agents.planner.offline import plan_offline
from tests.unit.snapshots import NAMES, recorded


def test_the_fixtures_hold_healthy_and_faulty_namespaces_of_both_apps() -> None:
    assert {"noop-hotel", "noop-shop"} <= set(NAMES)
    assert len([n for n in NAMES if not n.startswith("noop-")]) >= 10


@pytest.mark.parametrize("name", NAMES)
def test_the_offline_planner_diagnoses_the_recorded_fault(name: str) -> None:
    record = recorded(name)
    plan = plan_offline(record.snapshot())
    if record.root_cause is None:
        assert plan.diagnosis is None, plan.diagnosis
        assert plan.candidates == []
        return
    assert plan.diagnosis is not None, f"{name}: nothing diagnosed"
    wanted = {tuple(r) for r in record.root_cause["resources"]}
    diagnosed = (plan.diagnosis.resource.kind, plan.diagnosis.resource.name)
    assert diagnosed in wanted, f"diagnosed {diagnosed}, the root cause is {sorted(wanted)}"
    if record.root_cause["category"] != "multiple":
        assert plan.diagnosis.category == record.root_cause["category"]
    assert plan.diagnosis.evidence, "a diagnosis cites what it rests on"
    assert plan.candidates, "a diagnosed fault has something to try"


@pytest.mark.parametrize("name", NAMES)
def test_every_analyzer_is_a_pure_function_of_the_snapshot(name: str) -> None:
    snapshot = recorded(name).snapshot()
    untouched = copy.deepcopy(snapshot)
    for analyzer in all_analyzers():
        first, second = analyzer(snapshot), analyzer(snapshot)
        assert first == second, analyzer.__qualname__
    assert snapshot == untouched, "an analyzer changed the snapshot it was given"
    assert analyze(snapshot) == analyze(untouched)


@pytest.mark.parametrize("name", ["noop-hotel", "noop-shop"])
def test_a_healthy_namespace_has_no_finding(name: str) -> None:
    findings = analyze(recorded(name).snapshot())
    assert findings == [], [(f.mechanism, str(f.resource)) for f in findings]
