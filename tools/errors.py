"""The tool layer's own errors, each with a message a human understands.

Kubernetes client errors are wrapped (``raise … from``) so nothing above ``tools/`` needs to
know the client. ``retryable`` separates passing trouble from permanent refusals. Every error
derives from the one root, ``store.errors.StratusError``: fields, never surface words.
"""

from __future__ import annotations

from typing import Any

from store.errors import Remedy, StratusError


class ToolError(StratusError):
    code = "tool"


class NotFound(ToolError):
    """The object, namespace or kind does not exist."""

    code = "not_found"
    default_remedy = Remedy.FIX_INPUT


class Conflict(ToolError):
    """Someone else changed the object first (a stale resourceVersion)."""

    code = "conflict"
    default_remedy = Remedy.PROPOSE_AGAIN


class Forbidden(ToolError):
    """The cluster's RBAC refused the request."""

    code = "forbidden"
    default_remedy = Remedy.FIX_CONFIG


class Invalid(ToolError):
    """The cluster rejected the object as invalid, or the action's parameters are wrong."""

    code = "invalid"
    default_remedy = Remedy.FIX_INPUT


class Unavailable(ToolError):
    """The API server could not be reached or answered 5xx; trying again may work."""

    code = "unavailable"
    retryable = True


class OutcomeUnknown(ToolError):
    """A write was sent but its answer was lost: it may or may not have landed. The record
    stays pending until recovery reads the object and decides; nothing retries it blindly."""

    code = "outcome_unknown"
    default_remedy = Remedy.RECONCILE


class NotRecorded(OutcomeUnknown):
    """The write landed, but the database could not record it (a full or failing disk): its
    write-ahead record stays pending, and recovery — which reads the object — records it as
    applied, with its undo entry, once the database takes writes again."""

    code = "not_recorded"


class OutOfScope(ToolError):
    """Stratus is not configured to write there."""

    code = "out_of_scope"
    default_remedy = Remedy.FIX_CONFIG


class LockHeld(ToolError):
    """Another writer holds the object's lock."""

    code = "lock_held"
    retryable = True


class UndoConflict(ToolError):
    """The object changed since Stratus wrote it; undoing would overwrite someone's change."""

    code = "undo_conflict"
    default_remedy = Remedy.FORCE

    def __init__(self, message: str, diff: str, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.diff = diff


class Tampered(ToolError):
    """A stored record no longer matches its digest: it was edited after it was written."""

    code = "tampered"
