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
        spiking.setdefault(trend.labels.get("destination_service", ""), []).append(trend)
    findings = []
    for callee, trends in sorted(spiking.items()):
        if not callee:
            continue
        callers = sorted(t.labels.get("service", "?") for t in trends)
        findings.append(
            Finding(
                analyzer=ANALYZER,
                mechanism="callers-errors-spike",
                category=Category.NETWORK,
                resource=_service_target(snapshot, callee),
                symptoms=[_service_target(snapshot, c) for c in callers],
                summary=f"{', '.join(callers)} now fail{'s' if len(callers) == 1 else ''} "
                f"{_pct(max(t.now or 0 for t in trends))} of their calls to {callee}",
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
                facts={"callee": callee, "callers": callers},
            )
        )
    return findings


def memory_creeping_to_limit(snapshot: Snapshot) -> list[Finding]:
    metrics = snapshot.metrics
    if metrics is None:
        return []
    reading = metrics.memory
    worst: dict[tuple[str, str], tuple[Trend, str]] = {}
    for trend in reading.trends:
        peak = max((v for _, v in trend.points), default=None)
        first = trend.first
        if peak is None or first is None:
            continue
        full = peak >= MEMORY_FULL
        creeping = peak >= MEMORY_HIGH and peak - first >= MEMORY_CREEP
        if not (full or creeping):
            continue
        pod = snapshot.get("Pod", trend.labels.get("pod", ""))
        owner = w.workload_of(snapshot, pod) if pod else None
        if owner is None:
            continue
        container = trend.labels.get("container", "")
        known = worst.get(owner)
        if known is None or peak > max(v for _, v in known[0].points):
            worst[owner] = (trend, container)
    findings = []
    for (kind, name), (trend, container) in sorted(worst.items()):
        peak = max(v for _, v in trend.points)
        findings.append(
            Finding(
                analyzer=ANALYZER,
                mechanism="memory-near-limit",
                category=Category.RESOURCES,
                resource=w.key(snapshot, kind, name),
                summary=f"{kind.lower()}/{name}: container {container} used up to "
                f"{_pct(peak)} of its memory limit ({_pct(trend.first)} at the start of the "
                "window)",
                evidence=[
                    _evidence(
                        reading,
                        f"pod {trend.labels.get('pod')} container {container}: working set "
                        f"{_pct(trend.first)} → peak {_pct(peak)} → now {_pct(trend.now)} "
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
    stamp = ((replica_set or {}).get("metadata") or {}).get("creationTimestamp")
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


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
