"""Finalizers as the API server keeps them (pure: no store, no clock).

A DELETE of an object whose ``metadata.finalizers`` is not empty does not remove it: the
server stamps ``deletionTimestamp`` (and ``deletionGracePeriodSeconds: 0``) and the object
stays, "stuck Terminating", until whoever owns each finalizer removes it with an update; the
write that leaves none removes the object. No finalizer may be added to an object that is
being deleted. A pod is stamped by its graceful deletion first and held by its finalizers
after its containers have stopped.

The protection finalizers of volumes (``kubernetes.io/pv-protection``,
``kubernetes.io/pvc-protection``) do not hold: the lab does not model the controllers that
release them, so they act as released at once.

Sources: ``staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go``
(``Delete``, ``updateForGracefulDeletionAndFinalizers``, ``shouldDeleteForFailedInitialization``)
and ``pkg/apis/core/validation`` (``ValidateObjectMetaUpdate``'s finalizer rule).
"""

from __future__ import annotations

import copy
from typing import Any

from lab.cluster.errors import invalid

RELEASED_AT_ONCE = frozenset({"kubernetes.io/pv-protection", "kubernetes.io/pvc-protection"})


def holding(obj: dict[str, Any]) -> list[str]:
    """The finalizers that keep ``obj`` from going."""
    names = (obj.get("metadata") or {}).get("finalizers") or []
    return [str(n) for n in names if n not in RELEASED_AT_ONCE]


def stamped(obj: dict[str, Any], timestamp: str) -> dict[str, Any]:
    """``obj`` as a DELETE leaves it while finalizers hold it; an earlier stamp is kept."""
    result = copy.deepcopy(obj)
    meta = result.setdefault("metadata", {})
    meta.setdefault("deletionTimestamp", timestamp)
    meta["deletionGracePeriodSeconds"] = 0
    return result


def check_update(kind: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """An object being deleted takes no new finalizer: the real server's 422."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if not old_meta.get("deletionTimestamp"):
        return
    before = set(old_meta.get("finalizers") or [])
    added = [str(n) for n in new_meta.get("finalizers") or [] if n not in before]
    if added:
        listed = ", ".join(f'"{n}"' for n in added)
        raise invalid(
            kind,
            str(old_meta.get("name", "")),
            [
                (
                    "metadata.finalizers",
                    "Forbidden: no new finalizers can be added if the object is being "
                    f"deleted, found new finalizers []string{{{listed}}}",
                )
            ],
        )


def released(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """The write takes the last finalizer off an object being deleted: it goes now."""
    deleting = bool((old.get("metadata") or {}).get("deletionTimestamp"))
    return (
        deleting
        and not holding(new)
        and (old.get("metadata") or {}).get("deletionGracePeriodSeconds") in (0, None)
    )
