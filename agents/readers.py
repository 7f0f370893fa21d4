"""Which pods have not yet read a ConfigMap or Secret written moments ago.

A pod reads its ConfigMaps and Secrets (environment variables, ``envFrom``, mounted files as a
process reads them at start) when its containers start. A look soon after such a write can
find the very crash loop the write fixed still there, because the container has not restarted
since (issue 18 F1: "worse (4 → 5)" two seconds after the restored key, and the fix undone).
Verification waits for these readers, bounded, and says which had not restarted yet.
Pure functions of the pods as the API returns them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

DATA_KINDS = ("ConfigMap", "Secret")


def refers_to(pod: dict[str, Any], kind: str, name: str) -> bool:
    """Whether ``pod`` reads ConfigMap or Secret ``name`` (env, envFrom, volumes)."""
    spec = pod.get("spec") or {}
    key_ref, from_ref, volume = (
        ("configMapKeyRef", "configMapRef", "configMap")
        if kind == "ConfigMap"
        else ("secretKeyRef", "secretRef", "secret")
    )
    containers = (spec.get("initContainers") or []) + (spec.get("containers") or [])
    for container in containers:
        for env in container.get("env") or []:
            if ((env.get("valueFrom") or {}).get(key_ref) or {}).get("name") == name:
                return True
        for source in container.get("envFrom") or []:
            if (source.get(from_ref) or {}).get("name") == name:
                return True
    for vol in spec.get("volumes") or []:
        found = vol.get(volume) or {}
        if (found.get("name") or found.get("secretName")) == name:
            return True
        for projected in (vol.get("projected") or {}).get("sources") or []:
            if (projected.get(volume) or {}).get("name") == name:
                return True
    return False


def last_start(pod: dict[str, Any]) -> dt.datetime | None:
    """When a container of the pod last started (running now, or the run that ended last)."""
    found: list[dt.datetime] = []
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        for state in (status.get("state") or {}, status.get("lastState") or {}):
            for phase in ("running", "terminated"):
                at = _parse((state.get(phase) or {}).get("startedAt"))
                if at is not None:
                    found.append(at)
    return max(found, default=None)


def starts(pods: list[dict[str, Any]], objects: list[tuple[str, str]]) -> dict[str, Any]:
    """The last start of each pod that reads one of ``objects`` (kind, name): what the first
    look after the write saw, for ``not_restarted`` to compare with."""
    return {
        str(pod["metadata"]["name"]): last_start(pod)
        for pod in pods
        if any(kind in DATA_KINDS and refers_to(pod, kind, name) for kind, name in objects)
    }


def not_restarted(
    pods: list[dict[str, Any]], objects: list[tuple[str, str]], first: dict[str, Any]
) -> tuple[str, ...]:
    """Readers of ``objects`` in a crash back-off that have not started a container since the
    first look after the write (``first``, from ``starts``): they may still run on what the
    object held before, so their crash loop is not a verdict on the write yet. Measured
    against the cluster's own stamps, never against Stratus's clock."""
    stale = []
    for pod in pods:
        name = str(pod["metadata"]["name"])
        if name not in first or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue  # a pod made since the write reads the new data
        if _backing_off(pod) and last_start(pod) == first[name]:
            stale.append(name)
    return tuple(sorted(stale))


def _backing_off(pod: dict[str, Any]) -> bool:
    return any(
        ((c.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"
        for c in (pod.get("status") or {}).get("containerStatuses") or []
    )


def _parse(value: Any) -> dt.datetime | None:
    if not value:
        return None
    try:
        at = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=dt.UTC)
