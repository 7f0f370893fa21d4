"""Remedies for Services that do not lead to their pods and NetworkPolicies that block callers.

Each fix changes the one object at fault: the Service's targetPort or selector, a Service
created for callers that need it, a blocking policy removed (re-created on undo). The most
specific fix ranks first; removing a policy, which also drops what it protected, is offered
with that said.
"""

from __future__ import annotations

from agents.model import Candidate, Finding, Step
from agents.snapshot import Snapshot


def target_port(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    suggested = finding.facts.get("suggested")
    if suggested is None:
        return []
    name = finding.resource.name
    return [
        Candidate(
            steps=[
                Step(
                    action="patch-service",
                    kind="Service",
                    name=name,
                    params={
                        "port_index": int(finding.facts.get("port_index", 0)),
                        "target_port": suggested,
                    },
                )
            ],
            intent=f"Point service/{name} at port {suggested}, which its pods listen on",
            why="changes one field of the Service at fault; reversible; touches no pod",
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.9,
        )
    ]


def selector(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    suggested = finding.facts.get("suggested")
    if not suggested:
        return []
    name = finding.resource.name
    shown = ",".join(f"{k}={v}" for k, v in suggested.items())
    return [
        Candidate(
            steps=[
                Step(
                    action="patch-service",
                    kind="Service",
                    name=name,
                    params={"selector": dict(suggested)},
                )
            ],
            intent=f"Make service/{name} select {shown} ({finding.facts.get('why', '')})",
            why="changes the Service's selector only; reversible; touches no pod",
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.9,
        )
    ]


def missing_service(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    ports = finding.facts.get("ports") or []
    selector_labels = finding.facts.get("selector") or {}
    if not ports or not selector_labels:
        return []
    name = finding.resource.name
    return [
        Candidate(
            steps=[
                Step(
                    action="create-service",
                    kind="Service",
                    name=name,
                    params={
                        "selector": dict(selector_labels),
                        "ports": [dict(p) for p in ports],
                        "labels": dict(finding.facts.get("labels") or selector_labels),
                    },
                )
            ],
            intent=(
                f"Create service/{name} for the pods of {finding.facts.get('workload', '')}, "
                "which its callers cannot resolve"
            ),
            why="adds the missing object only; undo deletes it",
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.9,
        )
    ]


def blocking_policy(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    name = finding.resource.name
    return [
        Candidate(
            steps=[Step(action="delete-networkpolicy", kind="NetworkPolicy", name=name)],
            intent=(
                f"Delete networkpolicy/{name}, which blocks "
                f"{', '.join(finding.facts.get('callers', [])) or 'the callers'}"
            ),
            why=(
                "the policy blocks traffic the app needs; deleting it also drops what it "
                "protected, and undo re-creates it exactly"
            ),
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.7,
        )
    ]


def dns_blocking_policy(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    name = finding.resource.name
    return [
        Candidate(
            steps=[Step(action="delete-networkpolicy", kind="NetworkPolicy", name=name)],
            intent=(
                f"Delete networkpolicy/{name}, whose egress rules leave out DNS, so "
                f"{', '.join(finding.facts.get('callers', [])) or 'its pods'} can resolve "
                "names again"
            ),
            why=(
                "the catalog cannot add a rule to a policy; deleting it restores lookups at "
                "once and undo re-creates it exactly. Afterwards a person should re-apply it "
                "with an egress rule to port 53 (UDP and TCP) of kube-dns in kube-system"
            ),
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.7,
        )
    ]


REMEDIES = {
    "service-target-port": target_port,
    "service-selector": selector,
    "service-missing": missing_service,
    "network-policy-blocks-callers": blocking_policy,
    "network-policy-blocks-dns": dns_blocking_policy,
}
