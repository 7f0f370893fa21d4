"""One stored version per kind, served in the others too, as the API server's conversion does.

HorizontalPodAutoscalers are stored as ``autoscaling/v2`` and served as ``autoscaling/v1`` as
well (``kubectl autoscale`` of kubectl 1.20 … 1.33 writes v1). v1 carries only a CPU target; the
rest of a v2 object (other metrics, behavior, conditions, current metrics) rides in the
``autoscaling.alpha.kubernetes.io/*`` annotations a real server uses for the same purpose, so a
v1 read-modify-write keeps it.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from lab.cluster import resources
from lab.cluster.resources import ResourceType

_ALPHA = "autoscaling.alpha.kubernetes.io/"
_METRICS = _ALPHA + "metrics"
_BEHAVIOR = _ALPHA + "behavior"
_CONDITIONS = _ALPHA + "conditions"
_CURRENT = _ALPHA + "current-metrics"
DEFAULT_CPU_UTILIZATION = 80


def storage_type(rt: ResourceType) -> ResourceType:
    """The served type objects of ``rt``'s kind are stored as."""
    return resources.by_kind(rt.kind) if rt.group else rt


def converts(rt: ResourceType) -> bool:
    return storage_type(rt) is not rt


def to_storage(rt: ResourceType, obj: Any) -> Any:
    """A request body sent to ``rt`` in the storage version; other bodies pass unchanged."""
    if not converts(rt) or not isinstance(obj, dict):
        return obj
    if obj.get("apiVersion", rt.api_version) != rt.api_version:
        return obj  # the API server answers 400 for the mismatch
    stored = storage_type(rt)
    if rt.kind == "HorizontalPodAutoscaler":
        obj = _hpa_v1_to_v2(obj)
    return {**obj, "apiVersion": stored.api_version, "kind": stored.kind}


def from_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object as ``rt``'s version serves it."""
    if not converts(rt):
        return obj
    if rt.kind == "HorizontalPodAutoscaler":
        obj = _hpa_v2_to_v1(obj)
    return {**obj, "apiVersion": rt.api_version, "kind": rt.kind}


def _is_cpu_utilization(metric: dict[str, Any]) -> bool:
    resource = metric.get("resource") or {}
    return (
        metric.get("type") == "Resource"
        and resource.get("name") == "cpu"
        and (resource.get("target") or {}).get("type") == "Utilization"
    )


def _hpa_v2_to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(obj)
    meta = result.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    spec = result.get("spec") or {}
    metrics = spec.pop("metrics", None) or []
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    others = [m for m in metrics if m is not cpu]
    if cpu is not None:
        target = cpu["resource"]["target"].get("averageUtilization")
        if target is not None:
            spec["targetCPUUtilizationPercentage"] = target
    if others:
        annotations[_METRICS] = json.dumps(others, separators=(",", ":"))
    behavior = spec.pop("behavior", None)
    if behavior:
        annotations[_BEHAVIOR] = json.dumps(behavior, separators=(",", ":"))
    status = result.get("status")
    if isinstance(status, dict):
        current = status.pop("currentMetrics", None) or []
        conditions = status.pop("conditions", None)
        cpu_now = next(
            (
                m
                for m in current
                if m.get("type") == "Resource" and (m.get("resource") or {}).get("name") == "cpu"
            ),
            None,
        )
        if cpu_now is not None:
            value = ((cpu_now.get("resource") or {}).get("current") or {}).get("averageUtilization")
            if value is not None:
                status["currentCPUUtilizationPercentage"] = value
        if conditions:
            annotations[_CONDITIONS] = json.dumps(conditions, separators=(",", ":"))
        if current:
            annotations[_CURRENT] = json.dumps(current, separators=(",", ":"))
    if annotations:
        meta["annotations"] = annotations
    return result


def _hpa_v1_to_v2(obj: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(obj)
    meta = result.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    spec = result.setdefault("spec", {})
    metrics: list[dict[str, Any]] = []
    target = spec.pop("targetCPUUtilizationPercentage", None)
    others = _loads(annotations.pop(_METRICS, None))
    if target is not None or not others:
        metrics.append(
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {
                        "type": "Utilization",
                        "averageUtilization": DEFAULT_CPU_UTILIZATION if target is None else target,
                    },
                },
            }
        )
    metrics.extend(m for m in others if isinstance(m, dict))
    spec["metrics"] = metrics
    behavior = _loads(annotations.pop(_BEHAVIOR, None))
    if behavior:
        spec["behavior"] = behavior
    conditions = _loads(annotations.pop(_CONDITIONS, None))
    current = _loads(annotations.pop(_CURRENT, None))
    status = result.get("status")
    if isinstance(status, dict):
        status.pop("currentCPUUtilizationPercentage", None)
        if conditions:
            status["conditions"] = conditions
        if current:
            status["currentMetrics"] = current
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return result


def _loads(text: str | None) -> Any:
    if not text:
        return []
    try:
        return json.loads(text)
    except ValueError:
        return []
