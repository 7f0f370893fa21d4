"""The namespace health score: pure parts a person can check, and what the lab shows."""

from __future__ import annotations

import datetime as dt

from agents.health import (
    NamespaceState,
    PodState,
    ServiceState,
    WarningEvent,
    Workload,
    collect,
    error_signatures,
    in_transition,
    latest_lines,
    score,
    verdict,
)
from tests.conftest import Lab
from tools.k8s import KubeClient

WEB = {"app": "web"}


def state(**parts: object) -> NamespaceState:
    return NamespaceState("ns", **parts)  # type: ignore[arg-type]


def test_intentional_zero_replicas_and_completed_pods_are_healthy() -> None:
    quiet = state(
        workloads=(Workload("Deployment", "web", 0, 0, WEB),),
        pods=(PodState("job-x", "Succeeded", False, 0),),
        services=(ServiceState("web", WEB, 0),),
    )
    assert score(quiet).healthy and score(quiet).total == 0


def test_each_part_counts_what_is_wrong_and_names_it() -> None:
    broken = state(
        workloads=(Workload("Deployment", "web", 3, 1, WEB),),
        pods=(PodState("web-a", "Running", False, 1), PodState("web-b", "Running", True, 0)),
        services=(ServiceState("web", WEB, 0), ServiceState("other", {"app": "none"}, 0)),
    )
    result = score(broken)
    assert result.parts == {
        "crash_looping_containers": 1,
        "services_without_endpoints": 1,
        "unavailable_replicas": 2,
        "unready_pods": 1,
        "failing_requests": 0,
        "new_warning_events": 0,
    }
    assert result.details["services_without_endpoints"] == ["web"]
    assert result.details["unavailable_replicas"] == ["deployment/web (2)"]
    assert result.total == 3 + 3 + 2 * 2 + 1 and not result.healthy


def test_only_new_warnings_count_and_a_noisy_namespace_is_capped() -> None:
    noisy = state(
        warnings=tuple(
            WarningEvent("BackOff", f"pod/p{i}", f"2026-11-22T10:{i:02d}:00Z") for i in range(20)
        )
    )
    assert score(noisy, since="2026-11-22T10:17:00Z").parts["new_warning_events"] == 2
    assert score(noisy).parts["new_warning_events"] == 5  # capped
    assert score(noisy).healthy  # warnings alone do not make a namespace sick


def test_a_service_at_zero_that_callers_fail_against_is_without_endpoints() -> None:
    """Issue 18: ``hotel-recommendation-scaled-to-zero`` scored "2: 1 failure callers log"
    although the Service's endpoints were ``<none>``. A Service whose workload is at zero is
    left alone while nobody calls it (intentional zero), but once a caller's latest log lines
    fail against it, it is a Service without endpoints like any other (3 points)."""
    called = "frontend: ERROR request to web:# failed: no healthy upstream: service web has no"
    at_zero = state(
        workloads=(Workload("Deployment", "web", 0, 0, WEB),),
        services=(ServiceState("web", WEB, 0), ServiceState("web-db", {"app": "db"}, 0)),
        failing_requests=(called,),
    )
    result = score(at_zero)
    assert result.parts["services_without_endpoints"] == 1
    assert result.details["services_without_endpoints"] == ["web"]
    assert result.total == 3 + 2 and not result.healthy
    # A failure naming another service ("web-db", "web2") does not make this one dark.
    other = state(
        workloads=(Workload("Deployment", "web", 0, 0, WEB),),
        services=(ServiceState("web", WEB, 0),),
        failing_requests=("frontend: ERROR request to web-db:# failed: refused",),
    )
    assert score(other).parts["services_without_endpoints"] == 0
    # A Service whose selector matches no pod at all, failed against by its callers, is dark.
    orphan = state(
        workloads=(Workload("Deployment", "web", 1, 1, WEB),),
        services=(ServiceState("web", {"app": "wbe"}, 0),),
        failing_requests=(called,),
    )
    assert score(orphan).details["services_without_endpoints"] == ["web"]


def test_verdicts() -> None:
    well = score(state())
    one = score(state(pods=(PodState("a", "Running", False, 0),)))
    two = score(state(pods=(PodState("a", "Running", False, 1),)))
    assert verdict(two, one) == "better" and verdict(one, two) == "worse"
    assert verdict(one, one) == "same" and verdict(two, well) == "healthy"


