"""The telemetry summary of a proposal's target: what a person wants to see before approving a
write on it, and after it ran.

Two sources, merged:

- the cluster (always): pods ready, restarts, ready endpoints, error lines and recent warning
  events of the object — read through the tool layer's read tools, bounded, quoted as data;
- Prometheus (when configured, ``agents.telemetry_metrics``): error rate, p95 latency,
  restarts, memory against its limit and the callers' error rates, now and over the summary
  window, and before vs after once the proposal ran.

Without Prometheus the summary says there is no metrics source; when Prometheus is slow or
failing it keeps the cluster's signals and says why the figures are missing. Reading a summary
never raises and never waits longer than the metrics deadline on top of the cluster reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from agents import telemetry_metrics as tm
from agents import telemetry_queries as q
from agents.telemetry_metrics import Metrics
from proposals.model import Proposal, ProposalState
from store.errors import StratusError
from tools.errors import ToolError
from tools.prometheus import PrometheusClient
from tools.reads import ClusterReader

MAX_ERRORS = 3
MAX_EVENTS = 3
# Rates are averages over the rate window and Prometheus scrapes every few seconds: figures read
# right after a write still mostly show the time before it. The "after" figures say what the
# write did once a whole rate window (and a couple of scrapes) has passed since it.
SCRAPES_MARGIN = 10.0
# none: no Prometheus configured; prometheus: figures read; failed: Prometheus did not answer
# (``metrics_reason`` says why); not_applicable: the target serves no requests (a ConfigMap).
MetricsSource = Literal["none", "prometheus", "failed", "not_applicable"]


@dataclass(frozen=True)
class Telemetry:
    pods: str = "—"
    restarts: int = 0
    endpoints: str = "—"
    errors: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    metrics: Metrics | None = None
    metrics_source: MetricsSource = "none"
    metrics_reason: str = ""


def _workload(health: dict[str, Any], name: str) -> dict[str, Any] | None:
    for item in health.get("workloads", {}).get("items", []):
        if item.get("name") == name:
            return dict(item)
    return None


def cluster_signals(
    reader: ClusterReader, proposal: Proposal, health_details: dict[str, Any] | None = None
) -> Telemetry:
    """What the cluster itself says about the target (no metrics source needed)."""
    namespace, name = proposal.target.namespace, proposal.target.name
    if not namespace:
        return Telemetry()
    try:
        health = reader.workload_health(namespace)
        workload = _workload(health, name)
        pods = f"{workload['ready']}/{workload['desired']}" if workload else "—"
        restarts = 0
        for pod in health.get("unready_pods", {}).get("items", []):
            if str(pod.get("name", "")).startswith(name):
                restarts += sum(int(c.get("restarts") or 0) for c in pod.get("containers", []))
        endpoints = "—"
        try:
            check = reader.service_check(namespace, name)
            ready = check.get("ready_endpoints", check.get("endpoints"))
            if isinstance(ready, list):
                endpoints = str(len(ready))
            elif ready is not None:
                endpoints = str(ready)
        except ToolError:
            pass
        events = [
            f"{e['reason']} ({e['object']}, x{e['count']})"
            for e in reader.events(namespace, limit=20)["events"]["items"]
            if e.get("type") == "Warning" and name in str(e.get("object", ""))
        ][:MAX_EVENTS]
    except ToolError:
        return Telemetry()
    errors: list[str] = []
    for lines in (health_details or {}).values():
        errors += [str(line)[:120] for line in lines if name in str(line)]
    return Telemetry(
        pods=pods,
        restarts=restarts,
        endpoints=endpoints,
        errors=errors[:MAX_ERRORS],
        events=events,
    )


def executed_at(proposal: Proposal) -> datetime | None:
    """When the proposal's write happened, for before/after figures (its last move was to
    executed; an undone proposal's figures compare against the undo instead)."""
    if proposal.state == ProposalState.EXECUTED:
        return proposal.updated_at
    return None


def settled_at(proposal: Proposal) -> float | None:
    """Unix seconds from which an executed proposal's "after" figures reflect the write alone
    (``None``: it has not run, or was undone since)."""
    ran = executed_at(proposal)
    if ran is None:
        return None
    return ran.timestamp() + q.rate_seconds() + SCRAPES_MARGIN


def summarize(
    reader: ClusterReader,
    proposal: Proposal,
    *,
    prometheus: PrometheusClient | None = None,
    health_details: dict[str, Any] | None = None,
    now: float | None = None,
) -> Telemetry:
    """The summary of ``proposal``'s target: the cluster's signals, and Prometheus' figures
    when a client is given (``now``: Unix seconds, the end of the window; default the clock)."""
    cluster = cluster_signals(reader, proposal, health_details)
    if prometheus is None:
        return cluster
    target = proposal.target
    try:
        scope = (
            tm.scope_for(reader.kube, target.namespace, target.kind, target.name)
            if target.namespace
            else None
        )
    except StratusError as error:
        return _with(cluster, "failed", f"reading the target failed: {error.message}")
    if scope is None:
        return _with(cluster, "not_applicable", "")
    try:
        metrics = tm.read(prometheus, scope, now=now, executed_at=executed_at(proposal))
    except (tm.MetricsUnavailable, StratusError) as error:
        return _with(cluster, "failed", tm.describe(error))
    return Telemetry(
        pods=cluster.pods,
        restarts=cluster.restarts,
        endpoints=cluster.endpoints,
        errors=cluster.errors,
        events=cluster.events,
        metrics=metrics,
        metrics_source="prometheus",
        metrics_reason=metrics.failed,
    )


def _with(cluster: Telemetry, source: MetricsSource, reason: str) -> Telemetry:
    return Telemetry(
        pods=cluster.pods,
        restarts=cluster.restarts,
        endpoints=cluster.endpoints,
        errors=cluster.errors,
        events=cluster.events,
        metrics_source=source,
        metrics_reason=reason,
    )
