"""Transactional No-Regression: how an attempt is judged.

The namespace's health score is taken before an attempt and again once the cluster has settled
— polled until two looks agree (or it is healthy), bounded by a timeout — and the verdict
compares the two. The verdict and both scores, with their parts, go into the incident's events
so a person sees why an attempt was kept or undone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents import readers
from agents.attribution import Attribution, attribute
from agents.health import METRIC_PARTS, HealthScore, Verdict, collect, score, verdict
from tools import env
from tools.errors import ToolError
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from tools.prometheus import PrometheusClient

# How the workflow lets time pass while the cluster settles. Real clusters: sleep. The lab in
# instant mode is settled by its control API; the composition root passes that in.
Pause = Callable[[float], None]


def _seconds(name: str, default: float, low: float, high: float) -> float:
    return env.number(name, default=default, low=low, high=high)


def settle_seconds() -> float:
    """The bounded wait for the cluster to settle after an attempt (STRATUS_SETTLE_SECONDS,
    default 60)."""
    return _seconds("STRATUS_SETTLE_SECONDS", 60.0, 0.0, 3600.0)


def poll_seconds() -> float:
    """How often the settling cluster is looked at (STRATUS_POLL_SECONDS, default 2)."""
    return _seconds("STRATUS_POLL_SECONDS", 2.0, 0.05, 300.0)


# Callers failing when the cluster stopped moving may not have called since the fix became
# ready: the looks have to span a retry before their failures count (issue 18: a card showed
# "Callers' errors: frontend 100% → 100%" read before the callers had retried). Measured in
# paused time, so the lab's instant clock passes it without a wall-clock wait.
CALLER_RETRY_SECONDS = 3.0


@dataclass(frozen=True)
class Judgement:
    before: HealthScore
    after: HealthScore
    verdict: Verdict
    waited: float  # seconds spent waiting for the cluster to settle
    settled: bool  # False: the timeout ended the wait while the score still moved
    # Readers of a ConfigMap or Secret the attempt wrote, still in the crash back-off they were
    # in at the first look (``agents.readers``): their crash loop is no verdict on the write.
    not_restarted: tuple[str, ...] = ()
    # Whose failures the look after shows (``agents.attribution``): a worse score may be a
    # fault the attempt revealed behind its target rather than one it caused.
    attribution: Attribution | None = None


def look(
    kube: KubeClient,
    namespace: str,
    *,
    since: str = "",
    prometheus: PrometheusClient | None = None,
) -> HealthScore:
    return score(collect(kube, namespace, prometheus=prometheus), since=since)


def _look(
    kube: KubeClient, namespace: str, since: str, prometheus: PrometheusClient | None
) -> tuple[HealthScore, bool]:
    """The score, and whether pods are still on their way (the cluster has not settled)."""
    state = collect(kube, namespace, prometheus=prometheus)
    return score(state, since=since), bool(state.transitional)


def judge(
    kube: KubeClient,
    namespace: str,
    before: HealthScore,
    *,
    since: str,
    pause: Pause,
    timeout: float,
    interval: float = 2.0,
    prometheus: PrometheusClient | None = None,
    written: list[tuple[str, str]] | None = None,
) -> Judgement:
    """Wait (bounded) until the namespace is healthy, or no pod is on its way anywhere and the
    score stopped moving between two looks — looks a caller's retry apart while callers still
    report failed requests, and (``written``: the ConfigMaps and Secrets the attempt wrote, as
    (kind, name)) until their crash-looping readers restarted to read them; then compare."""
    started = time.monotonic()
    previous: HealthScore | None = None
    objects = [w for w in written or [] if w[0] in readers.DATA_KINDS]
    first = readers.starts(_pods(kube, namespace), objects) if objects else {}
    after, moving = _look(kube, namespace, since, prometheus)
    stale = _not_restarted(kube, namespace, objects, first)
    settled = False
    quiet = 0.0  # paused seconds the cluster's parts have stayed as they are, nothing moving
    while True:
        needed = CALLER_RETRY_SECONDS if after.parts.get("failing_requests") else 0.0
        if after.healthy or (
            not moving
            and not stale
            and previous is not None
            and _same(previous, after)
            and quiet >= needed
        ):
            settled = True
            break
        if time.monotonic() - started >= timeout:
            break
        pause(interval)
        previous = after
        after, moving = _look(kube, namespace, since, prometheus)
        stale = _not_restarted(kube, namespace, objects, first)
        quiet = quiet + interval if not moving and _same(previous, after) else 0.0
    return Judgement(
        before,
        after,
        verdict(before, after),
        time.monotonic() - started,
        settled,
        () if after.healthy else stale,
        attribute(before, after, written=written_names(kube, namespace, written or []))
        if written
        else None,
    )


WORKLOAD_APIS = {"Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1"}


def written_names(kube: KubeClient, namespace: str, written: list[tuple[str, str]]) -> set[str]:
    """The objects an attempt wrote as "kind/name", and the Services that front the
    workloads among them (a caller's failure against such a Service is the workload's)."""
    names = {f"{kind.lower()}/{name}" for kind, name in written}
    labels: list[dict[str, str]] = []
    for kind, name in written:
        if kind not in WORKLOAD_APIS:
            continue
        try:
            workload = kube.get(ObjectRef(kind, name, namespace))
        except ToolError:
            continue  # deleted by the attempt: nothing fronts it any more
        template = ((workload.get("spec") or {}).get("template") or {}).get("metadata") or {}
        labels.append(dict(template.get("labels") or {}))
    if labels:
        for service in kube.list("v1", "Service", namespace=namespace):
            selector = (service.get("spec") or {}).get("selector") or {}
            if selector and any(
                all(found.get(k) == v for k, v in selector.items()) for found in labels
            ):
                names.add(f"service/{service['metadata']['name']}")
    return names


def _pods(kube: KubeClient, namespace: str) -> list[dict[str, Any]]:
    return kube.list("v1", "Pod", namespace=namespace)


def _not_restarted(
    kube: KubeClient, namespace: str, objects: list[tuple[str, str]], first: dict[str, Any]
) -> tuple[str, ...]:
    if not first:
        return ()
    return readers.not_restarted(_pods(kube, namespace), objects, first)


def _same(one: HealthScore, other: HealthScore) -> bool:
    """Two looks agree on the cluster's parts (metric parts drift with their rate window and
    would keep a settled cluster "moving")."""
    return {k: v for k, v in one.parts.items() if k not in METRIC_PARTS} == {
        k: v for k, v in other.parts.items() if k not in METRIC_PARTS
    }


def wait_until_settled(
    kube: KubeClient, namespace: str, *, pause: Pause, timeout: float, interval: float
) -> bool:
    """Wait (bounded) until no pod of the namespace is on its way anywhere; False at the
    timeout. Used after an undo, so the next look sees the rolled-back state."""
    started = time.monotonic()
    while collect(kube, namespace).transitional:
        if time.monotonic() - started >= timeout:
            return False
        pause(interval)
    return True
