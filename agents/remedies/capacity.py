"""Remedies for pods that cannot be created or placed: cordoned or tainted nodes, an exhausted
ResourceQuota, a claim that cannot bind.

The narrowest change ranks first: raise the one quota limit that refuses the pods before
deleting the quota; uncordon the nodes the pods wait for; re-create an unbound claim from its
StatefulSet's template (delete the claim, restart the StatefulSet: one transaction).
"""

from __future__ import annotations

from agents.model import Candidate, Finding, Step
from agents.snapshot import Snapshot

MAX_STEPS = 4  # a candidate is one transaction of at most four actions


def uncordon(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    nodes = list(finding.facts.get("nodes") or [])[:MAX_STEPS]
    if not nodes:
        return []
    return [
        Candidate(
            steps=[Step(action="uncordon", kind="Node", name=node) for node in nodes],
            intent=f"Uncordon {', '.join(f'node/{n}' for n in nodes)} so the Pending pods "
            "can be scheduled",
            why="lets the scheduler use the nodes again; low risk, undone by cordoning",
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.85,
        )
    ]


def remove_taints(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    taints = list(finding.facts.get("taints") or [])[:MAX_STEPS]
    if not taints:
        return []
    return [
        Candidate(
            steps=[
                Step(
                    action="remove-taint",
                    kind="Node",
                    name=str(t["node"]),
                    params={"key": t["key"], "effect": t["effect"]},
                )
                for t in taints
            ],
            intent="Remove the taint(s) that keep the Pending pods off every node that "
            "would take them",
            why="a taint may be deliberate: high risk, always asked; undo puts it back",
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.4,
        )
    ]


def quota(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    name = finding.resource.name
    resource = str(finding.facts.get("resource") or "")
    suggested = finding.facts.get("suggested")
    candidates = []
    if resource and suggested:
        candidates.append(
            Candidate(
                steps=[
                    Step(
                        action="set-quota",
                        kind="ResourceQuota",
                        name=name,
                        params={"resource": resource, "value": str(suggested)},
                    )
                ],
                intent=(
                    f"Raise the {resource} limit of resourcequota/{name} from "
                    f"{finding.facts.get('hard')} to {suggested}: room for what "
                    f"{', '.join(finding.facts.get('workloads') or [])} asked for"
                ),
                why="keeps the quota and its other limits; changes one number; reversible",
                evidence=finding.evidence,
                mechanism=finding.mechanism,
                score=0.8,
            )
        )
    candidates.append(
        Candidate(
            steps=[Step(action="delete-resourcequota", kind="ResourceQuota", name=name)],
            intent=f"Delete resourcequota/{name}, which refuses the pods the workloads need",
            why="removes every limit of the quota (high risk); undo re-creates it",
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.5,
        )
    )
    return candidates


def recreate_claim(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    if "template_class" not in finding.facts or not finding.facts.get("statefulset"):
        return []  # nothing would make the claim again with a class that exists
    name = finding.resource.name
    statefulset = str(finding.facts["statefulset"])
    return [
        Candidate(
            steps=[
                Step(action="delete-pvc", kind="PersistentVolumeClaim", name=name),
                Step(action="rollout-restart", kind="StatefulSet", name=statefulset),
            ],
            intent=(
                f"Delete the unbound claim {name} and restart statefulset/{statefulset}: it "
                f"makes its Pending pod and the claim again, the claim with class "
                f"{finding.facts['template_class']}"
            ),
            why=(
                "the claim never bound, so it holds no data; a restart (rather than deleting "
                "the pod) keeps every step reversible; undo re-creates the claim"
            ),
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.8,
        )
    ]


def fit_limit_range(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    """Bring each refused container inside the LimitRange (its limit down to the max, or its
    request up to the min) where that keeps the container valid; the LimitRange itself is the
    namespace's policy and stays as it is."""
    resource, value = str(finding.facts["resource"]), str(finding.facts["value"])
    steps = []
    for entry in finding.facts.get("containers") or []:
        if not entry.get("valid"):
            continue
        kind, _, name = str(entry["workload"]).partition("/")
        steps.append(
            Step(
                action="set-resources",
                kind=kind,
                name=name,
                params={str(entry["field"]): {resource: value}, "container": entry["container"]},
            )
        )
    if not steps:
        return []
    shown = ", ".join(f"{s.kind.lower()}/{s.name}" for s in steps[:MAX_STEPS])
    side = "limit" if finding.facts.get("bound") == "max" else "request"
    return [
        Candidate(
            steps=steps[:MAX_STEPS],
            intent=f"Set the {resource} {side} of {shown} to {value}, inside "
            f"limitrange/{finding.facts['limitrange']}",
            why=(
                "the LimitRange is the namespace's policy, so the workload moves to fit it; the "
                "value is the LimitRange's own bound and keeps each container valid, and undo "
                "restores the old value"
            ),
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.6,
        )
    ]


REMEDIES = {
    "nodes-cordoned": uncordon,
    "node-tainted": remove_taints,
    "quota-exceeded": quota,
    "pvc-unbound": recreate_claim,
    "limitrange-forbids-pods": fit_limit_range,
}
