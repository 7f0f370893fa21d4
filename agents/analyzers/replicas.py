"""Workloads with fewer replicas than they need: scaled to zero while callers still call them,
and autoscalers whose bounds hold a workload below what it declares.

Zero replicas alone is not a fault — teams park workloads at zero on purpose. It becomes one
only when something shows the workload is needed: callers' error lines naming a Service that
selects it. Likewise an autoscaler is only at fault when its maximum is below what the
workload or the autoscaler itself was last applied with.
"""

from __future__ import annotations

from typing import Any

from agents.analyzers import _workloads as w
from agents.model import Category, Evidence, Finding
from agents.snapshot import Snapshot

ANALYZER = "replicas"
CALLER_LINES = 3


def _desired(workload: w.Obj) -> int:
    return w.desired_replicas(workload)


def restore_replicas(snapshot: Snapshot, workload: w.Obj) -> tuple[int, str]:
    """How many replicas the workload ran with before, and where that number comes from."""
    applied = w.last_applied(workload) or {}
    declared = (applied.get("spec") or {}).get("replicas")
    if isinstance(declared, int) and declared > 0:
        return declared, "its last-applied configuration"
    if workload.get("kind") == "Deployment":
        earlier = [
            int(
                (rs["metadata"].get("annotations") or {}).get(
                    "deployment.kubernetes.io/desired-replicas", "0"
                )
                or 0
            )
            for rs in w.revisions(snapshot, workload).values()
        ]
        if max(earlier, default=0) > 0:
            return max(earlier), "its ReplicaSets' desired-replicas"
    return 1, "a single replica (nothing records more)"


def _callers_of(snapshot: Snapshot, workload: w.Obj, services: list[str]) -> list[w.CallError]:
    """Error lines of *other* workloads' pods that name one of ``services``."""
    own = {w.name_of(p) for p in w.pods_of(snapshot, str(workload["kind"]), w.name_of(workload))}
    return [
        error
        for error in w.call_errors(snapshot)
        if w.pod_of_log(error.caller) not in own
        and (error.callee in services or any(s in services for s in error.chain))
    ]


def scaled_to_zero(snapshot: Snapshot) -> list[Finding]:
    findings = []
    for kind in ("Deployment", "StatefulSet"):
        for workload in snapshot.of(kind):
            if _desired(workload) != 0:
                continue
            typed = {**workload, "kind": kind}
            services = [w.name_of(s) for s in w.services_selecting(snapshot, typed)]
            callers = _callers_of(snapshot, typed, services)
            declared = _declared_need(snapshot, typed)
            if not callers and not declared:
                continue  # parked at zero and nobody misses it
            findings.append(_zero_finding(snapshot, typed, services, callers, declared))
    return findings


def _declared_need(snapshot: Snapshot, workload: w.Obj) -> list[Evidence]:
    """What declares, without a caller's error, that the workload must run: an autoscaler
    that targets it with a minimum, or a Service exposed outside the cluster in front of a
    workload applied with replicas (outside callers leave no logs here)."""
    kind, name = str(workload["kind"]), w.name_of(workload)
    found = []
    for hpa in snapshot.of("HorizontalPodAutoscaler"):
        target = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
        minimum = int((hpa.get("spec") or {}).get("minReplicas") or 1)
        if (target.get("kind"), target.get("name")) == (kind, name) and minimum > 0:
            found.append(
                w.evidence(
                    "spec",
                    f"horizontalpodautoscaler/{w.name_of(hpa)}",
                    f"autoscales {kind.lower()}/{name} with minReplicas {minimum}; at 0 "
                    "replicas autoscaling is off",
                )
            )
    declared = ((w.last_applied(workload) or {}).get("spec") or {}).get("replicas")
    if isinstance(declared, int) and declared > 0:
        for service in w.services_selecting(snapshot, workload):
            kind_of_service = (service.get("spec") or {}).get("type")
            if kind_of_service in ("NodePort", "LoadBalancer"):
                found.append(
                    w.evidence(
                        "spec",
                        f"service/{w.name_of(service)}",
                        f"type {kind_of_service}: exposed outside the cluster",
                    )
                )
    return found


def _zero_finding(
    snapshot: Snapshot,
    workload: w.Obj,
    services: list[str],
    callers: list[w.CallError],
    declared: list[Evidence],
) -> Finding:
    kind, name = str(workload["kind"]), w.name_of(workload)
    replicas, source = restore_replicas(snapshot, workload)
    evidence: list[Evidence] = [
        w.evidence("spec", f"{kind.lower()}/{name}", "spec.replicas is 0"),
        w.evidence("spec", f"{kind.lower()}/{name}", f"{replicas} replica(s) per {source}"),
    ]
    evidence += [w.evidence("log", w.log_ref(c.caller), c.line) for c in callers[:CALLER_LINES]]
    evidence += declared
    caller_pods = sorted({w.pod_of_log(c.caller) for c in callers})
    needed = (
        f"{len(caller_pods)} caller pod(s) fail calling service {'/'.join(services)}"
        if callers
        else "it is declared needed (" + "; ".join(e.text for e in declared[:2]) + ")"
    )
    return Finding(
        analyzer=ANALYZER,
        mechanism="scaled-to-zero",
        category=Category.CAPACITY,
        resource=w.key(snapshot, kind, name),
        symptoms=[w.key(snapshot, "Service", s) for s in services]
        + [w.key(snapshot, "Pod", p) for p in caller_pods],
        summary=f"{kind.lower()}/{name} is scaled to 0 replicas while {needed}",
        evidence=evidence,
        severity=3,
        # Callers failing is proof; a declaration of need is strong but may be stale.
        confidence=0.9 if callers else 0.75,
        facts={"workload_kind": kind, "workload": name, "replicas": replicas},
    )


