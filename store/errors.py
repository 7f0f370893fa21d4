"""The root of every error Stratus raises on purpose.

An error carries fields, not surface words: *what* happened (one sentence), *which object*
(``subject``), and what the person can do about it as a machine-readable ``remedy``. Each
surface (CLI, Slack) turns a remedy into its own words ("use --force", a Force button), so the
lower layers never speak in a surface's vocabulary. ``retryable`` separates passing trouble
from permanent refusals.
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
    NONE = "none"


class StratusError(Exception):
    """An error with a human sentence and structured fields."""

    code: ClassVar[str] = "error"
    retryable: ClassVar[bool] = False
    default_remedy: ClassVar[Remedy] = Remedy.NONE

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
