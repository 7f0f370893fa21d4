"""Planners: from what the analyzers saw to a diagnosis and ranked candidate actions.

Both planners answer the same ``PlanRequest`` with a ``PlanResult``; the workflow does not know
which one it talks to. The offline planner needs no model; the LLM planner starts from the
offline planner's result and falls back to it whenever the model fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from agents.model import Finding, PlanResult
from agents.snapshot import Snapshot
from tools.reads import ClusterReader


@dataclass(frozen=True)
class PlanRequest:
    snapshot: Snapshot
    findings: list[Finding]
    offline: PlanResult  # the offline planner's answer (cheap context, and the fallback)
    question: str = ""  # what the person asked, if anything (data, not instructions)
    tried: list[str] = field(default_factory=list)  # Candidate.key() of earlier attempts
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (key, the human's reason)
    history: list[str] = field(default_factory=list)  # incident memory lines, for people
    # Incident memory for ranking: (mechanism, Candidate.key(), "fixed" | "undone" | "rejected").
    past: list[tuple[str, str, str]] = field(default_factory=list)
    # The cluster the incident reads, for a planner that reads more itself (a fleet: not
    # necessarily the one it was built with); None: the planner's own.
    reader: ClusterReader | None = None


class Planner(Protocol):
    name: str

    def plan(self, request: PlanRequest) -> PlanResult: ...
