"""Fences: how recovery makes an object say what became of a write whose answer was lost.

A sent request may be held on its way (a proxy, a load balancer, a queue in front of the API
server) for any time, so "the object does not show it yet" never proves a write will not
land. A write that replaces or deletes carries the resourceVersion it was planned on as a
precondition; once the grace period has passed and the object still sits at that version,
recovery writes a *fence*: the object exactly as read, plus the annotation
``stratus.io/fenced: <execution id>``, under the same precondition. Both requests need the
object at that version and each moves it, so exactly one of them can land: the fence (the
write can never land — "not applied", and the object carries the id of the write it stopped)
or the write (the fence meets 409, and recovery reads the object again and records the write
as applied, with its undo entry).

A create carries no precondition: only the name stops it. Its fence is the approved create
itself — the planned object, sent by recovery under the same name. Exactly one of the two
creates succeeds (the other meets AlreadyExists) and either way the object is the one the
human approved, so the write is recorded as applied, with its undo entry.

The annotation is dropped by ``tools.objects.normalized``: it is in no diff, no before-image
comparison, no undo conflict check and no plan digest. It changes no spec, so no controller
acts on it, and ``kubectl apply`` leaves an annotation it did not write alone.
"""

from __future__ import annotations

import copy
from typing import Any

from tools.objects import FENCE_ANNOTATION

# A fence answered with 409 (or whose answer was lost) means the object moved: it is read and
# judged again, a bounded number of times.
ROUNDS = 3


def fence_body(current: dict[str, Any], *, execution_id: str, precondition: str) -> dict[str, Any]:
    """The object as read, marked with the write it fences, conditional on ``precondition``
    (the resourceVersion the fenced write was planned on)."""
    body = copy.deepcopy(current)
    meta = body.setdefault("metadata", {})
    meta["resourceVersion"] = precondition
    meta["annotations"] = {**(meta.get("annotations") or {}), FENCE_ANNOTATION: execution_id}
    return body


def fenced_by(current: dict[str, Any] | None) -> str:
    """The execution a fence on this object stopped ('' when it carries none)."""
    meta = (current or {}).get("metadata") or {}
    return str((meta.get("annotations") or {}).get(FENCE_ANNOTATION) or "")


def audit_payload(*, execution_id: str, operation: str, precondition: str | None) -> dict[str, Any]:
    """What the audit row of a fence says, written before the fence is sent."""
    create = operation == "create"
    return {
        "execution": execution_id,
        "operation": operation,
        "precondition": None if create else precondition,
        "annotation": None if create else FENCE_ANNOTATION,
    }
