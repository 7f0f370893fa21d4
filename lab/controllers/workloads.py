"""Helpers the workload controllers share: template hashes, pod creation, surge arithmetic."""

from __future__ import annotations

import copy
import hashlib
import json
import math
from typing import Any

from lab.cluster.errors import ApiError
from lab.cluster.resources import by_kind
from lab.controllers.context import ControllerContext, controller_uid, owner_reference

HASH_LABEL = "pod-template-hash"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def template_hash(template: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(_SAFE[b % len(_SAFE)] for b in digest[:10])


def without_hash_label(template: dict[str, Any]) -> dict[str, Any]:
    """The template without its pod-template-hash label, for comparing: only the dicts on the
    way to the label are copied (a deep copy of every template at every sync was most of a lab
    reset); the rest is shared, so the result is not for changing."""
    labels = (template.get("metadata") or {}).get("labels")
    if not labels or HASH_LABEL not in labels:
        return template
    metadata = dict(template["metadata"])
    metadata["labels"] = {k: v for k, v in labels.items() if k != HASH_LABEL}
    return {**template, "metadata": metadata}


def resolve_int_or_percent(value: Any, total: int, *, round_up: bool) -> int:
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        fraction = total * int(text[:-1]) / 100
        return math.ceil(fraction) if round_up else math.floor(fraction)
    return int(text)


def owned(ctx: ControllerContext, key: str, owner: dict[str, Any]) -> list[dict[str, Any]]:
    uid = owner["metadata"]["uid"]
    return [
        o
        for o in ctx.store.list_objects(key, owner["metadata"]["namespace"])
        if controller_uid(o) == uid
    ]


def pod_is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def pod_is_active(pod: dict[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def create_pod(
    ctx: ControllerContext,
    owner: dict[str, Any],
    template: dict[str, Any],
    *,
    name: str | None = None,
    generate_name: str | None = None,
    extra_labels: dict[str, str] | None = None,
    node_name: str | None = None,
    component: str,
) -> dict[str, Any] | None:
    """Create a pod through the API (so quota admission applies); a refusal becomes an event."""
    meta = copy.deepcopy(template.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), **(extra_labels or {})}
    meta["ownerReferences"] = [owner_reference(owner)]
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = generate_name
    spec = copy.deepcopy(template.get("spec") or {})
    if node_name:
        spec["nodeName"] = node_name
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    namespace = owner["metadata"]["namespace"]
    try:
        created = ctx.api.create(by_kind("Pod"), namespace, pod)
    except ApiError as error:
        ctx.events.record(
            owner,
            "Warning",
            "FailedCreate",
            f"Error creating: {error.message}",
            component=component,
        )
        return None
    ctx.events.record(
        owner,
        "Normal",
        "SuccessfulCreate",
        f"Created pod: {created['metadata']['name']}",
        component=component,
    )
    return created


def delete_pod(
    ctx: ControllerContext, owner: dict[str, Any], pod: dict[str, Any], *, component: str
) -> None:
    name = pod["metadata"]["name"]
    current = ctx.store.get("pods", pod["metadata"]["namespace"], name)
    if current is None or current["metadata"].get("deletionTimestamp"):
        return  # gone, or already terminating: a second DELETE changes nothing
    ctx.api.delete(by_kind("Pod"), pod["metadata"]["namespace"], name)
    ctx.events.record(
        owner, "Normal", "SuccessfulDelete", f"Deleted pod: {name}", component=component
    )


def condition(
    kind: str,
    status: bool,
    reason: str,
    message: str,
    now: str,
    previous: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A status condition that keeps its lastTransitionTime while its status does not change."""
    old = next((c for c in previous or [] if c.get("type") == kind), None)
    value = "True" if status else "False"
    transition = old["lastTransitionTime"] if old and old.get("status") == value else now
    update = old.get("lastUpdateTime", now) if old and old.get("reason") == reason else now
    return {
        "type": kind,
        "status": value,
        "lastUpdateTime": update,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }
