"""The Incident aggregate: one investigation of one namespace, its state and its attempts.

Like a proposal, an incident is stored whole (a versioned JSON body) and changes only by
compare-and-set on ``version``, with a typed event appended in the same transaction, so any
process can pick it up where another left it: a click hours later, or after a restart.

The states and their legal moves are a plain table; the workflow (``incidents.workflow``) decides
which move to make, never a model.
"""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.health import Verdict
from agents.model import Candidate, Diagnosis, Usage
from proposals.model import Decision, Facts


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
    # awaiting → planning: rejected or denied, the next candidate is tried; awaiting →
    # verifying: a later step was refused, so what the earlier steps did is judged first.
    St.AWAITING_APPROVAL: frozenset(
        {St.EXECUTING, St.PLANNING, St.VERIFYING, St.UNDOING, St.ESCALATED, St.CANCELLED}
    ),
    # executing → awaiting: the next step of a multi-step attempt needs a human.
    St.EXECUTING: frozenset(
        {St.VERIFYING, St.AWAITING_APPROVAL, St.PLANNING, St.UNDOING, St.ESCALATED, St.CANCELLED}
    ),
    # verifying → planning: unchanged or better but not healthy, try the next hypothesis.
    St.VERIFYING: frozenset({St.RESOLVED, St.UNDOING, St.PLANNING, St.ESCALATED, St.CANCELLED}),
    St.UNDOING: frozenset({St.PLANNING, St.AWAITING_APPROVAL, St.ESCALATED, St.CANCELLED}),
    # resolved → detecting: the fix that resolved it was undone (``incidents.reopening``).
    St.RESOLVED: frozenset({St.DETECTING}),
    # escalated → diagnosing: a person asked Stratus to look again (Look again, a new
    # investigation or alert of the namespace), so the same incident and thread carry on.
    St.ESCALATED: frozenset({St.DIAGNOSING}),
}
TERMINAL = frozenset({St.RESOLVED, St.ESCALATED, St.CANCELLED})
# The source of an incident an outside agent's proposal opened (docs/mcp.md).
AGENT_SOURCE = "mcp"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlannedStep(_Model):
    """One step of an attempt as planned when the attempt began: what it would change then
    (its diff and the digest a vote binds to), and what the policy would decide for it. No
    digest: it could not be planned then (its object already looked as wanted, or an earlier
    step must run first); such a step is always asked alone."""

    number: int
    action: str
    target: str  # kind/name, as shown
    params: dict[str, Any] = Field(default_factory=dict)  # as proposed: its stamps fixed once
    intent: str = ""
    diff: str = ""
    digest: str = ""
    note: str = ""  # why there is no digest
    decision: Decision | None = None
    facts: Facts | None = None


