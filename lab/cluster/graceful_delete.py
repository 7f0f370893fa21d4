"""Graceful pod deletion as the API server decides it (pure: no store, no clock).

A DELETE of a pod that runs on a node does not remove it: the server stamps
``metadata.deletionTimestamp`` (now + the grace period) and ``deletionGracePeriodSeconds``
and answers the pod, which ``kubectl get`` then shows as ``Terminating``. The kubelet runs
the containers' ``preStop`` hooks, sends SIGTERM, kills what is still running when the grace
period is over, and only then deletes the pod for good (with a grace period of 0).

The grace period is the request's ``gracePeriodSeconds``, else the pod's
``terminationGracePeriodSeconds`` (defaulted to 30 at creation). A pod that never reached a
node, or that has already ended (Succeeded or Failed), has nothing to stop and goes at once,
as does a request for 0 seconds (``kubectl delete --grace-period=0 --force``). A second DELETE
of a terminating pod can only shorten what is left (from the first request's moment, as
``k8s.io/apiserver``'s ``BeforeDelete`` computes it), never lengthen it.

Sources: ``pkg/registry/core/pod/strategy.go`` (``CheckGracefulDelete``) and
``staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go`` (``BeforeDelete``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_GRACE_SECONDS = 30


@dataclass(frozen=True)
class Decision:
    """What a DELETE of a pod does: remove it now, stamp it, or leave it as it is."""

    now: bool  # remove the object at once
    grace: int = 0  # seconds, when stamping
    deletion_at: float = 0.0  # epoch seconds of the new deletionTimestamp, when stamping
    unchanged: bool = False  # already terminating and this request shortens nothing


def requested_grace(pod: dict[str, Any], options: dict[str, Any]) -> int:
    """The grace period a DELETE asks for: the request's, else the pod's own."""
    asked = options.get("gracePeriodSeconds")
    if isinstance(asked, int) and not isinstance(asked, bool):
        return asked if asked >= 0 else 1  # a negative period is 1 s, as CheckGracefulDelete has it
    own = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    if isinstance(own, int) and not isinstance(own, bool):
        return max(own, 0)
    return DEFAULT_GRACE_SECONDS


def decide(
    pod: dict[str, Any], options: dict[str, Any], *, now: float, deleting_since: float | None
) -> Decision:
    """``deleting_since`` is the epoch second the pod's first DELETE was taken (its
    deletionTimestamp minus its grace period), or None when it is not terminating."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    grace = requested_grace(pod, options)
    if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
        grace = 0
    meta = pod.get("metadata") or {}
    if deleting_since is not None:
        current = meta.get("deletionGracePeriodSeconds")
        asked = options.get("gracePeriodSeconds")
        if grace == 0 and isinstance(asked, int):
            return Decision(now=True)
        if not isinstance(asked, int) or not isinstance(current, int) or grace >= current:
            return Decision(now=False, unchanged=True)
        return Decision(now=False, grace=grace, deletion_at=deleting_since + grace)
    if grace == 0:
        return Decision(now=True)
    return Decision(now=False, grace=grace, deletion_at=now + grace)


def stamped(pod: dict[str, Any], decision: Decision, timestamp: str) -> dict[str, Any]:
    """The pod with its deletion stamp (``timestamp`` renders ``decision.deletion_at``)."""
    meta = {
        **pod["metadata"],
        "deletionTimestamp": timestamp,
        "deletionGracePeriodSeconds": decision.grace,
    }
    return {**pod, "metadata": meta}
