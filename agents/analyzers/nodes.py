"""Nodes that keep pods Pending: cordoned, or carrying a taint the pods do not tolerate.

A cordon or a taint is often deliberate (maintenance, dedicated nodes), so a node is a cause
only when pods wait for it: a Pending pod that no node will take now, and that these nodes
would take but for the cordon (or the taint). A cordoned node nobody waits for is healthy.
Which nodes would take a pod is worked out from the pod's nodeSelector and tolerations; the
node controller's own taints (``node.kubernetes.io/…``, which mirror a cordon or a node's
state) are never the taint at fault.

Facts set: ``nodes`` (the node names, sorted); for ``node-tainted`` also ``taints`` (list of
``{node, key, effect}``).
"""

from __future__ import annotations

from agents.analyzers import _workloads as w
from agents.model import Category, Evidence, Finding, ResourceKey
from agents.snapshot import Snapshot

NAME = "nodes"
CONTROLLER_TAINTS = "node.kubernetes.io/"
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def _pending(pod: w.Obj) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Pending" or (pod.get("spec") or {}).get("nodeName"):
        return False
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False"
        for c in status.get("conditions") or []
    )


def _tolerates(pod: w.Obj, taint: w.Obj) -> bool:
    for toleration in (pod.get("spec") or {}).get("tolerations") or []:
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists" and not toleration.get("key"):
            return True
        if toleration.get("key") != taint.get("key"):
            continue
        if toleration.get("operator") == "Exists" or toleration.get("value") == taint.get("value"):
            return True
    return False


def _selector_fits(pod: w.Obj, node: w.Obj) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _blockers(pod: w.Obj, node: w.Obj) -> tuple[bool, list[w.Obj]]:
    """(cordoned, the person-set taints the pod does not tolerate) for one node."""
    spec = node.get("spec") or {}
    taints = [
        t
        for t in spec.get("taints") or []
        if t.get("effect") in BLOCKING_EFFECTS
        and not str(t.get("key", "")).startswith(CONTROLLER_TAINTS)
        and not _tolerates(pod, t)
    ]
    return bool(spec.get("unschedulable")), taints


def _scheduler_messages(snapshot: Snapshot, pod: w.Obj) -> list[Evidence]:
    name = w.name_of(pod)
    found = [
        w.evidence("event", f"pod/{name}", f"{e.get('reason')}: {e.get('message')}")
        for e in snapshot.of("Event")
        if (e.get("involvedObject") or {}).get("name") == name
        and e.get("reason") == "FailedScheduling"
    ]
    return found[-1:]


def _symptoms(snapshot: Snapshot, pods: list[w.Obj]) -> list[ResourceKey]:
    found: set[ResourceKey] = set()
    for pod in pods:
        found.add(w.key(snapshot, "Pod", w.name_of(pod)))
        owner = w.workload_of(snapshot, pod)
        if owner:
            found.add(w.key(snapshot, *owner))
    return sorted(found, key=str)


def blocking_nodes(snapshot: Snapshot) -> list[Finding]:
    nodes = snapshot.of("Node")
    cordoned: dict[str, list[w.Obj]] = {}  # node → pods waiting for it
    tainted: dict[tuple[str, str, str], list[w.Obj]] = {}  # (node, key, effect) → pods
    for pod in snapshot.pods:
        if not _pending(pod):
            continue
        fitting = [n for n in nodes if _selector_fits(pod, n)]
        verdicts = {w.name_of(n): _blockers(pod, n) for n in fitting}
        if not verdicts or any(not c and not t for c, t in verdicts.values()):
            continue  # no node would take it anyway, or one takes it now: not the nodes' doing
        for node, (is_cordoned, taints) in verdicts.items():
            if is_cordoned and not taints:
                cordoned.setdefault(node, []).append(pod)
            if taints and not is_cordoned:
                for taint in taints:
                    spot = (node, str(taint.get("key")), str(taint.get("effect")))
                    tainted.setdefault(spot, []).append(pod)
    findings = []
    if cordoned:
        names = sorted(cordoned)
        pods = [p for pods in cordoned.values() for p in pods]
        unique = list({w.name_of(p): p for p in pods}.values())
        findings.append(
            Finding(
                analyzer=NAME,
                mechanism="nodes-cordoned",
                category=Category.SCHEDULING,
                resource=w.key(snapshot, "Node", names[0]),
                symptoms=_symptoms(snapshot, unique),
                summary=(
                    f"{len(unique)} pod(s) stay Pending because node(s) {', '.join(names)} "
                    "are cordoned, and no other node will take them"
                ),
                evidence=[
                    *(w.evidence("spec", f"node/{n}", "spec.unschedulable: true") for n in names),
                    *(e for p in unique[:2] for e in _scheduler_messages(snapshot, p)),
                ],
                severity=3,
                confidence=0.9,
                facts={"nodes": names},
            )
        )
    if tainted:
        spots = sorted(tainted)
        names = sorted({node for node, _, _ in spots})
        keys = ", ".join(sorted({k for _, k, _ in spots}))
        unique = list({w.name_of(p): p for pods in tainted.values() for p in pods}.values())
        findings.append(
            Finding(
                analyzer=NAME,
                mechanism="node-tainted",
                category=Category.SCHEDULING,
                resource=w.key(snapshot, "Node", names[0]),
                symptoms=_symptoms(snapshot, unique),
                summary=(
                    f"{len(unique)} pod(s) stay Pending: every node that would take them "
                    f"carries a taint they do not tolerate ({keys})"
                ),
                evidence=[
                    *(w.evidence("spec", f"node/{n}", f"taint {k}:{e}") for n, k, e in spots[:4]),
                    *(e for p in unique[:2] for e in _scheduler_messages(snapshot, p)),
                ],
                severity=3,
                confidence=0.55,  # a taint is often deliberate: a pod-side change may be meant
                facts={
                    "nodes": names,
                    "taints": [{"node": n, "key": k, "effect": e} for n, k, e in spots],
                },
            )
        )
    return findings


ANALYZERS = [blocking_nodes]