class Attempt(_Model):
    """One candidate tried as one transaction: its steps' proposals, the health before and
    after, the verdict, and the undo proposals if it was rolled back."""

    number: int
    candidate: Candidate
    transaction_id: str
    # One per step proposed so far, in step order; never an empty id (issue 22: a skipped
    # step recorded as "" reached ``stratus eval``'s report, which asked the service for it).
    proposals: list[str] = Field(default_factory=list)
    # Step numbers (from 1) that were not proposed: their object already looked as wanted, or
    # the proposal was superseded by nothing.
    skipped: list[int] = Field(default_factory=list)
    undo_proposals: list[str] = Field(default_factory=list)
    plan: list[PlannedStep] = Field(default_factory=list)  # every step, planned at the start
    health_before: dict[str, Any] = Field(default_factory=dict)
    health_after: dict[str, Any] = Field(default_factory=dict)
    verdict: Verdict | None = None
    # Whose the new failures of the look after were (``agents.attribution``): objects the
    # attempt did not write whose faults it revealed behind its fixed target (then it is kept
    # whatever the verdict), or objects whose failures it may have caused.
    revealed: list[str] = Field(default_factory=list)
    caused: list[str] = Field(default_factory=list)
    # Pods among ``caused`` that a node had taken when judged (crash-looping, never ready, not
    # pulling): their failure is their template's own, not a node's or a quota's — evidence
    # against that template when a rollback is planned again (``phases.seen_failing``).
    failed_pods: list[str] = Field(default_factory=list)
    # One word (``OUTCOMES``); why a step stopped it short is ``stopped``, never folded in.
    # Incidents stored before the word kept the reason here: ``result`` reads both.
    outcome: str = ""
    # Why a step stopped the attempt short (rejected, denied, failed), when one did: what the
    # steps before it did is verified, then kept or undone by the verdict.
    stopped: str = ""
    started_at: datetime
    finished_at: datetime | None = None

    @model_validator(mode="before")
    @classmethod
    def _skipped_steps(cls, data: Any) -> Any:
        """Incidents stored before ``skipped`` marked a skipped step with an empty id in its
        place: read them as the step numbers they stood for."""
        if not isinstance(data, dict):
            return data
        ids = list(data.get("proposals") or [])
        undos = list(data.get("undo_proposals") or [])
        if "" not in ids and "" not in undos:
            return data
        gaps = [number for number, pid in enumerate(ids, start=1) if not pid]
        return {
            **data,
            "proposals": [pid for pid in ids if pid],
            # An undo superseded by nothing left its place empty too: there is nothing to read.
            "undo_proposals": [pid for pid in undos if pid],
            "skipped": sorted({*data.get("skipped", []), *gaps}),
        }

    @property
    def steps_taken(self) -> int:
        """Steps proposed or skipped so far."""
        return len(self.proposals) + len(self.skipped)

    @property
    def last_step_skipped(self) -> bool:
        """The latest step taken was skipped (nothing of it to wait on)."""
        return bool(self.skipped) and max(self.skipped) == self.steps_taken

    def step_number(self, proposal_id: str) -> int | None:
        """Which step of the candidate ``proposal_id`` is (from 1), None if it is none."""
        if proposal_id not in self.proposals:
            return None
        numbers = [n for n in range(1, self.steps_taken + 1) if n not in self.skipped]
        return numbers[self.proposals.index(proposal_id)]

    @property
    def result(self) -> str:
        """The outcome as one word of ``OUTCOMES`` ("" while running or unknown)."""
        return outcome_word(self.outcome)


# What became of an attempt. ``fixed``/``improved``: its changes were kept on a healthy or
# better verdict (whether or not a step stopped it short); ``fix kept``: judged not better, but
# its fix of the diagnosed cause was kept rather than put back; the stop words say what
# stopped an attempt that executed nothing (or whose changes were then undone: ``undone``).
OUTCOMES = (
    "fixed",
    "improved",
    "undone",
    "fix kept",
    "rejected",
    "expired",
    "denied",
    "failed",
    "no change",
    "cancelled",
    "undo rejected",
    "undo expired",
    "undo cancelled",
    "complete when cancelled",
)
# Incidents stored before issue 18's F2 wrote "<why it stopped>; the steps done are kept
# (<verdict>)" for an attempt kept on its verdict.
_KEPT_BEFORE = {"healthy": "fixed", "better": "improved"}


def outcome_word(outcome: str) -> str:
    """One word of ``OUTCOMES`` for a stored outcome, including the free text of incidents
    stored before the word existed ("" when it names none)."""
    if outcome in OUTCOMES:
        return outcome
    head, sep, verdict = outcome.rpartition("; the steps done are kept (")
    if head and sep and verdict.endswith(")"):
        return _KEPT_BEFORE.get(verdict[:-1], "")
    if outcome.startswith("complete when cancelled"):
        return "complete when cancelled"
    return stop_word(outcome)


def stop_word(why: str) -> str:
    """The word for why a step stopped an attempt ("prop-1 rejected: …", "denied by policy:
    …", "failed: …", "no change: …")."""
    for word in ("denied", "failed", "no change"):
        if why.startswith(word):
            return word
    first = why.split(":", 1)[0]
    for word in ("rejected", "expired", "cancelled"):
        if first.endswith(f" {word}") or first == word:
            return word
    return ""


class FixUndone(_Model):
    """A write of this incident undone after the incident ended, and what became of the
    incident (``incidents.reopening`` decides): re-opened, or left closed and why."""

    proposal_id: str  # the write undone
    undo_id: str  # the undo proposal that did it
    by: str
    at: datetime
    reopened: bool
    why: str = ""  # why it was left closed


class Incident(_Model):
    schema_version: Literal[1] = 1
    id: str
    namespace: str
    question: str = ""
    requester: str
    source: str = "cli"  # cli, slack, alert, mcp (AGENT_SOURCE)
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
    # The last write of this incident undone after it ended (None: none was).
    fix_undone: FixUndone | None = None
    reopened: int = 0  # how many times an escalation was looked at again
    # The fleet's cluster it looks at and writes to ('': the only one; docs/fleet.md).
    cluster: str = ""

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
