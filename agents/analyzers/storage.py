"""Claims that cannot bind, keeping a StatefulSet's pod Pending.

A PersistentVolumeClaim that is Pending because its StorageClass does not exist blocks the pod
that mounts it. When the claim belongs to a StatefulSet (it is named after one of its
volumeClaimTemplates and ordinals) and that template names a class that does exist, the claim
is the odd one out: deleting it and the pod lets the StatefulSet make both again from its
template. A claim that is merely waiting (its class exists, or binds on first consumer) is not
a finding.

Facts set (``pvc-unbound``): ``storage_class`` (the missing class), ``template_class`` (what
the StatefulSet's template asks for; absent when the claim has no owner to re-create it),
``statefulset``, ``pods`` (the pods that mount it).
"""

from __future__ import annotations

from agents.analyzers import _workloads as w
from agents.model import Category, Finding, ResourceKey
from agents.snapshot import Snapshot

NAME = "storage"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def _class_of(spec: w.Obj, classes: dict[str, w.Obj]) -> str | None:
    """The class a claim spec gets: its own, or the cluster's default."""
    if spec.get("storageClassName") is not None:
        return str(spec["storageClassName"])
    default = next(
        (
            n
            for n, c in classes.items()
            if ((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS) == "true"
        ),
        None,
    )
    return default


def _owning_statefulset(snapshot: Snapshot, claim: str) -> tuple[w.Obj, w.Obj] | None:
    """(StatefulSet, its volumeClaimTemplate) that names ``claim`` TEMPLATE-SET-ORDINAL."""
    for statefulset in snapshot.of("StatefulSet"):
        for template in (statefulset.get("spec") or {}).get("volumeClaimTemplates") or []:
            prefix = f"{template['metadata']['name']}-{w.name_of(statefulset)}-"
            if claim.startswith(prefix) and claim[len(prefix) :].isdigit():
                return statefulset, template
    return None


def _mounting(snapshot: Snapshot, claim: str) -> list[w.Obj]:
    return [
        p
        for p in snapshot.pods
        if any(
            (v.get("persistentVolumeClaim") or {}).get("claimName") == claim
            for v in (p.get("spec") or {}).get("volumes") or []
        )
    ]


def unbound_claims(snapshot: Snapshot) -> list[Finding]:
    classes = {w.name_of(c): c for c in snapshot.of("StorageClass")}
    if "StorageClass" in snapshot.unavailable:
        return []  # cannot tell a missing class from an unreadable one
    findings = []
    for claim in snapshot.of("PersistentVolumeClaim"):
        name = w.name_of(claim)
        spec = claim.get("spec") or {}
        if (claim.get("status") or {}).get("phase") == "Bound" or spec.get("volumeName"):
            continue
        wanted = _class_of(spec, classes)
        if not wanted or wanted in classes:
            continue
        pods = [
            p
            for p in _mounting(snapshot, name)
            if (p.get("status") or {}).get("phase") == "Pending"
        ]
        if not pods:
            continue  # nothing waits for it
        owner = _owning_statefulset(snapshot, name)
        template_class = _class_of((owner[1].get("spec") or {}), classes) if owner else None
        pod_names = sorted(w.name_of(p) for p in pods)
        facts: dict[str, object] = {"storage_class": wanted, "pods": pod_names}
        symptoms = [
            ResourceKey(kind="Pod", name=w.name_of(p), namespace=snapshot.namespace) for p in pods
        ]
        if owner is not None:
            facts["statefulset"] = w.name_of(owner[0])
            symptoms.append(w.key(snapshot, "StatefulSet", w.name_of(owner[0])))
            if template_class in classes:
                facts["template_class"] = template_class
        events = [
            w.evidence(
                "event",
                f"{str((e.get('involvedObject') or {}).get('kind')).lower()}/"
                f"{(e.get('involvedObject') or {}).get('name')}",
                f"{e.get('reason')}: {e.get('message')}",
            )
            for e in snapshot.of("Event")
            if (e.get("involvedObject") or {}).get("name") in {name, *pod_names}
            and e.get("type") == "Warning"
        ]
        findings.append(
            Finding(
                analyzer=NAME,
                mechanism="pvc-unbound",
                category=Category.STORAGE,
                resource=w.key(snapshot, "PersistentVolumeClaim", name),
                symptoms=symptoms,
                summary=(
                    f"persistentvolumeclaim/{name} asks for storage class {wanted}, which does "
                    f"not exist, so {', '.join(w.name_of(p) for p in pods)} stays Pending"
                    + (
                        f"; its StatefulSet's template asks for {template_class}, which exists"
                        if "template_class" in facts
                        else ""
                    )
                ),
                evidence=[
                    w.evidence(
                        "spec",
                        f"persistentvolumeclaim/{name}",
                        f"storageClassName {wanted}; classes in the cluster: "
                        f"{', '.join(sorted(classes)) or 'none'}",
                    ),
                    *events[-3:],
                ],
                severity=3,
                confidence=0.9,
                facts=facts,
            )
        )
    return findings


ANALYZERS = [unbound_claims]
