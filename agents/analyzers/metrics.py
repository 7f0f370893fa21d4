"""What Prometheus shows that logs and events hide: a callee its callers see failing, memory
creeping up to a container's limit before an OOM kill, and latency that rose after a rollout.

These findings corroborate and localize; they never decide alone. Their confidence stays
below ``diagnose.MIN_EXPLAINER_CONFIDENCE``, so a metrics finding cannot push a mechanism
finding off the root, but on the same resource it merges into the diagnosis and its evidence
(the PromQL, quoted) shows there. Without Prometheus (``snapshot.metrics`` is ``None``) or when
it failed, these analyzers say nothing.
"""

from __future__ import annotations

from datetime import datetime

from agents.analyzers import _workloads as w
from agents.model import Category, Evidence, Finding, ResourceKey
from agents.snapshot import Snapshot
from agents.snapshot_metrics import Reading, Trend

ANALYZER = "metrics"
CONFIDENCE = 0.45  # below diagnose.MIN_EXPLAINER_CONFIDENCE: corroboration, never a root alone
CALLER_ERROR_SHARE = 0.2  # a callee failing at least a fifth of a caller's calls …
CALLER_ERROR_RISE = 0.1  # … that failed at least 10 points less at the start of the window
MEMORY_FULL = 0.9  # a container at 90% of its memory limit
MEMORY_CREEP = 0.2  # … or up 20 points of its limit within the window, now above MEMORY_HIGH
MEMORY_HIGH = 0.75
STARTUP_SHARE = 0.1  # a run's first tenth of the window is its start-up, not a creep
LATENCY_FACTOR = 2.0  # p95 at least doubled since the rollout …
LATENCY_FLOOR = 0.1  # … and at least 100 ms slower


def _cite(reading: Reading) -> str:
    return w.quoted(reading.promql)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _evidence(reading: Reading, text: str) -> Evidence:
    return w.evidence("metrics", _cite(reading), text)


def _service_target(snapshot: Snapshot, service: str) -> ResourceKey:
    """The workload behind a Service (the one its pods report under), else the Service."""
    for kind in w.WORKLOAD_KINDS:
        for obj in snapshot.of(kind):
            names = {w.name_of(s) for s in w.services_selecting(snapshot, obj)}
            if service in names or (not names and w.name_of(obj) == service):
                return w.key(snapshot, kind, w.name_of(obj))
    return w.key(snapshot, "Service", service)


def _upstream(spiking: dict[str, list[Trend]], callee: str) -> list[str]:
    """Everyone whose failing calls lead to ``callee``: its callers, their callers when they
    are failing callees themselves, and so on (a failure cascades up the call graph)."""
    seen: list[str] = []
    todo = [callee]
    while todo:
        for trend in spiking.get(todo.pop(), []):
            caller = trend.labels.get("service", "?")
            if caller not in seen and caller != callee:
                seen.append(caller)
                todo.append(caller)
    return sorted(seen)


def callers_see_callee_failing(snapshot: Snapshot) -> list[Finding]:
    metrics = snapshot.metrics
    if metrics is None:
        return []
    reading = metrics.caller_errors
    spiking: dict[str, list[Trend]] = {}
    for trend in reading.trends:
        now, first = trend.now, trend.first
        if now is None or now < CALLER_ERROR_SHARE:
            continue
        if first is not None and now - first < CALLER_ERROR_RISE:
            continue  # failing all along: a steady state the window does not explain
        callee = trend.labels.get("destination_service", "")
        if callee:
            spiking.setdefault(callee, []).append(trend)
    # A callee whose own calls fail answers its callers 5xx because of them: it is a link of
    # the cascade, not where it starts. Name the callees at the end of the failing chains
    # (all of them when the failures go round in a circle).
    failing_callers = {t.labels.get("service", "") for ts in spiking.values() for t in ts}
    ends = [c for c in spiking if c not in failing_callers] or list(spiking)
    findings = []
    for callee in sorted(ends):
        trends = sorted(spiking[callee], key=lambda t: t.labels.get("service", "?"))
        callers = [t.labels.get("service", "?") for t in trends]
        affected = _upstream(spiking, callee)
        findings.append(
            Finding(
                analyzer=ANALYZER,
                mechanism="callers-errors-spike",
                category=Category.NETWORK,
                resource=_service_target(snapshot, callee),
                symptoms=[_service_target(snapshot, c) for c in affected],
                summary=f"{', '.join(callers)} now fail{'s' if len(callers) == 1 else ''} "
                f"{_pct(max(t.now or 0 for t in trends))} of "
                f"{'its' if len(callers) == 1 else 'their'} calls to {callee}",
                evidence=[
                    _evidence(
                        reading,
                        f"{t.labels.get('service', '?')} → {callee}: {_pct(t.now)} of calls "
                        f"failed now, {_pct(t.first)} at the start of the window",
                    )
                    for t in trends[:3]
                ],
                severity=2,
                confidence=CONFIDENCE,
                facts={"callee": callee, "callers": callers, "affected": affected},
            )
        )
    return findings


