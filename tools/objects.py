"""Object references, server-set fields, and readable YAML diffs (Secret values as digests)."""

from __future__ import annotations

import base64
import binascii
import copy
import difflib
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from store import anchor, integrity, redaction
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
# Written by recovery to stop a held write from landing (``tools.fences``): it says which
# write was fenced, and is no change a person made — never in a diff, a comparison or a digest.
FENCE_ANNOTATION = "stratus.io/fenced"
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
    "PersistentVolumeClaim": "v1",
    "ResourceQuota": "v1",
    "LimitRange": "v1",
    "CronJob": "batch/v1",
    "Job": "batch/v1",
}
CLUSTER_SCOPED = {"Node", "Namespace"}
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


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
        for key in (*CONTROLLER_ANNOTATIONS, FENCE_ANNOTATION):
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
    """A unified diff of the normalized YAML of two objects: only what changes, with context.
    A Secret's values show as digests (``redacted``), and so does the value of an environment
    variable whose name reads as a credential's (``env_redacted``)."""
    lines = difflib.unified_diff(
        to_yaml(env_redacted(redacted(normalized(before)))).splitlines(keepends=True),
        to_yaml(env_redacted(redacted(normalized(after)))).splitlines(keepends=True),
        fromfile=f"{label} ({old})",
        tofile=f"{label} ({new})",
        n=context,
    )
    return "".join(lines)


_DIGEST = re.compile(r"^(sha256|hmac):[0-9a-f]{12}$")
SECRET_DIGEST_KEY = "secret-value"  # the subkey's purpose (``store.anchor.subkey``)


def secret_digest(value: str) -> str:
    """A short, stable fingerprint of a secret value (never the value); the same one the
    agents' snapshots show, so a digest on a card can be matched with what an analyzer saw,
    and two values compared (same value, same digest, in one installation).

    With ``STRATUS_AUDIT_KEY`` set it is an HMAC under a subkey of it (``hmac:``): whoever reads
    the database or a Slack card cannot test guesses of a weak value against it offline.
    Without a key it is a bare SHA-256 (``sha256:``), which such guesses can match
    (docs/tools.md)."""
    key = integrity.audit_key()
    if key is None:
        return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:12]
    subkey = anchor.subkey(key, SECRET_DIGEST_KEY)
    return "hmac:" + hmac.new(subkey, value.encode(), hashlib.sha256).hexdigest()[:12]


def _decoded(raw: object) -> str:
    try:
        return base64.b64decode(str(raw)).decode(errors="replace")
    except (binascii.Error, ValueError):
        return str(raw)


def _digests(source: dict[str, Any]) -> dict[str, str]:
    values = {key: _decoded(raw) for key, raw in (source.get("data") or {}).items()}
    values.update({key: str(raw) for key, raw in (source.get("stringData") or {}).items()})
    digests = {key: secret_digest(value) for key, value in values.items()}
    # Already a digest (an image as Stratus stores it): redacting it again changes nothing. A
    # value in ``data`` is base64, which has no ':', so it is never mistaken for one.
    for key, raw in (source.get("data") or {}).items():
        if isinstance(raw, str) and _DIGEST.fullmatch(raw):
            digests[key] = raw
    return digests


def env_redacted(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The object with the ``value`` of every environment variable whose name reads as a
    credential's (``DB_PASSWORD``, ``API_TOKEN``, ``*_KEY``: ``store.redaction.credential_name``)
    replaced by its digest, in every container list wherever it is nested (a pod, a pod
    template, a CronJob's job template). On the object, not on the diff's text: the name and
    the value are on two lines there, which no pattern over text pairs. A ``valueFrom`` names
    where the value is and is kept; a changed value still shows as a changed digest. For what
    people see only — stored images keep their values (an undo restores them)."""
    if obj is None:
        return None
    result = copy.deepcopy(obj)
    _redact_env(result)
    return result


def _redact_env(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _redact_env(item)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key == "env" and isinstance(value, list):
            for var in value:
                if (
                    isinstance(var, dict)
                    and "value" in var
                    and (
                        redaction.credential_name(str(var.get("name", "")))
                        or redaction.credential_value(str(var["value"]))
                    )
                    and not _DIGEST.fullmatch(str(var["value"]))
                ):
                    var["value"] = secret_digest(str(var["value"]))
        else:
            _redact_env(value)


def redacted(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """A Secret with every value — in ``data``, ``stringData`` and the last-applied annotation
    kubectl writes — replaced by its digest; any other object unchanged. What people see."""
    if obj is None or obj.get("kind") != "Secret":
        return obj
    result = copy.deepcopy(obj)
    if "data" in result or "stringData" in result:
        result["data"] = _digests(result)
        result.pop("stringData", None)
    annotations = (result.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED in annotations:
        try:
            applied = json.loads(annotations[LAST_APPLIED])
        except ValueError:
            applied = None
        digests = _digests(applied) if isinstance(applied, dict) else {}
        annotations[LAST_APPLIED] = json.dumps({"data": digests}, sort_keys=True)
    return result
