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
