"""The one error family: the root every error Stratus raises on purpose derives from, and the
concepts every stored aggregate shares (not found, stale, tampered), declared once.

An error carries fields, not surface words: *what* happened (one sentence of facts,
``message``), *which object* (``subject``), what the person can do about it as a
machine-readable ``remedy``, and structured ``details``. Each surface (the CLI's ``cli.text``,
Slack's ``bot.text``) turns ``code`` and ``remedy`` into its own words ("use --force", a Force
button), so the lower layers never speak in a surface's vocabulary. ``retryable`` separates
passing trouble from permanent refusals.

A class declares its place in the family in its header
(``class Stale(StratusError, code="stale", retryable=True)``). A package's own class for a
shared concept (``StaleProposal``, ``StaleIncident``) derives from the concept and takes its
code: one code per concept, so a surface words it once; ``details["record"]`` says which kind
of record it was about.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar


class Remedy(enum.StrEnum):
    """What a person can do next; surfaces render these in their own words."""

    FORCE = "force"  # repeat with an explicit force (undo over someone's change)
    RETRY = "retry"  # passing trouble: try again later
    FIX_INPUT = "fix_input"  # the request itself is wrong
    FIX_POLICY = "fix_policy"  # the policy files do not load
    FIX_CONFIG = "fix_config"  # configuration (kubeconfig, database path, environment)
    ASK_APPROVER = "ask_approver"  # someone else must approve
    PROPOSE_AGAIN = "propose_again"  # the plan moved or expired: ask for a new proposal
    RECONCILE = "reconcile"  # an interrupted write is being resolved; look again shortly
    VERIFY_AUDIT = "verify_audit"  # a record was changed outside Stratus: the audit check names it
    CANCEL_OPEN = "cancel_open"  # another proposal (``details["open"]``) must be cancelled first
    REVOKE_GRANT = "revoke_grant"  # a grant (``subject``) must be revoked
    NONE = "none"


class StratusError(Exception):
    """An error with a sentence of facts and structured fields."""

    code: ClassVar[str] = "error"
    retryable: ClassVar[bool] = False
    default_remedy: ClassVar[Remedy] = Remedy.NONE

    def __init_subclass__(
        cls,
        *,
        code: str | None = None,
        remedy: Remedy | None = None,
        retryable: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code
        if remedy is not None:
            cls.default_remedy = remedy
        if retryable is not None:
            cls.retryable = retryable

    def __init__(
        self,
        message: str,
        *,
        subject: str | None = None,
        remedy: Remedy | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.subject = subject
        self.remedy = remedy or (Remedy.RETRY if self.retryable else self.default_remedy)
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "subject": self.subject,
            "remedy": self.remedy.value,
            "details": self.details,
        }


class NotFound(StratusError, code="not_found", remedy=Remedy.FIX_INPUT):
    """What was named does not exist (a stored record, or an object in the cluster)."""


class Stale(StratusError, code="stale", retryable=True):
    """Someone else saved the record first: a compare-and-set lost (``store.versioned``)."""


class Tampered(StratusError, code="tampered", remedy=Remedy.VERIFY_AUDIT):
    """A stored record was changed outside Stratus, or cannot be read: nothing acts on it."""


def family() -> list[type[StratusError]]:
    """Every class of the family imported so far, the root first."""
    found: list[type[StratusError]] = []
    waiting: list[type[StratusError]] = [StratusError]
    while waiting:
        cls = waiting.pop(0)
        if cls not in found:
            found.append(cls)
            waiting.extend(cls.__subclasses__())
    return found
