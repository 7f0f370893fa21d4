"""Localization as a pure function: findings and a snapshot in, ranked diagnoses out."""

from __future__ import annotations

from typing import Any

from agents.diagnose import diagnose
from agents.model import Category, Evidence, Finding, ResourceKey
from agents.snapshot import Snapshot


def deployment(name: str, *, secret: str = "") -> dict[str, Any]:
    env = [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": secret, "key": "p"}}}]
    container = {"name": name, "image": f"{name}:1", **({"env": env} if secret else {})}
    return {
        "kind": "Deployment",
        "metadata": {"name": name, "uid": name},
        "spec": {
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}
        },
    }


def service(name: str) -> dict[str, Any]:
    return {"kind": "Service", "metadata": {"name": name}, "spec": {"selector": {"app": name}}}


def snapshot(logs: dict[str, str] | None = None, **objects: list[dict[str, Any]]) -> Snapshot:
    return Snapshot("ns", objects, {}, logs or {})


def finding(
    kind: str, name: str, mechanism: str, *, confidence: float = 0.8, **facts: Any
) -> Finding:
    return Finding(
        analyzer="test",
        mechanism=mechanism,
        category=Category.CONFIGURATION,
        resource=ResourceKey(kind=kind, name=name, namespace="ns"),
        summary=f"{kind}/{name}: {mechanism}",
        evidence=[Evidence(source="status", ref=f"{kind.lower()}/{name}", text=mechanism)],
        confidence=confidence,
        facts=facts,
    )


def test_a_service_without_endpoints_is_a_symptom_of_the_workload_behind_it() -> None:
    snap = snapshot(Deployment=[deployment("geo")], Service=[service("geo")])
    found = diagnose(
        [
            finding("Service", "geo", "no-endpoints", confidence=0.9),
            finding("Deployment", "geo", "oom-killed"),
        ],
        snap,
    )
    assert [str(d.resource) for d in found] == ["Deployment/geo"]
    assert {f.mechanism for f in found[0].findings} == {"oom-killed", "no-endpoints"}


def test_callers_errors_lead_to_the_callee_and_are_cited() -> None:
    caller_pod = {
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "ownerReferences": [{"kind": "Deployment", "name": "web", "controller": True}],
        },
    }
    logs = {"pod/web-1/web": "ERROR request to geo:8083 failed: connection refused"}
    snap = snapshot(
        logs,
        Deployment=[deployment("geo"), deployment("web")],
        Service=[service("geo")],
        Pod=[caller_pod],
    )
    found = diagnose(
        [
            finding("Deployment", "web", "caller-errors", confidence=0.6),
            finding("Deployment", "geo", "crash-loop"),
        ],
        snap,
    )
    assert str(found[0].resource) == "Deployment/geo"
    assert any(e.source == "log" and e.ref == "pod/web-1" for e in found[0].evidence)


def test_duplicate_findings_on_one_resource_merge_and_the_surest_names_it() -> None:
    snap = snapshot(Deployment=[deployment("geo")])
    found = diagnose(
        [
            finding("Deployment", "geo", "crash-loop", confidence=0.5),
            finding("Deployment", "geo", "missing-env", confidence=0.9),
        ],
        snap,
    )
    assert len(found) == 1 and found[0].mechanism == "missing-env" and len(found[0].findings) == 2


def test_a_rollout_that_changed_the_caller_beats_the_secret_it_reads() -> None:
    snap = snapshot(Deployment=[deployment("api", secret="db")])
    found = diagnose(
        [
            finding("Secret", "db", "credentials-rejected"),
            finding("Deployment", "api", "rollout-broke-calls", rollback_to=1),
        ],
        snap,
    )
    assert str(found[0].resource) == "Deployment/api"


def test_nothing_found_is_no_diagnosis_and_a_weak_hint_alone_is_not_one() -> None:
    snap = snapshot(Deployment=[deployment("geo")])
    assert diagnose([], snap) == []
    assert diagnose([finding("Deployment", "geo", "hint", confidence=0.3)], snap) == []
