"""Issue 22, items 3 and 2, on a Deployment with four revisions: a rollback goes back to the
newest revision not seen failing, by evidence, and says why it passed over the others; a
candidate that would change nothing is skipped by the offline planner. Pure: revisions and
events in, reasons out."""

from __future__ import annotations

from typing import Any

from agents.analyzers import _workloads as w
from agents.model import Candidate, Step
from agents.planner.unchanged import unchanged
from agents.snapshot import Snapshot


def _rs(revision: int) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"web-r{revision}",
            "annotations": {w.REVISION: str(revision)},
            "ownerReferences": [{"uid": "u-web"}],
        },
        "spec": {
            "template": {"spec": {"containers": [{"name": "web", "image": f"web:{revision}"}]}}
        },
    }


def _event(pod: str, reason: str, message: str, count: int = 1) -> dict[str, Any]:
    return {
        "type": "Warning",
        "reason": reason,
        "message": message,
        "count": count,
        "involvedObject": {"kind": "Pod", "name": pod},
    }


def _snapshot(*events: dict[str, Any]) -> tuple[Snapshot, dict[str, Any]]:
    web = {
        "metadata": {"name": "web", "uid": "u-web", "annotations": {w.REVISION: "4"}},
        "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web:4"}]}}},
    }
    snapshot = Snapshot(
        namespace="ns",
        objects={
            "Deployment": [web],
            "ReplicaSet": [_rs(r) for r in (1, 2, 3, 4)],
            "Event": list(events),
        },
        cluster={},
    )
    return snapshot, web


READY_FAILED = "Readiness probe failed: dial tcp 10.0.0.1:9999: connect: connection refused"


def test_revisions_whose_pods_crashed_or_never_got_ready_are_passed_over_saying_why() -> None:
    snapshot, web = _snapshot(
        _event("web-r3-abcde", "BackOff", "Back-off restarting failed container web"),
        _event("web-r2-fghij", "Unhealthy", READY_FAILED, count=12),
    )
    change = w.latest_change(snapshot, web)
    assert change is not None and change.previous == 1
    assert sorted(change.skipped) == [2, 3]
    assert change.skipped[3].startswith("its pods failed to run (pod/web-r3-abcde: BackOff")
    assert change.skipped[2].startswith("its pods' readiness kept failing (pod/web-r2-fghij")


def test_one_readiness_failure_while_starting_is_no_evidence_against_a_revision() -> None:
    snapshot, web = _snapshot(_event("web-r3-abcde", "Unhealthy", READY_FAILED, count=1))
    change = w.latest_change(snapshot, web)
    assert change is not None and change.previous == 3 and change.skipped == {}


def test_the_offline_planner_skips_a_candidate_that_changes_nothing_saying_so() -> None:
    """Issue 22, item 2: set-image to the image running is no candidate; the plan says so."""
    snapshot, _ = _snapshot()
    same = Candidate(
        steps=[
            Step(
                action="set-image",
                kind="Deployment",
                name="web",
                params={"image": "web:4", "container": "web"},
            )
        ],
        intent="set web's image to web:4",
    )
    other = same.model_copy(
        update={"steps": [same.steps[0].model_copy(update={"params": {"image": "web:3"}})]}
    )
    back = Candidate(
        steps=[
            Step(action="rollout-undo", kind="Deployment", name="web", params={"to_revision": 4})
        ],
        intent="roll back to the revision running",
    )
    assert unchanged(same, snapshot) == "deployment/web already looks like that"
    assert unchanged(other, snapshot) is None
    assert unchanged(back, snapshot) == "deployment/web already looks like that"
