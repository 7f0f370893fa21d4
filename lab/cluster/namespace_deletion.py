"""A namespace's deletion as the API server and the namespace controller carry it out (pure:
no store, no clock).

A DELETE of a namespace does not remove it: the server stamps ``deletionTimestamp`` and the
namespace's ``status.phase`` becomes ``Terminating``. The namespace controller then deletes
everything in it. Most objects go at once; pods get the same graceful termination as any
other pod deletion (``graceful_delete``), so their ``preStop`` hooks run and their grace
periods are honoured; objects with finalizers stay until those are removed
(``finalizers``). While pods remain, the status carries a ``NamespaceContentRemaining``
condition, while finalizers hold objects a ``NamespaceFinalizersRemaining`` one, and any
create in the namespace is refused with 403 ``NamespaceTerminating``. When nothing is left,
the ``kubernetes`` finalizer is released and the namespace goes.
``default``, ``kube-system`` and ``kube-public`` may not be deleted at all.

Sources: ``pkg/registry/core/namespace/storage/storage.go`` (``Delete``: stamp, phase),
``pkg/controller/namespace/deletion/namespaced_resources_deleter.go`` (the conditions and
their messages) and ``plugin/pkg/admission/namespace/lifecycle`` (the refused create).
"""

from __future__ import annotations

import copy
from typing import Any

from lab.cluster.errors import ApiError, invalid

CONTENT_REMAINING = "NamespaceContentRemaining"
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"
_OURS = (CONTENT_REMAINING, FINALIZERS_REMAINING)
# The namespaces the NamespaceLifecycle admission plugin never lets go.
IMMORTAL = frozenset({"default", "kube-system", "kube-public"})


def stamped(namespace: dict[str, Any], timestamp: str) -> dict[str, Any]:
    """The namespace as a DELETE leaves it: stamped, Terminating, its finalizer held."""
    result = copy.deepcopy(namespace)
    meta = result.setdefault("metadata", {})
    meta["deletionTimestamp"] = timestamp
    meta.setdefault("deletionGracePeriodSeconds", 0)
    spec = result.setdefault("spec", {})
    spec["finalizers"] = spec.get("finalizers") or ["kubernetes"]
    result.setdefault("status", {})["phase"] = "Terminating"
    return result


def with_remaining(
    namespace: dict[str, Any], pods: int, finalizers: dict[str, int], timestamp: str
) -> dict[str, Any]:
    """The status while ``pods`` pods still drain and objects are held by ``finalizers``
    (finalizer -> how many objects it holds), as the namespace controller words it."""
    result = copy.deepcopy(namespace)
    status = result.setdefault("status", {})
    before = {c.get("type"): c for c in status.get("conditions") or []}
    kept = [c for c in status.get("conditions") or [] if c.get("type") not in _OURS]
    ours = []
    if pods:
        ours.append(
            _condition(
                before,
                CONTENT_REMAINING,
                "SomeResourcesRemain",
                f"Some resources are remaining: pods. has {pods} resource instances",
                timestamp,
            )
        )
    if finalizers:
        held = ", ".join(
            f"{name} in {count} resource instances" for name, count in finalizers.items()
        )
        ours.append(
            _condition(
                before,
                FINALIZERS_REMAINING,
                "SomeFinalizersRemain",
                f"Some content in the namespace has finalizers remaining: {held}",
                timestamp,
            )
        )
    status["conditions"] = [*kept, *ours]
    return result


def _condition(
    before: dict[Any, dict[str, Any]], kind: str, reason: str, message: str, timestamp: str
) -> dict[str, Any]:
    previous = before.get(kind) or {}
    since = previous.get("lastTransitionTime", timestamp) if previous else timestamp
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }


def is_terminating(namespace: dict[str, Any] | None) -> bool:
    if namespace is None:
        return False
    return bool((namespace.get("metadata") or {}).get("deletionTimestamp")) or (
        (namespace.get("status") or {}).get("phase") == "Terminating"
    )


def refused_create(namespace: str, resource: str, name: str) -> ApiError:
    """The 403 the NamespaceLifecycle admission plugin answers a create with."""
    return ApiError(
        403,
        "Forbidden",
        f'{resource} "{name}" is forbidden: unable to create new content in namespace '
        f"{namespace} because it is being terminated",
        kind=resource,
        name=name,
        causes=[
            {
                "reason": "NamespaceTerminating",
                "message": f"namespace {namespace} is being terminated",
                "field": "metadata.namespace",
            }
        ],
    )


def refused_delete(namespace: str) -> ApiError:
    """The 403 for deleting one of the ``IMMORTAL`` namespaces."""
    return ApiError(
        403,
        "Forbidden",
        f'namespaces "{namespace}" is forbidden: this namespace may not be deleted',
        kind="namespaces",
        name=namespace,
    )


def check_phase(namespace: dict[str, Any]) -> None:
    """A status write's phase must match the stamp (``ValidateNamespaceStatusUpdate``):
    Active without a deletionTimestamp, Terminating with one."""
    phase = (namespace.get("status") or {}).get("phase")
    stamped_now = bool((namespace.get("metadata") or {}).get("deletionTimestamp"))
    if stamped_now and phase != "Terminating":
        problem = "may only be 'Terminating' if `deletionTimestamp` is not empty"
    elif not stamped_now and phase not in (None, "Active"):
        problem = "may only be 'Active' if `deletionTimestamp` is empty"
    else:
        return
    name = str((namespace.get("metadata") or {}).get("name", ""))
    raise invalid(
        "Namespace", name, [("status.Phase", f'Invalid value: "{phase or ""}": {problem}')]
    )