def test_new_warnings_alone_do_not_make_a_verdict_worse() -> None:
    # Issue 18 F1(b): "worse (4 → 5: crash looping 1, new warning events 1, unready 1)" —
    # the only part that grew was a warning (the back-off of a pod yet to read the fix).
    looping = (PodState("payment", "Running", False, 1),)
    before = score(state(pods=looping))
    warned = state(pods=looping, warnings=(WarningEvent("BackOff", "pod/payment", "z"),))
    after = score(warned)
    assert after.total == before.total + 1
    assert verdict(before, after) == "same"
    fewer = score(state(pods=(PodState("payment", "Running", False, 0),), warnings=warned.warnings))
    assert verdict(before, fewer) == "better"  # fixed a crash loop, made a warning


def test_the_lab_baseline_is_healthy_and_a_crash_loop_is_worse(lab: Lab, kube: KubeClient) -> None:
    lab.settle()
    baseline = score(collect(kube, "hotel"))
    assert baseline.healthy, baseline.to_dict()
    assert score(collect(kube, "shop")).healthy
    lab.control.post("/lab/v1/scenarios/hotel-search-wrong-command/inject")
    lab.settle()
    broken = score(collect(kube, "hotel"))
    assert verdict(baseline, broken) == "worse", broken.to_dict()
    assert broken.parts["crash_looping_containers"] >= 1
    assert any("search" in name for name in broken.details["crash_looping_containers"])


def test_only_the_latest_log_lines_count_as_failing_requests() -> None:
    log = (
        "2026-11-22T10:00:00Z ERROR request to geo:8083 failed: connection refused\n"
        "2026-11-22T10:00:02Z INFO request to geo:8083 ok\n"
        "2026-11-22T10:00:02.5Z INFO request to rate:8084 ok\n"
    )
    assert latest_lines(log) == ["INFO request to geo:8083 ok", "INFO request to rate:8084 ok"]
    two = [
        "ERROR request to geo:8083 failed: refused after 12ms",
        "ERROR request to geo:8083 failed: refused after 15ms",
        "ERROR request to rate:8084 failed: no healthy upstream",
        "INFO request to user:8086 ok",
    ]
    assert error_signatures(two) == [
        "ERROR request to geo:# failed: refused after #ms",
        "ERROR request to rate:# failed: no healthy upstream",
    ]
    failing = score(state(failing_requests=("frontend",)))
    assert failing.parts["failing_requests"] == 1 and not failing.healthy


def test_callers_failing_against_a_service_scaled_to_zero_make_the_namespace_unhealthy(
    lab: Lab, kube: KubeClient
) -> None:
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    lab.settle()
    broken = score(collect(kube, "hotel"))
    assert any(
        f.startswith("frontend") and "recommendation" in f
        for f in broken.details["failing_requests"]
    ), broken.to_dict()
    assert not broken.healthy
    # Its endpoints are <none>: the score counts the Service (3 points), as the legend says.
    assert broken.details["services_without_endpoints"] == ["recommendation"], broken.to_dict()
    assert broken.parts["services_without_endpoints"] == 1


def _pod(
    phase: str, *, ready: bool, statuses: list[dict[str, object]], **meta: object
) -> dict[str, object]:
    return {
        "metadata": {"name": "p", **meta},
        "status": {
            "phase": phase,
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True" if ready else "False"},
            ],
            "containerStatuses": statuses,
        },
    }


def test_pods_on_their_way_keep_the_namespace_unsettled_and_steady_failures_do_not() -> None:
    now = dt.datetime(2026, 11, 22, 12, 0, 0, tzinfo=dt.UTC)
    creating = _pod(
        "Pending", ready=False, statuses=[{"state": {"waiting": {"reason": "ContainerCreating"}}}]
    )
    fresh = _pod(
        "Running",
        ready=False,
        statuses=[{"restartCount": 0, "state": {"running": {"startedAt": "2026-11-22T11:59:50Z"}}}],
    )
    stuck = _pod(
        "Running",
        ready=False,
        statuses=[{"restartCount": 0, "state": {"running": {"startedAt": "2026-11-22T11:00:00Z"}}}],
    )
    looping = _pod(
        "Running",
        ready=False,
        statuses=[{"restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
    )
    leaving = _pod("Running", ready=True, statuses=[], deletionTimestamp="2026-11-22T11:59:59Z")
    assert (
        in_transition(creating, now) and in_transition(fresh, now) and in_transition(leaving, now)
    )
    assert not in_transition(stuck, now) and not in_transition(looping, now)