def _hpa_need(snapshot: Snapshot, hpa: w.Obj) -> tuple[int, int, list[str]]:
    """(replicas needed, maxReplicas last applied, where the need comes from)."""
    target = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
    workload = snapshot.get(str(target.get("kind")), str(target.get("name")))
    applied_hpa = (w.last_applied(hpa) or {}).get("spec") or {}
    reasons = []
    need = 0
    if workload is not None:
        declared = ((w.last_applied(workload) or {}).get("spec") or {}).get("replicas")
        if isinstance(declared, int) and declared > 0:
            need = declared
            reasons.append(
                f"{str(target.get('kind')).lower()}/{target.get('name')} was applied with "
                f"{declared} replicas"
            )
    applied_min = applied_hpa.get("minReplicas")
    if isinstance(applied_min, int) and applied_min > need:
        need = applied_min
        reasons.append(f"the autoscaler was applied with minReplicas {applied_min}")
    applied_max = applied_hpa.get("maxReplicas")
    return need, applied_max if isinstance(applied_max, int) else 0, reasons


def hpa_bounds(snapshot: Snapshot) -> list[Finding]:
    findings = []
    for hpa in snapshot.of("HorizontalPodAutoscaler"):
        spec = hpa.get("spec") or {}
        maximum = int(spec.get("maxReplicas") or 0)
        need, applied_max, reasons = _hpa_need(snapshot, hpa)
        if maximum <= 0 or need <= maximum:
            continue
        target = spec.get("scaleTargetRef") or {}
        name = w.name_of(hpa)
        facts: dict[str, Any] = {
            "max_replicas": max(need, applied_max),
            "target_kind": target.get("kind"),
            "target": target.get("name"),
        }
        if int(spec.get("minReplicas") or 1) < need:
            facts["min_replicas"] = min(need, facts["max_replicas"])
        findings.append(
            Finding(
                analyzer=ANALYZER,
                mechanism="hpa-caps-replicas",
                category=Category.CAPACITY,
                resource=w.key(snapshot, "HorizontalPodAutoscaler", name),
                symptoms=[w.key(snapshot, str(target.get("kind")), str(target.get("name")))],
                summary=f"horizontalpodautoscaler/{name} caps {str(target.get('kind')).lower()}/"
                f"{target.get('name')} at {maximum} replicas, below the {need} it needs",
                evidence=[
                    w.evidence(
                        "spec", f"horizontalpodautoscaler/{name}", f"maxReplicas is {maximum}"
                    ),
                    *(w.evidence("spec", f"horizontalpodautoscaler/{name}", r) for r in reasons),
                ],
                severity=2,
                confidence=0.8,
                facts=facts,
            )
        )
    return findings


def hpa_floor(snapshot: Snapshot) -> list[Finding]:
    """An autoscaler whose minimum was raised above what it was applied with, holding its
    target above the replicas it was applied with: every extra pod is cost (and, on a full
    cluster, Pending pods), and the autoscaler will not scale below its floor by itself."""
    findings = []
    for hpa in snapshot.of("HorizontalPodAutoscaler"):
        spec = hpa.get("spec") or {}
        applied = (w.last_applied(hpa) or {}).get("spec") or {}
        minimum, applied_min = int(spec.get("minReplicas") or 1), applied.get("minReplicas")
        if not isinstance(applied_min, int) or minimum <= applied_min:
            continue
        target = spec.get("scaleTargetRef") or {}
        kind, name = str(target.get("kind")), str(target.get("name"))
        workload = snapshot.get(kind, name)
        if workload is None or kind not in ("Deployment", "StatefulSet"):
            continue
        declared = ((w.last_applied(workload) or {}).get("spec") or {}).get("replicas")
        applied_max = applied.get("maxReplicas")
        high = applied_max if isinstance(applied_max, int) else int(spec.get("maxReplicas") or 1)
        want = min(max(declared if isinstance(declared, int) else applied_min, applied_min), high)
        if int((workload.get("spec") or {}).get("replicas", 1)) <= want:
            continue
        hpa_name = w.name_of(hpa)
        facts: dict[str, Any] = {
            "min_replicas": applied_min,
            "target_kind": kind,
            "target": name,
            "replicas": want,
        }
        if isinstance(applied_max, int) and applied_max != spec.get("maxReplicas"):
            facts["max_replicas"] = applied_max
        findings.append(
            Finding(
                analyzer=ANALYZER,
                mechanism="hpa-floor-raised",
                category=Category.CAPACITY,
                resource=w.key(snapshot, "HorizontalPodAutoscaler", hpa_name),
                symptoms=[w.key(snapshot, kind, name)],
                summary=f"horizontalpodautoscaler/{hpa_name} holds {kind.lower()}/{name} at "
                f"{minimum}+ replicas, above the {applied_min} it was applied with",
                evidence=[
                    w.evidence(
                        "spec", f"horizontalpodautoscaler/{hpa_name}", f"minReplicas is {minimum}"
                    ),
                    w.evidence(
                        "spec",
                        f"horizontalpodautoscaler/{hpa_name}",
                        f"the autoscaler was applied with minReplicas {applied_min}",
                    ),
                    w.evidence(
                        "spec",
                        f"{kind.lower()}/{name}",
                        f"spec.replicas is {(workload.get('spec') or {}).get('replicas')}; "
                        f"{want} per its last-applied configuration",
                    ),
                ],
                severity=1,
                confidence=0.8,
                facts=facts,
            )
        )
    return findings


ANALYZERS = [scaled_to_zero, hpa_bounds, hpa_floor]
