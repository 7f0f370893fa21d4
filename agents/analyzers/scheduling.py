"""Pods the scheduler cannot place, for reasons that lie in the workload's own template: a
nodeSelector or node affinity no node satisfies, requests larger than any node, tolerations a
rollout dropped.

Reasons that lie elsewhere — cordoned or tainted nodes, quota, claims that do not bind — belong
to the node, quota and storage analyzers; this module stays silent on them so a cordon is never
"fixed" by rewriting a healthy workload.
"""

from __future__ import annotations

from typing import Any

from agents.analyzers import _workloads as w
from agents.analyzers.pods import Cause, change_facts, workload_finding
from agents.model import Category, Evidence, Finding
from agents.snapshot import Snapshot

ANALYZER = "scheduling"


def _unscheduled(pod: w.Obj) -> str | None:
    """The scheduler's message for a pod it could not place, or None."""
    status = pod.get("status") or {}
    if status.get("phase") != "Pending":
        return None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or condition.get("reason") or "")
    return None


def _node_matches(node: w.Obj, spec: w.Obj) -> bool:
    labels = node["metadata"].get("labels") or {}
    selector = spec.get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(_term_matches(labels, term) for term in terms)


def _term_matches(labels: dict[str, str], term: w.Obj) -> bool:
    for expression in term.get("matchExpressions") or []:
        value = labels.get(str(expression.get("key")))
        operator = expression.get("operator")
        values = expression.get("values") or []
        if operator == "In" and value not in values:
            return False
        if operator == "NotIn" and value in values:
            return False
        if operator == "Exists" and value is None:
            return False
        if operator == "DoesNotExist" and value is not None:
            return False
    return True


def _too_large(spec: w.Obj, nodes: list[w.Obj]) -> dict[str, str]:
    """Requests of the pod that no node could ever hold (empty when some node could)."""
    requested: dict[str, float] = {}
    raw: dict[str, str] = {}
    for container in spec.get("containers") or []:
        for resource, amount in ((container.get("resources") or {}).get("requests") or {}).items():
            requested[resource] = requested.get(resource, 0.0) + w.quantity(amount)
            raw[resource] = str(amount)
    too_large = {}
    for resource, amount in requested.items():
        capacity = [
            w.quantity(((n.get("status") or {}).get("allocatable") or {}).get(resource, 0))
            for n in nodes
        ]
        if capacity and amount > max(capacity):
            too_large[resource] = raw[resource]
    return too_large


def _cause(spec: w.Obj, message: str, nodes: list[w.Obj]) -> Cause | None:
    if nodes and not any(_node_matches(n, spec) for n in nodes):
        selector = spec.get("nodeSelector") or {}
        wanted = ",".join(f"{k}={v}" for k, v in selector.items()) or "its node affinity"
        return Cause(
            "unschedulable-node-selector",
            Category.SCHEDULING,
            f"must run on a node matching {wanted}, and no node does",
            0.9,
            facts=(("node_selector", dict(selector)),),
        )
    too_large = _too_large(spec, nodes)
    if too_large and "Insufficient" in message:
        wanted = ", ".join(f"{k}={v}" for k, v in too_large.items())
        return Cause(
            "insufficient-capacity",
            Category.RESOURCES,
            f"requests {wanted}, more than any node has",
            0.85,
            facts=(("requests", too_large),),
        )
    if "untolerated taint" in message:
        return Cause(
            "untolerated-taint",
            Category.SCHEDULING,
            "does not tolerate the nodes' taints",
            0.6,
        )
    return None


# Which template change explains each scheduling failure (without one, a taint is the node's).
EXPLAINING_POD_FIELDS = {
    "unschedulable-node-selector": ("nodeSelector", "affinity"),
    "insufficient-capacity": (),
    "untolerated-taint": ("tolerations",),
}


def _rollback(mechanism: str, change: w.TemplateChange | None, spec: w.Obj) -> dict[str, Any]:
    if change is None:
        return {}
    if mechanism == "insufficient-capacity":
        touched = any(change.touches(str(c.get("name")), "resources") for c in spec["containers"])
    else:
        touched = change.touches_pod(*EXPLAINING_POD_FIELDS[mechanism])
    return {"rollback_to": change.previous, "changed": change.lines[:6]} if touched else {}


def unschedulable_pods(snapshot: Snapshot) -> list[Finding]:
    nodes = snapshot.of("Node")
    seen: set[tuple[str, str]] = set()
    findings = []
    for pod in snapshot.pods:
        message = _unscheduled(pod)
        workload = w.workload_of(snapshot, pod)
        if message is None or workload is None or workload in seen:
            continue
        if workload[0] not in (*w.WORKLOAD_KINDS, *w.JOB_KINDS):
            continue
        spec = pod.get("spec") or {}
        cause = _cause(spec, message, nodes)
        if cause is None:
            continue
        change, change_evidence = change_facts(snapshot, workload)
        facts: dict[str, Any] = {"pods": 1, **_rollback(cause.mechanism, change, spec)}
        if cause.mechanism == "untolerated-taint" and "rollback_to" not in facts:
            continue  # the nodes were tainted: the node analyzers speak to that
        if cause.mechanism == "insufficient-capacity":
            facts["container"] = _largest_requester(spec, dict(cause.facts)["requests"])
        if workload[0] in w.JOB_KINDS:  # the runs a fix of a CronJob's template must replace
            job = w.controller_of(pod)
            facts["jobs"] = [job[1]] if job is not None and job[0] == "Job" else []
        seen.add(workload)
        name = w.name_of(pod)
        evidence: list[Evidence] = [w.evidence("status", f"pod/{name}", f"Pending: {message}")]
        if "rollback_to" in facts:
            evidence += change_evidence
        findings.append(
            workload_finding(
                snapshot,
                analyzer=ANALYZER,
                workload=workload,
                cause=cause,
                evidence=evidence,
                facts=facts,
            )
        )
    return findings


def _largest_requester(spec: w.Obj, too_large: dict[str, str]) -> str:
    resource = next(iter(too_large))
    containers = spec.get("containers") or []
    best = max(
        containers,
        key=lambda c: w.quantity(
            ((c.get("resources") or {}).get("requests") or {}).get(resource, 0)
        ),
    )
    return str(best.get("name"))


ANALYZERS = [unschedulable_pods]
