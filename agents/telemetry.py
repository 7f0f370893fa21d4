"""The telemetry summary of a proposal's target: what a person wants to see before approving a
write on it, and after it ran.

Two sources, merged:

- the cluster (always): pods ready, restarts, ready endpoints, the error lines the target's own
  pods logged and recent warning events of the object — read through the tool layer's read
  tools, bounded, quoted as data;
- Prometheus (when configured, ``agents.telemetry_metrics``): error rate, p95 latency,
  restarts, memory against its limit and the callers' error rates, now and over the summary
  window, and before vs after once the proposal ran.

Without Prometheus the summary says there is no metrics source; when Prometheus is slow or
failing it keeps the cluster's signals and says why the figures are missing. Reading a summary
never raises and never waits longer than the metrics deadline on top of the cluster reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from agents import telemetry_metrics as tm
from agents import telemetry_queries as q
from agents.analyzers import _workloads as w
from agents.telemetry_metrics import Metrics
from proposals.model import Proposal, ProposalState
from store.errors import StratusError
from tools.errors import ToolError
from tools.prometheus import PrometheusClient
from tools.reads import ClusterReader

MAX_EVENTS = 3
# Error lines: the target's own log lines, from a couple of its pods (the current container, and
# the one before it when it restarted: a crash's last words are there).
LOG_PODS = 2
LOG_TAIL = 200
MAX_ERROR_LINES = 10
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
    errors: list[str] = field(default_factory=list)  # whole log lines, newest last
    events: list[str] = field(default_factory=list)
    metrics: Metrics | None = None
    metrics_source: MetricsSource = "none"
    metrics_reason: str = ""
    # The workload asks for no pods (scaled to zero): whatever pod is left is on its way out.
    scaled_to_zero: bool = False


def _workload(health: dict[str, Any], name: str) -> dict[str, Any] | None:
    for item in health.get("workloads", {}).get("items", []):
        if item.get("name") == name:
            return dict(item)
    return None


def error_lines(reader: ClusterReader, proposal: Proposal) -> list[str]:
    """The error lines the target's own pods logged (whole, repeated lines counted once), at
    most ``MAX_ERROR_LINES``; none for a target that runs no pods of its own. Never raises."""
    target = proposal.target
    if not target.namespace or target.kind not in (*tm.WORKLOADS, "Pod"):
        return []
    mine = re.compile(q.pod_pattern(target.kind, target.name))
    found: list[str] = []
    try:
        pods = [
            p
            for p in reader.kube.list("v1", "Pod", namespace=target.namespace)
            if mine.fullmatch(str(p["metadata"]["name"]))
        ]
    except ToolError:
        return []
    for pod in pods[:LOG_PODS]:
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        container = containers[0].get("name")
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        restarted = any(int(c.get("restartCount") or 0) for c in statuses)
        for previous in (True, False) if restarted else (False,):
            try:
                logged = reader.logs(
                    target.namespace,
                    str(pod["metadata"]["name"]),
                    container=container,
                    tail=LOG_TAIL,
                    previous=previous,
                )
            except ToolError:
                continue
            found += [str(line) for line in logged["error_lines"]["items"] if line not in found]
    return found[-MAX_ERROR_LINES:]


def cluster_signals(reader: ClusterReader, proposal: Proposal) -> Telemetry:
    """What the cluster itself says about the target (no metrics source needed)."""
    namespace, name = proposal.target.namespace, proposal.target.name
    if not namespace:
        return Telemetry()
    try:
        health = reader.workload_health(namespace)
        workload = _workload(health, name)
        pods = f"{workload['ready']}/{workload['desired']}" if workload else "—"
        scaled_to_zero = workload is not None and int(workload["desired"]) == 0
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
    return Telemetry(
        pods=pods,
        restarts=restarts,
        endpoints=endpoints,
        errors=error_lines(reader, proposal),
        events=events,
        scaled_to_zero=scaled_to_zero,
    )


def executed_at(proposal: Proposal) -> datetime | None:
    """When the proposal's write happened, for before/after figures (its last move was to
    executed; an undone proposal's figures compare against the undo instead)."""
    if proposal.state == ProposalState.EXECUTED:
        return proposal.updated_at
    return None


def settled_at(proposal: Proposal, *, verified_at: datetime | None = None) -> float | None:
    """Unix seconds from which an executed proposal's "after" figures reflect the write alone
    (``None``: it has not run, or was undone since). A write takes effect when the pods it
    started are ready, which the verification waits for (``verified_at``), and the callers
    then retry: a whole rate window after that, their figures no longer average in the time
    before."""
    ran = executed_at(proposal)
    if ran is None:
        return None
    effective = max(ran, verified_at) if verified_at is not None else ran
    return effective.timestamp() + q.rate_seconds() + SCRAPES_MARGIN


def summarize(
    reader: ClusterReader,
    proposal: Proposal,
    *,
    prometheus: PrometheusClient | None = None,
    now: float | None = None,
    verified_at: datetime | None = None,
) -> Telemetry:
    """The summary of ``proposal``'s target: the cluster's signals, and Prometheus' figures
    when a client is given (``now``: Unix seconds, the end of the window; default the clock;
    ``verified_at``: when the change was judged settled, from which its figures settle)."""
    cluster = cluster_signals(reader, proposal)
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
    metrics = replace(metrics, settles_at=settled_at(proposal, verified_at=verified_at))
    pods = metrics.pods or tm.Figure()
    if cluster.scaled_to_zero:
        # The cluster's word on "now" wins: a pod still terminating serves nothing, and its
        # last figures are history.
        pods = replace(pods, now=0.0)
    if metrics.executed_at is not None and _asks_for_no_pods(proposal.plan.before):
        pods = replace(pods, before=0.0)  # the object the write replaced had none to run
    if pods != (metrics.pods or tm.Figure()):
        metrics = replace(metrics, pods=pods)
    return Telemetry(
        pods=cluster.pods,
        restarts=cluster.restarts,
        endpoints=cluster.endpoints,
        errors=cluster.errors,
        events=cluster.events,
        metrics=metrics,
        metrics_source="prometheus",
        metrics_reason=metrics.failed,
        scaled_to_zero=cluster.scaled_to_zero,
    )


def _asks_for_no_pods(obj: dict[str, Any] | None) -> bool:
    if not obj or obj.get("kind") not in ("Deployment", "StatefulSet"):
        return False
    return w.desired_replicas(obj) == 0


def _with(cluster: Telemetry, source: MetricsSource, reason: str) -> Telemetry:
    return Telemetry(
        pods=cluster.pods,
        restarts=cluster.restarts,
        endpoints=cluster.endpoints,
        errors=cluster.errors,
        events=cluster.events,
        metrics_source=source,
        metrics_reason=reason,
        scaled_to_zero=cluster.scaled_to_zero,
    )
