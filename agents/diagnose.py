"""Localization: from every analyzer's findings to a ranked list of diagnoses.

Symptoms are followed upstream, the way a person reads an outage: a caller's errors lead to
the Service it calls, the Service to the workload behind it, the workload to the ConfigMap,
Secret or claim it reads, and a workload to the rollout that changed it. A finding that another
finding explains (its resource lies upstream along those links, or lists it as a symptom) is
not a root; what is left are the roots, ranked by how badly they break callers, how sure the
analyzer is, and how much else they explain. Findings on the same resource are merged into one
diagnosis whose evidence keeps the source of every line.

Pure functions of the findings and the snapshot they came from.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from agents.analyzers import _workloads as w
from agents.model import Diagnosis, Evidence, Finding, ResourceKey
from agents.snapshot import Snapshot

# A finding this unsure is a symptom-level hint: it never pushes another finding off the root.
MIN_EXPLAINER_CONFIDENCE = 0.5
# Below this no diagnosis is made from the finding alone (a false positive is worse than a miss).
MIN_ROOT_CONFIDENCE = 0.5
EVIDENCE_LIMIT = 10
CALLER_LINES = 3


@dataclass
class Group:
    """The findings on one resource, the most telling first."""

    resource: ResourceKey
    findings: list[Finding] = field(default_factory=list)

    @property
    def primary(self) -> Finding:
        return self.findings[0]

    @property
    def confidence(self) -> float:
        return self.primary.confidence

    @property
    def severity(self) -> int:
        return max(f.severity for f in self.findings)

    @property
    def symptoms(self) -> set[ResourceKey]:
        return {s for f in self.findings for s in f.symptoms}


def group_by_resource(findings: Iterable[Finding]) -> list[Group]:
    groups: dict[ResourceKey, Group] = {}
    for finding in findings:
        groups.setdefault(
            _plain(finding.resource), Group(_plain(finding.resource))
        ).findings.append(finding)
    for group in groups.values():
        group.findings.sort(key=lambda f: (-f.confidence, -f.severity, f.mechanism))
    return list(groups.values())


def _plain(resource: ResourceKey) -> ResourceKey:
    """Resources compare by kind and name (analyzers may or may not fill the namespace)."""
    return ResourceKey(kind=resource.kind, name=resource.name)


# ------------------------------------------------------------------ the links upstream


def dependencies(snapshot: Snapshot) -> dict[ResourceKey, set[ResourceKey]]:
    """For each resource, the resources whose failure would explain its own."""
    links: dict[ResourceKey, set[ResourceKey]] = {}

    def link(a: ResourceKey, b: ResourceKey) -> None:
        if a != b:
            links.setdefault(a, set()).add(b)

    workloads = [(kind, o) for kind in w.WORKLOAD_KINDS for o in snapshot.of(kind)]
    for kind, workload in workloads:
        me = ResourceKey(kind=kind, name=w.name_of(workload))
        for service in w.services_selecting(snapshot, workload):
            link(ResourceKey(kind="Service", name=w.name_of(service)), me)
        for ref in referenced(workload):
            link(me, ref)
        for pod in w.pods_of(snapshot, kind, w.name_of(workload)):
            link(ResourceKey(kind="Pod", name=w.name_of(pod)), me)
    for error in w.call_errors(snapshot):
        caller = _caller_workload(snapshot, w.pod_of_log(error.caller))
        link(caller, ResourceKey(kind="Service", name=error.callee))
    return links


def referenced(workload: w.Obj) -> set[ResourceKey]:
    """ConfigMaps, Secrets and claims a workload's pods read."""
    spec = w.template_of(workload).get("spec") or {}
    found: set[ResourceKey] = set()
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        for entry in container.get("env") or []:
            source = entry.get("valueFrom") or {}
            for ref_kind, field_name in (
                ("ConfigMap", "configMapKeyRef"),
                ("Secret", "secretKeyRef"),
            ):
                if name := _name(source, field_name):
                    found.add(ResourceKey(kind=ref_kind, name=name))
        for source in container.get("envFrom") or []:
            for ref_kind, field_name in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                if name := _name(source, field_name):
                    found.add(ResourceKey(kind=ref_kind, name=name))
    for volume in spec.get("volumes") or []:
        if name := _name(volume, "configMap"):
            found.add(ResourceKey(kind="ConfigMap", name=name))
        if name := _name(volume, "secret", "secretName"):
            found.add(ResourceKey(kind="Secret", name=name))
        if name := _name(volume, "persistentVolumeClaim", "claimName"):
            found.add(ResourceKey(kind="PersistentVolumeClaim", name=name))
    for template in (workload.get("spec") or {}).get("volumeClaimTemplates") or []:
        prefix = f"{template['metadata']['name']}-{w.name_of(workload)}-"
        found.add(ResourceKey(kind="PersistentVolumeClaim", name=prefix + "0"))
    return found


