"""The health score's parts that come from Prometheus: services failing their callers and
services gone slow, over the telemetry rate window (``agents.telemetry_queries``).

The thresholds are deliberately plain so a person can check a part by hand: more than
``ERROR_RATE_LIMIT`` of a service's answers were 5xx, or its p95 answer time is above
``SLOW_P95_SECONDS``. A service with no traffic in the window has no rate (NaN) and counts as
neither.
"""

from __future__ import annotations

from agents import telemetry_queries as q
from tools.prometheus import PrometheusClient, PrometheusError, promql

ERROR_RATE_LIMIT = 0.05  # a service answering more than 5% of its requests with 5xx
SLOW_P95_SECONDS = 1.0  # a service whose 95th percentile answer takes longer than this


def request_metrics(
    prometheus: PrometheusClient, namespace: str
) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None, str]:
    """(services failing their callers, slow services, a note): both ``None`` and the note
    saying why when Prometheus did not answer (each query is bounded by the client)."""
    rate = promql.duration(q.rate_seconds())
    try:
        errors = prometheus.query(q.namespace_error_rates(namespace, rate))
        latency = prometheus.query(q.namespace_p95(namespace, rate))
    except PrometheusError as error:
        return None, None, f"unavailable: {error.message}"
    erroring = tuple(
        sorted(
            f"{s.labels.get('service', '?')} ({s.value:.0%} 5xx)"
            for s in errors.samples
            if s.value > ERROR_RATE_LIMIT
        )
    )
    slow = tuple(
        sorted(
            f"{s.labels.get('service', '?')} (p95 {s.value:.2f} s)"
            for s in latency.samples
            if s.value > SLOW_P95_SECONDS
        )
    )
    return erroring, slow, "prometheus"
