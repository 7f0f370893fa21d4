"""Prometheus families for ``/metrics``: the store's figures (``operations.figures``) read at
each scrape, the process's tally of Kubernetes API errors (``tools.api_errors``) and, when the
server gives one, its readiness.

Names follow Prometheus's conventions: the ``stratus_`` prefix, ``_total`` on counters,
``_seconds`` on durations. Totals read from the store only grow (rows are never deleted), so
they are exported as counters that survive a restart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from operations import figures
from operations.figures import Figures
from operations.readiness import Readiness
from store.db import Store
from tools import api_errors

# Opened → answered: from a reply within seconds to one the next morning.
LATENCY_BUCKETS = (5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 14400.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def histogram(
    values: Iterable[float], bounds: Iterable[float]
) -> tuple[list[tuple[str, float]], float]:
    """Cumulative buckets (``le`` → count, ``+Inf`` last) and the sum, as Prometheus wants."""
    seen = sorted(values)
    buckets = [(repr(bound), float(sum(1 for v in seen if v <= bound))) for bound in bounds]
    buckets.append(("+Inf", float(len(seen))))
    return buckets, float(sum(seen))


def families(found: Figures, errors: dict[str, int], ready: Readiness | None) -> list[Metric]:
    """Every family from the figures, the error tally and the readiness (pure)."""
    incidents = GaugeMetricFamily("stratus_incidents", "Incidents by state.", labels=["state"])
    for state, count in sorted(found.incidents.items()):
        incidents.add_metric([state], count)
    proposals = GaugeMetricFamily(
        "stratus_proposals",
        "Proposals by state, policy decision and its provenance (rule, grant, default, ...).",
        labels=["state", "decision", "provenance"],
    )
    for (state, decision, source), count in sorted(found.proposals.items()):
        proposals.add_metric([state, decision, source], count)
    oldest = GaugeMetricFamily(
        "stratus_proposal_oldest_open_seconds",
        "Age of the oldest proposal in each open state (absent when none).",
        labels=["state"],
    )
    for state, age in sorted(found.oldest_open.items()):
        oldest.add_metric([state], age)
    latency = HistogramMetricFamily(
        "stratus_approval_latency_seconds",
        "Time from a proposal opened to a person's first answer, by answer.",
        labels=["answer"],
    )
    for answer in sorted({a for a, _ in found.approval_latencies}):
        buckets, total = histogram(
            (s for a, s in found.approval_latencies if a == answer), LATENCY_BUCKETS
        )
        latency.add_metric([answer], buckets, total)
    executions = CounterMetricFamily(
        "stratus_executions_total",
        "Writes sent to the cluster (kind: write or undo) by outcome.",
        labels=["kind", "outcome"],
    )
    pending = GaugeMetricFamily(
        "stratus_executions_pending", "Writes whose outcome is not recorded yet."
    )
    pending.add_metric(
        [], sum(n for (_, state), n in found.executions.items() if state == "pending")
    )
    for (kind, state), count in sorted(found.executions.items()):
        if state != "pending":
            executions.add_metric([kind, state], count)
    undos = CounterMetricFamily(
        "stratus_undos_total",
        "Undos applied, by trigger: tnr (automatic, the attempt made things worse) or request.",
        labels=["trigger"],
    )
    for trigger in ("request", "tnr"):
        undos.add_metric([trigger], found.undos.get(trigger, 0))
    api = CounterMetricFamily(
        "stratus_kubernetes_api_errors_total",
        "Errors the Kubernetes API answered since the process started, by HTTP status code "
        "(unreachable: no answer).",
        labels=["code"],
    )
    for code, count in sorted(errors.items()):
        api.add_metric([code], count)
    calls = CounterMetricFamily("stratus_model_calls_total", "Calls to the model by planners.")
    calls.add_metric([], found.model_calls)
    tokens = CounterMetricFamily(
        "stratus_model_tokens_total", "Tokens spent with the model, by type.", labels=["type"]
    )
    for kind in ("prompt", "completion"):
        tokens.add_metric([kind], found.tokens.get(kind, 0))
    alerts = CounterMetricFamily(
        "stratus_alert_notifications_total",
        "Alertmanager notifications taken in (one per namespace of a group), by outcome.",
        labels=["outcome"],
    )
    for outcome in ("accepted", "refused"):
        alerts.add_metric([outcome], found.alert_notifications.get(outcome, 0))
    made: list[Metric] = [
        incidents,
        proposals,
        oldest,
        latency,
        executions,
        pending,
        undos,
        api,
        calls,
        tokens,
        alerts,
    ]
    if ready is not None:
        up = GaugeMetricFamily("stratus_ready", "1 when every readiness check passes.")
        up.add_metric([], 1.0 if ready.ready else 0.0)
        checks = GaugeMetricFamily(
            "stratus_readiness_check", "1 when the readiness check passes.", labels=["check"]
        )
        for check in ready.checks:
            checks.add_metric([check.name], 1.0 if check.ok else 0.0)
        made += [up, checks]
    return made


class StoreCollector(Collector):
    """Reads the store at each scrape (one short read; no write, no lock held)."""

    def __init__(
        self,
        store: Store,
        *,
        now: Callable[[], datetime],
        readiness: Callable[[], Readiness] | None = None,
    ) -> None:
        self.store = store
        self.now = now
        self.readiness = readiness

    def collect(self) -> Iterator[Metric]:
        ready = self.readiness() if self.readiness is not None else None
        found = figures.read(self.store, now=self.now())
        yield from families(found, api_errors.snapshot(), ready)


def exposition(collector: Collector) -> bytes:
    """The text a scrape gets: the collector's families in a registry of its own (the process
    global registry would collect them twice when two bots run in one test process)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry)