def _name(source: w.Obj, field_name: str, key: str = "name") -> str:
    """The name a reference names, or "" when the reference is null or names nothing (the
    schema makes both optional: ``valueFrom.configMapKeyRef: null``, a ref without a name)."""
    ref = source.get(field_name)
    return str(ref.get(key) or "") if isinstance(ref, dict) else ""


def _caller_workload(snapshot: Snapshot, pod_name: str) -> ResourceKey:
    pod = snapshot.get("Pod", pod_name)
    owner = w.workload_of(snapshot, pod) if pod else None
    return (
        ResourceKey(kind=owner[0], name=owner[1])
        if owner
        else ResourceKey(kind="Pod", name=pod_name)
    )


def upstream(start: ResourceKey, links: dict[ResourceKey, set[ResourceKey]]) -> set[ResourceKey]:
    seen: set[ResourceKey] = set()
    todo = [start]
    while todo:
        for nxt in links.get(todo.pop(), set()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    seen.discard(start)
    return seen


def explains(cause: Group, effect: Group, links: dict[ResourceKey, set[ResourceKey]]) -> bool:
    return effect.resource in {_plain(s) for s in cause.symptoms} or cause.resource in upstream(
        effect.resource, links
    )


# ------------------------------------------------------------------ roots


def roots(groups: list[Group], links: dict[ResourceKey, set[ResourceKey]]) -> list[Group]:
    """Groups no more convincing group explains, best first."""
    explained_by: dict[int, list[Group]] = {
        id(g): [
            h
            for h in groups
            if h is not g and h.confidence >= MIN_EXPLAINER_CONFIDENCE and explains(h, g, links)
        ]
        for g in groups
    }
    found = []
    for group in groups:
        if group.confidence < MIN_ROOT_CONFIDENCE:
            continue
        # A mutual explanation (A lists B as a symptom, B's resource lies upstream of A) goes
        # to the analyzer that is surer it found a cause.
        beaten = [h for h in explained_by[id(group)] if _beats(h, group, explained_by[id(h)])]
        if not beaten:
            found.append(group)
    reach = {id(g): sum(1 for h in groups if h is not g and explains(g, h, links)) for g in found}
    return sorted(
        found,
        key=lambda g: (
            -g.severity,
            -g.confidence,
            -_is_change(g),  # a coinciding change is the more specific answer
            -reach[id(g)],
            g.resource.kind,
            g.resource.name,
        ),
    )


def _is_change(group: Group) -> bool:
    return any("rollback_to" in f.facts for f in group.findings)


def _beats(explainer: Group, group: Group, explainer_explained_by: list[Group]) -> bool:
    """Whether ``explainer`` takes the root from ``group``, which it explains.

    A mutual explanation goes to the analyzer surer it found a cause. A change that coincides
    with the failure (a rollout that touched the failing field) is the more specific answer:
    only a surer finding or another change takes the root from it.
    """
    if explainer.confidence > group.confidence:
        return True
    if group in explainer_explained_by:
        return False
    return not _is_change(group) or _is_change(explainer)


# ------------------------------------------------------------------ evidence


def _merged_evidence(items: Iterable[Evidence]) -> list[Evidence]:
    seen: set[tuple[str, str]] = set()
    merged = []
    for item in items:
        if (item.ref, item.text) not in seen:
            seen.add((item.ref, item.text))
            merged.append(item)
    return merged


def callers_evidence(snapshot: Snapshot, resource: ResourceKey) -> list[Evidence]:
    """Callers' error lines that lead to ``resource`` (its Service, or itself as a Service)."""
    if resource.kind == "Service":
        services = {resource.name}
    else:
        workload = snapshot.get(resource.kind, resource.name)
        if workload is None or resource.kind not in w.WORKLOAD_KINDS:
            return []
        services = {w.name_of(s) for s in w.services_selecting(snapshot, workload)}
    lines = [
        e
        for e in w.call_errors(snapshot)
        if e.callee in services or (e.chain and e.chain[-1] in services)
    ]
    return [w.evidence("log", w.log_ref(e.caller), e.line) for e in lines[:CALLER_LINES]]


def to_diagnosis(root: Group, explained: list[Group], snapshot: Snapshot) -> Diagnosis:
    primary = root.primary
    evidence = _merged_evidence(
        [e for f in root.findings for e in f.evidence] + callers_evidence(snapshot, root.resource)
    )[:EVIDENCE_LIMIT]
    resource = primary.resource
    return Diagnosis(
        resource=resource,
        category=primary.category,
        mechanism=primary.mechanism,
        summary=primary.summary
        + (f" (explains {len(explained)} other finding(s))" if explained else ""),
        evidence=evidence,
        findings=[*root.findings, *(f for g in explained for f in g.findings)],
    )


def diagnose(findings: list[Finding], snapshot: Snapshot) -> list[Diagnosis]:
    """Ranked diagnoses, the most likely root cause first; empty when nothing is wrong."""
    groups = group_by_resource(findings)
    links = dependencies(snapshot)
    ranked = roots(groups, links)
    return [
        to_diagnosis(
            root, [g for g in groups if g is not root and explains(root, g, links)], snapshot
        )
        for root in ranked
    ]
