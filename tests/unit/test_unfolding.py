"""``incidents.unfolding.moving``: which recent changes make a namespace "still moving"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from agents.snapshot import Snapshot
from incidents.unfolding import moving

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def at(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str, *, created: float, ready: bool, restarted: float | None = None
) -> dict[str, Any]:
    last = {"terminated": {"finishedAt": at(restarted)}} if restarted is not None else {}
    return {
        "metadata": {"name": name, "creationTimestamp": at(created)},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": "app", "lastState": last}],
        },
    }


def deployment(updated: int, wanted: int, *, changed: float, reason: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "payment", "generation": 2},
        "spec": {"replicas": wanted},
        "status": {
            "observedGeneration": 2,
            "updatedReplicas": updated,
            "conditions": [
                {"type": "Progressing", "lastUpdateTime": at(changed), "reason": reason}
            ],
        },
    }


def snap(*, pods: list[dict[str, Any]] = [], deployments: list[dict[str, Any]] = []) -> Snapshot:  # noqa: B006
    return Snapshot(namespace="shop", objects={"Pod": pods, "Deployment": deployments}, cluster={})


def test_a_pod_started_moments_ago_and_not_ready_is_moving() -> None:
    assert moving(snap(pods=[pod("payment-new", created=2, ready=False)]), now=NOW) == [
        "pod payment-new started moments ago and is not ready yet"
    ]


def test_a_pod_broken_for_an_hour_is_not_moving_however_unready() -> None:
    assert moving(snap(pods=[pod("payment-old", created=3600, ready=False)]), now=NOW) == []


def test_a_restart_in_the_last_minute_is_moving_and_ready_pods_never_are() -> None:
    restarting = pod("payment-a", created=3600, ready=False, restarted=5)
    fine = pod("frontend-b", created=1, ready=True)
    assert moving(snap(pods=[restarting, fine]), now=NOW) == [
        "pod payment-a restarted moments ago and is not ready yet"
    ]


def test_a_rollout_progressing_now_is_moving_a_stuck_or_old_one_is_not() -> None:
    now = deployment(1, 2, changed=3, reason="ReplicaSetUpdated")
    assert moving(snap(deployments=[now]), now=NOW) == [
        "deployment/payment is rolling out (1 of 2 updated)"
    ]
    stuck = deployment(1, 2, changed=3, reason="ProgressDeadlineExceeded")
    old = deployment(1, 2, changed=600, reason="ReplicaSetUpdated")
    assert moving(snap(deployments=[stuck, old]), now=NOW) == []


def test_a_deployment_scaled_to_zero_moments_ago_is_moving_until_then_or_restored() -> None:
    """bench_bot after issue 18: ``investigate hotel`` 0.2 s after recommendation was scaled
    to 0 saw no pod left and no caller failing yet, and ended "nothing is wrong" — a change of
    the last minute that had not shown its effect."""

    def scaled(seconds_ago: float) -> dict[str, Any]:
        return {
            "type": "Normal",
            "reason": "ScalingReplicaSet",
            "involvedObject": {"kind": "Deployment", "name": "recommendation"},
            "lastTimestamp": at(seconds_ago),
            "message": "Scaled down replica set recommendation-abc to 0 from 1",
        }

    def look(replicas: int, event: dict[str, Any]) -> list[str]:
        zero = {"metadata": {"name": "recommendation"}, "spec": {"replicas": replicas}}
        found = Snapshot(
            namespace="hotel", objects={"Deployment": [zero], "Event": [event]}, cluster={}
        )
        return moving(found, now=NOW)

    assert look(0, scaled(1)) == ["deployment/recommendation was scaled to 0 moments ago"]
    assert look(0, scaled(120)) == []  # at zero for minutes: settled, intentional or not
    assert look(1, scaled(1)) == []  # scaled back up: the pods' own signals say the rest
