"""How the incident workflow waits and how often it tries (the CLI and the bot set these)."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.verify import poll_seconds, settle_seconds
from tools import env


def unfold_seconds() -> float:
    """How long an investigation that would give up keeps looking while the namespace is
    still moving (STRATUS_UNFOLD_SECONDS, default 30; 0 never looks again)."""
    return env.number("STRATUS_UNFOLD_SECONDS", default=30.0, low=0.0, high=3600.0)


def reopen_seconds() -> float:
    """How recent an escalation a new investigation or alert of its namespace looks again in
    (STRATUS_REOPEN_SECONDS, default 3600; 0 always opens a new incident)."""
    return env.number("STRATUS_REOPEN_SECONDS", default=3600.0, low=0.0, high=7 * 86400.0)


@dataclass
class WorkflowConfig:
    max_attempts: int = 3
    settle_timeout: float = field(default_factory=settle_seconds)
    poll_interval: float = field(default_factory=poll_seconds)
    # A first look that would conclude (nothing found, nothing to try) while pods are starting
    # or a rollout is progressing looks again, for at most this long (``incidents.unfolding``).
    unfold_timeout: float = field(default_factory=unfold_seconds)
    lease_seconds: float = 600.0
    # How long a cancel waits for another process to let go of the incident before it leaves
    # the cancel to that process (which sees the flag at its next move).
    cancel_wait: float = 5.0
    # How long an incident that could not reach its surface (``IncidentWorkflow.park``) waits
    # for a retry before it ends escalated and frees its namespace.
    park_seconds: float = 600.0
    # A new investigation (or alert) of a namespace whose latest incident escalated less than
    # this long ago looks again in that incident — the same thread — instead of opening one.
    reopen_seconds: float = field(default_factory=reopen_seconds)
