"""A ResourceQuota that refuses the pods a workload needs.

The witness is the controller's own FailedCreate event (``exceeded quota: NAME, requested: …,
used: …, limited: …``), and a finding needs the refusal to still hold: the quota's hard limit
is still below what is used plus what was requested, and the workload still lacks replicas. A
quota with room — or one that refused something long since done — is a quota doing its job.

Facts set (``quota-exceeded``): ``resource`` (the spec.hard key, e.g. ``pods``), ``hard`` (as
it is), ``used``, ``requested`` (what the blocked workloads asked for together), ``suggested``
(a hard limit with room for them), ``workloads`` ("Kind/name").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from agents.analyzers import _workloads as w
from agents.model import Category, Evidence, Finding, ResourceKey
from agents.snapshot import Snapshot

NAME = "quota"
_EXCEEDED = re.compile(
    r"exceeded quota: (?P<quota>[-.a-z0-9]+), requested: (?P<requested>.+?), "
    r"used: (?P<used>.+?), limited: (?P<limited>[^\s]+)"
)


def _pairs(text: str) -> dict[str, str]:
    found = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        if sep:
            found[key] = value
    return found


def _format(resource: str, amount: float) -> str:
    if resource.endswith("cpu"):
        return f"{math.ceil(amount * 1000)}m"
    if any(word in resource for word in ("memory", "storage")):
        return f"{math.ceil(amount / 2**20)}Mi"
    return str(math.ceil(amount))


@dataclass
class _Refusal:
    quota: str
    resource: str
    used: float
    requested: float = 0.0
    workloads: set[tuple[str, str]] = field(default_factory=set)
    events: list[Evidence] = field(default_factory=list)


def _short_of_replicas(snapshot: Snapshot, owner: tuple[str, str]) -> bool:
    workload = snapshot.get(*owner)
    if workload is None:
        return False
    status = workload.get("status") or {}
    if owner[0] == "DaemonSet":
        return int(status.get("numberAvailable") or 0) < int(
            status.get("desiredNumberScheduled") or 0
        )
    desired = w.desired_replicas(workload)
    return (
        int(status.get("availableReplicas") or 0) < desired
        or int(status.get("updatedReplicas") or 0) < desired
    )


def _owner(snapshot: Snapshot, kind: str, name: str) -> tuple[str, str] | None:
    obj = snapshot.get(kind, name)
    if obj is None:
        return None
    parent = w.controller_of(obj) if kind == "ReplicaSet" else None
    return parent if parent and parent[0] == "Deployment" else (kind, name)


def exhausted_quotas(snapshot: Snapshot) -> list[Finding]:
    refusals: dict[tuple[str, str], _Refusal] = {}
    seen_objects: set[tuple[str, str, str]] = set()
    for event in snapshot.of("Event"):
        match = _EXCEEDED.search(str(event.get("message") or ""))
        if event.get("reason") != "FailedCreate" or match is None:
            continue
        involved = event.get("involvedObject") or {}
        owner = _owner(snapshot, str(involved.get("kind")), str(involved.get("name")))
        if owner is None or not _short_of_replicas(snapshot, owner):
            continue
        requested, in_use = _pairs(match["requested"]), _pairs(match["used"])
        for resource, amount in requested.items():
            entry = refusals.setdefault(
                (match["quota"], resource),
                _Refusal(match["quota"], resource, w.quantity(in_use.get(resource, "0"))),
            )
            if (resource, *owner) not in seen_objects:
                seen_objects.add((resource, *owner))
                entry.requested += w.quantity(amount)
                entry.workloads.add(owner)
                ref = f"{str(involved.get('kind')).lower()}/{involved.get('name')}"
                entry.events.append(w.evidence("event", ref, f"FailedCreate: {match.group(0)}"))
    findings = []
    for (quota_name, resource), refusal in sorted(refusals.items()):
        quota = snapshot.get("ResourceQuota", quota_name)
        if quota is None:
            continue
        hard_text = ((quota.get("spec") or {}).get("hard") or {}).get(resource)
        if hard_text is None:
            continue
        used_now = ((quota.get("status") or {}).get("used") or {}).get(resource)
        used = w.quantity(used_now) if used_now is not None else refusal.used
        hard = w.quantity(hard_text)
        if used + refusal.requested <= hard:
            continue  # there is room now: the refusal is history
        suggested = _format(resource, used + refusal.requested)
        owners = sorted(refusal.workloads)
        findings.append(
            Finding(
                analyzer=NAME,
                mechanism="quota-exceeded",
                category=Category.RESOURCES,
                resource=w.key(snapshot, "ResourceQuota", quota_name),
                symptoms=[
                    ResourceKey(kind=k, name=n, namespace=snapshot.namespace) for k, n in owners
                ],
                summary=(
                    f"resourcequota/{quota_name} caps {resource} at {hard_text} with "
                    f"{used_now if used_now is not None else _format(resource, used)} used; "
                    f"{', '.join(f'{k.lower()}/{n}' for k, n in owners)} cannot create the "
                    f"pods it needs"
                ),
                evidence=[
                    w.evidence(
                        "spec",
                        f"resourcequota/{quota_name}",
                        f"hard {resource}={hard_text}, used {used_now or '?'}",
                    ),
                    *refusal.events[:3],
                ],
                severity=3,
                confidence=0.9,
                facts={
                    "resource": resource,
                    "hard": str(hard_text),
                    "used": str(used_now) if used_now is not None else _format(resource, used),
                    "requested": _format(resource, refusal.requested),
                    "suggested": suggested,
                    "workloads": [f"{k}/{n}" for k, n in owners],
                },
            )
        )
    return findings


ANALYZERS = [exhausted_quotas]