def _timestamp(stamp: object) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _run_started(pod: w.Obj, container: str) -> float | None:
    """When the container's current run started (None when it is not running)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == container:
            return _timestamp(((status.get("state") or {}).get("running") or {}).get("startedAt"))
    return None


def _creep(trend: Trend, started: float | None, window: float) -> tuple[float, float] | None:
    """(baseline, peak) of the current run once its start-up is over, or None when the run is
    too young to tell. A process filling up to its footprint after a (re)start is not a leak:
    the baseline is the first point ``STARTUP_SHARE`` of the window after the run began."""
    if started is None:
        return None
    settled = [v for t, v in trend.points if t >= started + window * STARTUP_SHARE]
    if len(settled) < 2:
        return None
    return settled[0], max(settled)


def memory_creeping_to_limit(snapshot: Snapshot) -> list[Finding]:
    metrics = snapshot.metrics
    if metrics is None:
        return []
    reading = metrics.memory
    worst: dict[tuple[str, str], tuple[Trend, str, float, float | None]] = {}
    for trend in reading.trends:
        peak = max((v for _, v in trend.points), default=None)
        if peak is None:
            continue
        pod = snapshot.get("Pod", trend.labels.get("pod", ""))
        owner = w.workload_of(snapshot, pod) if pod else None
        if pod is None or owner is None:
            continue
        container = trend.labels.get("container", "")
        creep = _creep(trend, _run_started(pod, container), metrics.window)
        full = peak >= MEMORY_FULL
        creeping = (
            creep is not None and creep[1] >= MEMORY_HIGH and creep[1] - creep[0] >= MEMORY_CREEP
        )
        if not (full or creeping):
            continue
        known = worst.get(owner)
        if known is None or peak > known[2]:
            worst[owner] = (trend, container, peak, creep[0] if creep else None)
    findings = []
    for (kind, name), (trend, container, peak, baseline) in sorted(worst.items()):
        since = trend.first if baseline is None else baseline
        findings.append(
            Finding(
                analyzer=ANALYZER,
                mechanism="memory-near-limit",
                category=Category.RESOURCES,
                resource=w.key(snapshot, kind, name),
                summary=f"{kind.lower()}/{name}: container {container} used up to "
                f"{_pct(peak)} of its memory limit ({_pct(since)} "
                f"{'at the start of the window' if baseline is None else 'after it started'})",
                evidence=[
                    _evidence(
                        reading,
                        f"pod {trend.labels.get('pod')} container {container}: working set "
                        f"{_pct(since)} → peak {_pct(peak)} → now {_pct(trend.now)} "
                        "of the limit",
                    )
                ],
                severity=2,
                confidence=CONFIDENCE,
                facts={"container": container, "peak_share": round(peak, 3)},
            )
        )
    return findings


def _rollout_time(snapshot: Snapshot, deployment: w.Obj, revision: int) -> float | None:
    replica_set = w.revisions(snapshot, deployment).get(revision)
    return _timestamp(((replica_set or {}).get("metadata") or {}).get("creationTimestamp"))


def latency_after_rollout(snapshot: Snapshot) -> list[Finding]:
    metrics = snapshot.metrics
    if metrics is None:
        return []
    reading = metrics.latency
    by_service = {t.labels.get("service", ""): t for t in reading.trends}
    findings = []
    for deployment in snapshot.of("Deployment"):
        change = w.latest_change(snapshot, deployment)
        if change is None:
            continue
        when = _rollout_time(snapshot, deployment, change.revision)
        name = w.name_of(deployment)
        services = [w.name_of(s) for s in w.services_selecting(snapshot, deployment)] or [name]
        for service in services:
            trend = by_service.get(service)
            if trend is None or when is None or trend.now is None:
                continue
            before = trend.at(when)
            if before is None:
                continue
            after = trend.now
            if after < before * LATENCY_FACTOR or after - before < LATENCY_FLOOR:
                continue
            findings.append(
                Finding(
                    analyzer=ANALYZER,
                    mechanism="latency-after-rollout",
                    category=Category.BAD_DEPLOY,
                    resource=w.key(snapshot, "Deployment", name),
                    symptoms=[w.key(snapshot, "Service", service)],
                    summary=f"deployment/{name}: {service}'s p95 went from {before:.2f} s to "
                    f"{after:.2f} s after revision {change.revision}",
                    evidence=[
                        _evidence(
                            reading,
                            f"{service} p95 {before:.2f} s before revision {change.revision}, "
                            f"{after:.2f} s now",
                        ),
                        *[
                            w.evidence("revision", f"deployment/{name}", line)
                            for line in change.lines[:2]
                        ],
                    ],
                    severity=2,
                    confidence=CONFIDENCE,
                    facts={"rollback_to": change.previous, "service": service},
                )
            )
            break
    return findings


ANALYZERS = [callers_see_callee_failing, memory_creeping_to_limit, latency_after_rollout]
