"""What Prometheus says about a whole namespace, read once per look beside the cluster snapshot,
so the analyzers stay pure functions of a ``Snapshot``.

Four range queries over the summary window, side by side and bounded by the client's timeout:
each service's 5xx share and p95 latency, each (caller, callee) pair's failed-call share, and
each container's memory against its limit. Each keeps its PromQL, so a finding built on it
cites the query a person can paste into Prometheus. A Prometheus that fails leaves ``failed``
set and the trends empty; the analyzers then say nothing from metrics.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from agents import telemetry_queries as q
from store.errors import StratusError
from tools.prometheus import PrometheusClient, RangeResult, promql


@dataclass(frozen=True)
class Trend:
    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]  # (Unix seconds, value), finite values only

    @property
    def now(self) -> float | None:
        return self.points[-1][1] if self.points else None

    @property
    def first(self) -> float | None:
        return self.points[0][1] if self.points else None

    def at(self, moment: float) -> float | None:
        """The value at the last point at or before ``moment``."""
        found = [v for t, v in self.points if t <= moment]
        return found[-1] if found else None


@dataclass(frozen=True)
class Reading:
    promql: str
    trends: tuple[Trend, ...] = ()


@dataclass(frozen=True)
class NamespaceMetrics:
    window: float
    error_rates: Reading = field(default_factory=lambda: Reading(""))
    latency: Reading = field(default_factory=lambda: Reading(""))
    caller_errors: Reading = field(default_factory=lambda: Reading(""))
    memory: Reading = field(default_factory=lambda: Reading(""))
    failed: str = ""  # why some or all readings are missing


def _reading(result: RangeResult) -> Reading:
    return Reading(
        result.promql,
        tuple(
            Trend(s.labels, tuple((t, v) for t, v in s.points if math.isfinite(v)))
            for s in result.series
        ),
    )


def read(client: PrometheusClient, namespace: str, *, now: float | None = None) -> NamespaceMetrics:
    """The namespace's request and memory trends over the summary window; never raises."""
    try:
        window = q.window_seconds()
        rate = promql.duration(q.rate_seconds())
        queries = {
            "error_rates": q.namespace_error_rates(namespace, rate),
            "latency": q.namespace_p95(namespace, rate),
            "caller_errors": q.namespace_caller_errors(namespace, rate),
            "memory": q.namespace_memory_ratio(namespace),
        }
    except StratusError as error:
        return NamespaceMetrics(window=0, failed=error.message)
    end = time.time() if now is None else now
    readings: dict[str, Reading] = {}
    failures: list[str] = []
    pool = ThreadPoolExecutor(max_workers=len(queries), thread_name_prefix="prometheus")
    try:
        futures = {
            pool.submit(client.query_range, text, start=end - window, end=end): name
            for name, text in queries.items()
        }
        done, pending = wait(futures, timeout=client.config.timeout + 0.5)
        for future in done:
            failure = future.exception()
            if failure is None:
                readings[futures[future]] = _reading(future.result())
            else:
                failures.append(getattr(failure, "message", str(failure)))
        if pending:
            failures.append("Prometheus did not answer in time")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return NamespaceMetrics(
        window=window,
        failed="; ".join(sorted(set(failures))),
        error_rates=readings.get("error_rates", Reading(queries["error_rates"])),
        latency=readings.get("latency", Reading(queries["latency"])),
        caller_errors=readings.get("caller_errors", Reading(queries["caller_errors"])),
        memory=readings.get("memory", Reading(queries["memory"])),
    )
