"""Whether a namespace is still unfolding: a fault caught in the act looks different a few
seconds later.

An investigation started moments after a change (a ConfigMap edited, a rollout begun) can see
a new pod crash before its logs say why, and conclude that nothing can be done — while the
same look ten seconds later names the cause and its fix. So before the workflow gives up
(no diagnosis, no candidate, nothing wrong yet) it asks this module whether the namespace is
still moving and, if so, looks again, bounded by ``WorkflowConfig.unfold_timeout``.

Pure: a snapshot and the time now in, the reasons it is still moving out ("" when it is not).
Every signal is a change seen within ``WINDOW`` seconds of ``now`` — a pod starting or
restarting, a rollout progressing — so a namespace that has sat broken for an hour is not
"moving" however many pods are unready (the lab's instant clock lives a day in the past, so
the tests that settle it never wait here).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from agents.snapshot import Snapshot

WINDOW = 60.0  # seconds: a change this recent means the namespace may still be unfolding
MAX_REASONS = 5


def moving(snapshot: Snapshot, *, now: datetime, window: float = WINDOW) -> list[str]:
    """Why the namespace is still moving (at most ``MAX_REASONS``), or [] when it is not."""
    reasons = [
        *_rollouts(snapshot, now, window),
        *_scaled_to_zero(snapshot, now, window),
        *_pods(snapshot.pods, now, window),
    ]
    return reasons[:MAX_REASONS]


def _rollouts(snapshot: Snapshot, now: datetime, window: float) -> Iterable[str]:
    for deployment in snapshot.of("Deployment"):
        name = str(deployment.get("metadata", {}).get("name", "?"))
        spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
        wanted = int(spec.get("replicas", 1) or 0)
        updated = int(status.get("updatedReplicas", 0) or 0)
        behind = int(status.get("observedGeneration", 0) or 0) < int(
            deployment.get("metadata", {}).get("generation", 0) or 0
        )
        progressing = _condition(deployment, "Progressing")
        recent = _recent(progressing.get("lastUpdateTime"), now, window)
        stuck = progressing.get("reason") == "ProgressDeadlineExceeded"
        if recent and not stuck and (behind or updated < wanted):
            yield f"deployment/{name} is rolling out ({updated} of {wanted} updated)"


def _scaled_to_zero(snapshot: Snapshot, now: datetime, window: float) -> Iterable[str]:
    """A Deployment scaled to zero moments ago: its pods go at once and its callers have not
    failed yet, so for a second or two the namespace looks healthy to every other signal."""
    scaled = {
        str((event.get("involvedObject") or {}).get("name", ""))
        for event in snapshot.of("Event")
        if event.get("reason") == "ScalingReplicaSet"
        and (event.get("involvedObject") or {}).get("kind") == "Deployment"
        and _recent(_text(event.get("lastTimestamp") or event.get("eventTime")), now, window)
    }
    for deployment in snapshot.of("Deployment"):
        name = str(deployment.get("metadata", {}).get("name", "?"))
        if name in scaled and int((deployment.get("spec") or {}).get("replicas", 1) or 0) == 0:
            yield f"deployment/{name} was scaled to 0 moments ago"


def _text(stamp: object) -> object:
    # The Kubernetes client hands event times over as datetimes, the API as RFC 3339 text.
    return stamp.isoformat() if isinstance(stamp, datetime) else stamp


def _pods(pods: list[dict[str, Any]], now: datetime, window: float) -> Iterable[str]:
    for pod in pods:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        name = str(meta.get("name", "?"))
        if meta.get("deletionTimestamp"):
            yield f"pod {name} is terminating"
            continue
        ready = _condition(pod, "Ready").get("status") == "True"
        if ready:
            continue
        if _recent(meta.get("creationTimestamp"), now, window):
            yield f"pod {name} started moments ago and is not ready yet"
            continue
        restarted = [
            (c.get("lastState") or {}).get("terminated", {}).get("finishedAt")
            for c in status.get("containerStatuses") or []
        ]
        if any(_recent(at, now, window) for at in restarted):
            yield f"pod {name} restarted moments ago and is not ready yet"


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return condition
    return {}


def _recent(stamp: object, now: datetime, window: float) -> bool:
    if not isinstance(stamp, str) or not stamp:
        return False
    try:
        at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return False
    if at.tzinfo is None or now.tzinfo is None:
        return False
    return -window <= (now - at).total_seconds() <= window
