"""The Incident aggregate: one investigation of one namespace, its state and its attempts.

Like a proposal, an incident is stored whole (a versioned JSON body) and changes only by
compare-and-set on ``version``, with a typed event appended in the same transaction, so any
process can pick it up where another left it: a click hours later, or after a restart.

The states and their legal moves are a plain table; the workflow (``agents.workflow``) decides
which move to make, never a model.
"""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.model import Candidate, Diagnosis, Usage


class IncidentState(enum.StrEnum):
    DETECTING = "detecting"
    DIAGNOSING = "diagnosing"
    PLANNING = "planning"
    AWAITING_APPROVAL = "awaiting_approval"
    EXECUTING = "executing"
    VERIFYING = "verifying"
    UNDOING = "undoing"
    RESOLVED = "resolved"
    ESCALATED = "escalated"
    CANCELLED = "cancelled"


St = IncidentState
TRANSITIONS: dict[IncidentState, frozenset[IncidentState]] = {
    St.DETECTING: frozenset({St.DIAGNOSING, St.RESOLVED, St.CANCELLED, St.ESCALATED}),
    St.DIAGNOSING: frozenset({St.PLANNING, St.RESOLVED, St.ESCALATED, St.CANCELLED}),
    # planning → resolved: a fresh look after a partial fix finds nothing left wrong.
    St.PLANNING: frozenset(
        {St.AWAITING_APPROVAL, St.EXECUTING, St.RESOLVED, St.ESCALATED, St.CANCELLED}
    ),
    # awaiting → planning: rejected or denied, the next candidate is tried.
    St.AWAITING_APPROVAL: frozenset(
        {St.EXECUTING, St.PLANNING, St.UNDOING, St.ESCALATED, St.CANCELLED}
    ),
    # executing → awaiting: the next step of a multi-step attempt needs a human.
    St.EXECUTING: frozenset(
        {St.VERIFYING, St.AWAITING_APPROVAL, St.PLANNING, St.UNDOING, St.ESCALATED, St.CANCELLED}
    ),
    # verifying → planning: unchanged or better but not healthy, try the next hypothesis.
    St.VERIFYING: frozenset({St.RESOLVED, St.UNDOING, St.PLANNING, St.ESCALATED, St.CANCELLED}),
    St.UNDOING: frozenset({St.PLANNING, St.AWAITING_APPROVAL, St.ESCALATED, St.CANCELLED}),
}
TERMINAL = frozenset({St.RESOLVED, St.ESCALATED, St.CANCELLED})
Verdict = Literal["healthy", "better", "same", "worse"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Attempt(_Model):
    """One candidate tried as one transaction: its steps' proposals, the health before and
    after, the verdict, and the undo proposals if it was rolled back."""

    number: int
    candidate: Candidate
    transaction_id: str
    proposals: list[str] = Field(default_factory=list)  # one per step proposed so far
    undo_proposals: list[str] = Field(default_factory=list)
    health_before: dict[str, Any] = Field(default_factory=dict)
    health_after: dict[str, Any] = Field(default_factory=dict)
    verdict: Verdict | None = None
    outcome: str = ""  # fixed, improved, no effect, undone, rejected, denied, failed, cancelled
    started_at: datetime
    finished_at: datetime | None = None


class Incident(_Model):
    schema_version: Literal[1] = 1
    id: str
    namespace: str
    question: str = ""
    requester: str
    source: str = "cli"  # cli, slack, alert
    state: IncidentState
    version: int = 0
    created_at: datetime
    updated_at: datetime
    detected_at: datetime | None = None  # when the workflow first saw something wrong
    mitigated_at: datetime | None = None
    planner: str = "offline"
    diagnosis: Diagnosis | None = None
    candidates: list[Candidate] = Field(default_factory=list)  # the current plan, best first
    attempts: list[Attempt] = Field(default_factory=list)
    health_at_start: dict[str, Any] = Field(default_factory=dict)
    health_now: dict[str, Any] = Field(default_factory=dict)
    tried: list[str] = Field(default_factory=list)  # Candidate.key() of every attempt
    rejected: list[tuple[str, str]] = Field(default_factory=list)  # (key, reason)
    notes: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    max_attempts: int = 3
    reason: str = ""  # why it ended as it did
    cancel_requested: str = ""  # who asked to cancel, while an action was in flight
    preferred: str = ""  # Candidate.key() a person picked from the alternatives: tried next
    # Why the incident could not reach the surface it was asked from (its Slack thread could
    # not be posted), and since when: it waits for a retry, then ends and frees its namespace.
    parked: str = ""
    parked_at: datetime | None = None

    @property
    def is_open(self) -> bool:
        return self.state not in TERMINAL

    @property
    def current(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    def can_move(self, to: IncidentState) -> bool:
        return to in TRANSITIONS.get(self.state, frozenset())

    def body(self) -> str:
        return self.model_dump_json()


def new_incident_id() -> str:
    return "inc-" + uuid.uuid4().hex[:10]


def new_transaction_id() -> str:
    return "tx-" + uuid.uuid4().hex[:12]
