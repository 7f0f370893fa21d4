"""The figures Prometheus gives for one proposal's target: error rate, p95 latency, restarts,
memory against its limit, and its callers' error rates — now, at the start of the summary
window, at their peak in it, and (once the proposal ran) at the moment it ran.

Before/after is computed, not stored: one range query per figure reaches back from now to
the window before the execution time, so "before" is the figure at the last point at or
before the write and "after" is the latest. Nothing has to be kept with the proposal, and a
card rendered after a restart shows the same figures (as long as Prometheus keeps the data).

The queries run side by side, each bounded by the client's timeout, and the whole read by
``deadline``: a Prometheus that hangs costs a card at most that long, and a figure that failed
says why instead of stopping the others.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agents import telemetry_queries as q
from tools.errors import ToolError
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from tools.prometheus import PrometheusClient, PrometheusError, RangeResult, Series, promql

WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet"}
MAX_CALLERS = 5
CHARTED = ("error_rate", "p95", "restarts", "memory")
Points = tuple[tuple[float, float], ...]  # (Unix seconds, value), oldest first, finite only


@dataclass(frozen=True)
class Figure:
    now: float | None = None  # None too when the series ended (its pods went away)
    earlier: float | None = None  # at the start of the window
    peak: float | None = None  # the highest point of the window
    before: float | None = None  # when the proposal ran (None before it ran, or no series then)


@dataclass(frozen=True)
class CallerFigure:
    caller: str
    figure: Figure


@dataclass(frozen=True)
class Metrics:
    window: float  # seconds
    services: tuple[str, ...]
    error_rate: Figure
    p95: Figure
    restarts: Figure
    memory: Figure
    callers: tuple[CallerFigure, ...]
    queries: tuple[str, ...]
    executed_at: float | None = None
    failed: str = ""  # figures that could not be read, and why (the others stand)
    read_at: float | None = None  # Unix seconds: the end of the window (the "now" figures)
    # How many pods the target had (kube-state-metrics' kube_pod_info): "now" is 0 when it has
    # none, and its own figures are then leftovers of pods gone; None: the count was not read.
    pods: Figure | None = None
    # Unix seconds from which the "after" figures reflect the change alone (``telemetry``).
    settles_at: float | None = None
    # What the figures were read from, kept for the card's chart and its links: each figure's
    # PromQL by name ("error_rate", "p95", "restarts", "memory", "callers"), the points of its
    # series over the range read, and where that range started (Unix seconds).
    promql: tuple[tuple[str, str], ...] = ()
    series: tuple[tuple[str, Points], ...] = ()
    caller_series: tuple[tuple[str, Points], ...] = ()
    start: float | None = None

    @property
    def pending(self) -> bool:
        """The "after" figures were read before the change could show in them."""
        return (
            self.executed_at is not None
            and self.settles_at is not None
            and (self.read_at is None or self.read_at < self.settles_at)
        )

    def no_pods_now(self) -> bool:
        return self.pods is not None and not self.pods.now

    def no_pods_before(self) -> bool:
        """No pods at the moment the change ran (only meaningful once it ran)."""
        return self.executed_at is not None and self.pods is not None and not self.pods.before


class MetricsUnavailable(Exception):
    """No figure could be read; ``reason`` says why in a sentence."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def scope_for(kube: KubeClient, namespace: str, kind: str, name: str) -> q.Scope | None:
    """The Services in front of a workload (or a Service and the workloads behind it), and its
    pods' name pattern; ``None`` for kinds that serve no requests (a ConfigMap, a Node)."""
    services = kube.list("v1", "Service", namespace=namespace)
    if kind in WORKLOADS:
        obj = kube.find(ObjectRef(kind, name, namespace))
        template = (((obj or {}).get("spec") or {}).get("template") or {}).get("metadata") or {}
        labels = dict(template.get("labels") or {})
        fronting = [
            str(s["metadata"]["name"])
            for s in services
            if _selects(dict((s.get("spec") or {}).get("selector") or {}), labels)
        ]
        # A workload no Service fronts reports under its own name (the metrics contract).
        return q.Scope(namespace, tuple(fronting or [name]), q.pod_pattern(kind, name))
    if kind == "Service":
        service = next((s for s in services if s["metadata"]["name"] == name), None)
        selector = dict(((service or {}).get("spec") or {}).get("selector") or {})
        patterns = []
        for workload_kind in sorted(WORKLOADS):
            for obj in kube.list("apps/v1", workload_kind, namespace=namespace):
                template = ((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}
                if _selects(selector, dict(template.get("labels") or {})):
                    patterns.append(q.pod_pattern(workload_kind, obj["metadata"]["name"]))
        # A Service with nothing behind it: a pattern no pod name can match.
        return q.Scope(namespace, (name,), "|".join(patterns) or "-")
    if kind == "Pod":
        return q.Scope(namespace, (name,), q.pod_pattern("Pod", name))
    return None


# A point is the figure "at" a moment only if the series still had points about then: a range
# query evaluates every step, so a series that stopped more than two steps earlier had ended
# (its pods went away) and its last point is history, not the present.
FRESH_STEPS = 2.0


def _figure(
    series: Series | None,
    executed_at: float | None,
    window_start: float,
    *,
    end: float = math.inf,
    step: float = math.inf,
) -> Figure:
    if series is None:
        return Figure()
    points = [(t, v) for t, v in series.points if math.isfinite(v)]
    recent = [v for t, v in points if t >= window_start]
    slack = FRESH_STEPS * step
    before = [
        v for t, v in points if executed_at is not None and executed_at - slack <= t <= executed_at
    ]
    fresh = bool(points) and points[-1][0] >= end - slack
    return Figure(
        now=points[-1][1] if fresh else None,
        earlier=recent[0] if recent else None,
        peak=max(recent) if recent else None,
        before=before[-1] if before else None,
    )


def read(
    client: PrometheusClient,
    scope: q.Scope,
    *,
    now: float | None = None,
    executed_at: datetime | None = None,
    deadline: float | None = None,
) -> Metrics:
    """Every figure for ``scope``; raises ``MetricsUnavailable`` when none could be read."""
    end = time.time() if now is None else now
    window = q.window_seconds()
    rate = promql.duration(q.rate_seconds())
    ran = executed_at.timestamp() if executed_at is not None else None
    start = min(end, ran if ran is not None else end) - window
    queries = {
        "error_rate": q.error_rate(scope, rate),
        "p95": q.p95_latency(scope, rate),
        "restarts": q.restarts(scope),
        "memory": q.memory_ratio(scope),
        "callers": q.caller_error_rates(scope, rate),
        "pods": q.pod_count(scope),
    }
    budget = deadline or client.config.timeout + 0.5
    results: dict[str, RangeResult] = {}
    failures: dict[str, str] = {}
    pool = ThreadPoolExecutor(max_workers=len(queries), thread_name_prefix="prometheus")
    try:
        futures = {
            pool.submit(client.query_range, text, start=start, end=end): name
            for name, text in queries.items()
        }
        done, pending = wait(futures, timeout=budget)
        for future in done:
            name = futures[future]
            error = future.exception()
            if error is None:
                results[name] = future.result()
            else:
                failures[name] = error.message if isinstance(error, ToolError) else str(error)
        for future in pending:
            failures[futures[future]] = f"Prometheus did not answer within {budget:g} s"
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if not results:
        reason = next(iter(failures.values()), "Prometheus gave no answer")
        raise MetricsUnavailable(reason)
    window_start = end - window

    def one(name: str) -> Figure:
        result = results.get(name)
        if result is None:
            return Figure()
        series = result.series[0] if result.series else None
        return _figure(series, ran, window_start, end=end, step=result.step)

    callers = [
        CallerFigure(
            str(s.labels.get("service", "?")),
            _figure(s, ran, window_start, end=end, step=results["callers"].step),
        )
        for s in (results["callers"].series if "callers" in results else ())
    ]
    callers.sort(key=lambda c: -(c.figure.peak or 0.0))
    shown = {c.caller for c in callers[:MAX_CALLERS]}

    def points(series: Series) -> Points:
        return tuple((t, v) for t, v in series.points if math.isfinite(v))

    series = tuple(
        (name, points(results[name].series[0]))
        for name in CHARTED
        if name in results and results[name].series
    )
    caller_series = tuple(
        (str(s.labels.get("service", "?")), points(s))
        for s in (results["callers"].series if "callers" in results else ())
        if str(s.labels.get("service", "?")) in shown
    )
    return Metrics(
        window=window,
        services=scope.services,
        error_rate=one("error_rate"),
        p95=one("p95"),
        restarts=one("restarts"),
        memory=one("memory"),
        callers=tuple(callers[:MAX_CALLERS]),
        queries=tuple(queries.values()),
        executed_at=ran,
        failed="; ".join(sorted({f"{k}: {v}" for k, v in failures.items()})),
        read_at=end,
        pods=one("pods") if "pods" in results else None,
        promql=tuple(queries.items()),
        series=series,
        caller_series=caller_series,
        start=start,
    )


def describe(error: Any) -> str:
    """A failure as one short sentence for a card or a log."""
    if isinstance(error, MetricsUnavailable):
        return error.reason
    if isinstance(error, PrometheusError | ToolError):
        return error.message
    return str(error)[:200]
