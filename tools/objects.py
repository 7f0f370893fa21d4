"""Object references, server-set fields, and readable YAML diffs."""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass
from typing import Any

import yaml

from tools.errors import Invalid
from tools.names import check_name, check_namespace

# Fields the API server or controllers own: never part of a plan, a diff or a before-image
# comparison.
SERVER_METADATA = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
CONTROLLER_ANNOTATIONS = ("deployment.kubernetes.io/revision",)
API_VERSIONS = {
    "Deployment": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "ReplicaSet": "apps/v1",
    "Service": "v1",
    "Pod": "v1",
    "Node": "v1",
    "ConfigMap": "v1",
    "Secret": "v1",
    "Namespace": "v1",
    "Event": "v1",
    "Endpoints": "v1",
    "NetworkPolicy": "networking.k8s.io/v1",
    "HorizontalPodAutoscaler": "autoscaling/v2",
}
CLUSTER_SCOPED = {"Node", "Namespace"}


@dataclass(frozen=True)
class ObjectRef:
    """One object, by kind, name and namespace — each checked when the reference is made, so
    no path segment, query or traversal can ride along into a URL, lock key or audit row."""

    kind: str
    name: str
    namespace: str = ""

    def __post_init__(self) -> None:
        if self.kind not in API_VERSIONS:
            raise Invalid(f"Stratus does not handle objects of kind {self.kind!r}")
        check_name(self.kind, self.name)
        if self.kind in CLUSTER_SCOPED:
            if self.namespace:
                raise Invalid(f"{self.kind.lower()}/{self.name} is cluster-scoped; no namespace")
        else:
            check_namespace(self.namespace)

    @property
    def api_version(self) -> str:
        return API_VERSIONS[self.kind]

    @property
    def key(self) -> str:
        """The lock key: one writer per object."""
        return f"{self.kind}/{self.namespace or '-'}/{self.name}"

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.kind.lower()}/{self.name}{where}"


def ref_of(obj: dict[str, Any]) -> ObjectRef:
    meta = obj["metadata"]
    return ObjectRef(obj["kind"], meta["name"], meta.get("namespace", ""))


def same_object(obj: dict[str, Any] | None, ref: ObjectRef) -> bool:
    """Whether a body names exactly ``ref`` (kind, apiVersion, name, namespace)."""
    if obj is None:
        return True
    meta = obj.get("metadata") or {}
    return (
        obj.get("kind") == ref.kind
        and obj.get("apiVersion") == ref.api_version
        and meta.get("name") == ref.name
        and (meta.get("namespace") or "") == ref.namespace
    )


def normalized(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The object without what the server and controllers set: what a human changes."""
    if obj is None:
        return None
    result = copy.deepcopy(obj)
    result.pop("status", None)
    meta = result.get("metadata") or {}
    for field in SERVER_METADATA:
        meta.pop(field, None)
    _drop_controller_taints(result)
    annotations = meta.get("annotations")
    if annotations:
        for key in CONTROLLER_ANNOTATIONS:
            annotations.pop(key, None)
        if not annotations:
            meta.pop("annotations", None)
    return result


# Taints the node controller sets to mirror spec.unschedulable: not a human's change.
CONTROLLER_TAINTS = ("node.kubernetes.io/unschedulable",)


def _drop_controller_taints(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if obj.get("kind") != "Node" or not isinstance(spec, dict) or not spec.get("taints"):
        return
    kept = [t for t in spec["taints"] if t.get("key") not in CONTROLLER_TAINTS]
    if kept:
        spec["taints"] = kept
    else:
        spec.pop("taints")


def for_create(obj: dict[str, Any]) -> dict[str, Any]:
    """A before-image ready to be created again: server-set fields removed."""
    result = normalized(obj) or {}
    spec = result.get("spec")
    if result.get("kind") == "Service" and isinstance(spec, dict):
        # Cluster IPs are allocated by the server; asking for the old one may be refused.
        spec.pop("clusterIP", None)
        spec.pop("clusterIPs", None)
    return result


def to_yaml(obj: dict[str, Any] | None) -> str:
    if obj is None:
        return ""
    return yaml.safe_dump(obj, sort_keys=True, default_flow_style=False)


def yaml_diff(
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    *,
    label: str,
    context: int = 2,
    old: str = "current",
    new: str = "proposed",
) -> str:
    """A unified diff of the normalized YAML of two objects: only what changes, with context."""
    lines = difflib.unified_diff(
        to_yaml(normalized(before)).splitlines(keepends=True),
        to_yaml(normalized(after)).splitlines(keepends=True),
        fromfile=f"{label} ({old})",
        tofile=f"{label} ({new})",
        n=context,
    )
    return "".join(lines)
