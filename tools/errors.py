"""The tool layer's own errors, each with a message a human understands.

Kubernetes client errors are wrapped (``raise … from``) so nothing above ``tools/`` needs to
know the client. ``retryable`` separates passing trouble from permanent refusals.
"""

from __future__ import annotations


class ToolError(Exception):
    retryable = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(ToolError):
    """The object, namespace or kind does not exist."""


class Conflict(ToolError):
    """Someone else changed the object first (a stale resourceVersion)."""


class Forbidden(ToolError):
    """The cluster's RBAC refused the request."""


class Invalid(ToolError):
    """The cluster rejected the object as invalid, or the action's parameters are wrong."""


class Unavailable(ToolError):
    """The API server could not be reached or answered 5xx; trying again may work."""

    retryable = True


class OutOfScope(ToolError):
    """Stratus is not configured to write there."""


class LockHeld(ToolError):
    """Another writer holds the object's lock."""


class UndoConflict(ToolError):
    """The object changed since Stratus wrote it; undoing would overwrite someone's change."""

    def __init__(self, message: str, diff: str) -> None:
        super().__init__(message)
        self.diff = diff
