"""The tool layer's own errors, each with a sentence of facts a human understands.

Kubernetes client errors are wrapped (``raise … from``) so nothing above ``tools/`` needs to
know the client. ``retryable`` separates passing trouble from permanent refusals. Every error
derives from the one root, ``store.errors.StratusError``: fields, never surface words. Not
found and tampered are the family's shared concepts (``store.errors``).
"""

from __future__ import annotations

from typing import Any

from store import errors
from store.errors import Remedy, StratusError


class ToolError(StratusError, code="tool"):
    """The cluster or the tool layer refused, or could not be reached."""


class NotFound(errors.NotFound, ToolError):
    """The object, namespace or kind does not exist."""


class Conflict(ToolError, code="conflict", remedy=Remedy.PROPOSE_AGAIN):
    """Someone else changed the object first (a stale resourceVersion)."""


class Forbidden(ToolError, code="forbidden", remedy=Remedy.FIX_CONFIG):
    """The cluster's RBAC refused the request."""


class Unauthorized(Forbidden, code="unauthorized"):
    """The cluster did not accept the credentials (401): a token revoked or expired, its
    ServiceAccount deleted. A ``Forbidden`` to everything that refuses on RBAC."""


class Invalid(ToolError, code="invalid", remedy=Remedy.FIX_INPUT):
    """The cluster rejected the object as invalid, or the action's parameters are wrong."""


class Unavailable(ToolError, code="unavailable", retryable=True):
    """The API server could not be reached or answered 5xx; trying again may work."""


class OutcomeUnknown(ToolError, code="outcome_unknown", remedy=Remedy.RECONCILE):
    """A write was sent but its answer was lost: it may or may not have landed. The record
    stays pending until recovery reads the object and decides; nothing retries it blindly."""


class NotRecorded(OutcomeUnknown, code="not_recorded"):
    """The write landed, but the database could not record it (a full or failing disk): its
    write-ahead record stays pending, and recovery — which reads the object — records it as
    applied, with its undo entry, once the database takes writes again."""


class OutOfScope(ToolError, code="out_of_scope", remedy=Remedy.FIX_CONFIG):
    """Stratus is not configured to write there."""


class UnknownCluster(ToolError, code="unknown_cluster", remedy=Remedy.FIX_INPUT):
    """A cluster name (asked for, or on an alert) that is not one of the fleet's: nothing is
    guessed. ``details``: the name and the clusters that are known."""


class LockHeld(ToolError, code="lock_held", retryable=True):
    """Another writer holds the object's lock."""


class UndoConflict(ToolError, code="undo_conflict", remedy=Remedy.FORCE):
    """The object changed since Stratus wrote it; undoing would overwrite someone's change."""

    def __init__(self, message: str, diff: str, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.diff = diff


class Tampered(errors.Tampered, ToolError):
    """A stored record no longer matches its digest: it was edited after it was written."""
