"""How the incident workflow waits and how often it tries (the CLI and the bot set these)."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.verify import poll_seconds, settle_seconds


@dataclass
class WorkflowConfig:
    max_attempts: int = 3
    settle_timeout: float = field(default_factory=settle_seconds)
    poll_interval: float = field(default_factory=poll_seconds)
    lease_seconds: float = 600.0
    # How long a cancel waits for another process to let go of the incident before it leaves
    # the cancel to that process (which sees the flag at its next move).
    cancel_wait: float = 5.0
    # How long an incident that could not reach its surface (``IncidentWorkflow.park``) waits
    # for a retry before it ends escalated and frees its namespace.
    park_seconds: float = 600.0
