"""The Proposal aggregate: one proposed write, everything it was decided on, and its state.

It is stored whole (a versioned JSON body) and moves only by compare-and-set on its
``version``, so any process can load a proposal by id and answer it — a click that arrives
after a restart, from another process, sees the requester, the facts and the votes the policy
needs for its self-approval and quorum checks.
"""

from __future__ import annotations

import enum
import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from policies.approvers import ApproverLists, implies
from policies.evaluate import PolicyDecision, ProposalFacts
from tools.objects import normalized, redacted

SCHEMA_VERSION = 1
LATE_FIELDS = ("risk_reason", "fixes", "puts_back", "cluster")  # see ``Proposal._omit_late_fields``


class ProposalState(enum.StrEnum):
    PROPOSED = "proposed"
    AWAITING_APPROVAL = "awaiting_approval"
    APPROVED = "approved"
    EXECUTING = "executing"
    EXECUTED = "executed"
    UNDONE = "undone"
    DENIED = "denied"
    REJECTED = "rejected"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    FAILED = "failed"
    CANCELLED = "cancelled"


S = ProposalState
# Which moves are legal. Anything else is a bug or a race, refused by ``Proposal.move``.
TRANSITIONS: dict[ProposalState, frozenset[ProposalState]] = {
    S.PROPOSED: frozenset({S.AWAITING_APPROVAL, S.APPROVED, S.DENIED}),
    S.AWAITING_APPROVAL: frozenset({S.APPROVED, S.REJECTED, S.EXPIRED, S.SUPERSEDED, S.CANCELLED}),
    S.APPROVED: frozenset({S.EXECUTING, S.SUPERSEDED, S.CANCELLED, S.EXPIRED}),
    # executing → approved: the write could not start (a lock, an unreachable server) and
    # nothing was written, so the approval still stands.
    S.EXECUTING: frozenset({S.EXECUTED, S.SUPERSEDED, S.FAILED, S.APPROVED}),
    S.EXECUTED: frozenset({S.UNDONE}),
}
OPEN = frozenset({S.PROPOSED, S.AWAITING_APPROVAL, S.APPROVED, S.EXECUTING})
# "plan": approve this step and, bound to their digests, the attempt's later steps.
Choice = Literal["approve", "always", "reject", "plan"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _unless_set(
    model: BaseModel, handler: SerializerFunctionWrapHandler, fields: tuple[str, ...]
) -> dict[str, Any]:
    """Leave out ``fields`` (added after records were first sealed) while they hold their
    default: bodies, seals and MACs of records stored before them stay exactly what they
    were."""
    dumped: dict[str, Any] = handler(model)
    for name in fields:
        if name in dumped and not dumped[name]:
            del dumped[name]
    return dumped


class Target(_Model):
    kind: str
    name: str
    namespace: str = ""

    def __str__(self) -> str:
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.kind.lower()}/{self.name}{where}"


class PlanSnapshot(_Model):
    """The plan the humans look at: before, after, the diff, and the digest votes bind to."""

    operation: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    diff: str
    digest: str


class Facts(_Model):
    """What the policy was evaluated on (``policies.evaluate.ProposalFacts``), stored."""

    action: str
    namespace: str
    kind: str
    name: str
    risk: str
    reversible: bool
    requester: str
    labels: dict[str, str] = Field(default_factory=dict)
    managed_by: str = ""
    puts_back: bool = False  # left out of bodies while False (``_omit_late_fields``)
    cluster: str = ""  # the fleet's cluster ('': the only one); left out while empty

    @model_serializer(mode="wrap")
    def _omit_late_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _unless_set(self, handler, ("puts_back", "cluster"))

    @classmethod
    def of(cls, facts: ProposalFacts) -> Facts:
        return cls(
            action=facts.action,
            namespace=facts.namespace,
            kind=facts.kind,
            name=facts.name,
            risk=facts.risk,
            reversible=facts.reversible,
            requester=facts.requester,
            labels=dict(facts.labels),
            managed_by=facts.managed_by,
            puts_back=facts.puts_back,
            cluster=facts.cluster,
        )

    def policy_facts(self) -> ProposalFacts:
        return ProposalFacts(
            action=self.action,
            namespace=self.namespace,
            kind=self.kind,
            name=self.name,
            risk=self.risk,
            reversible=self.reversible,
            requester=self.requester,
            labels=tuple(sorted(self.labels.items())),
            managed_by=self.managed_by,
            puts_back=self.puts_back,
            cluster=self.cluster,
        )


class Decision(_Model):
    """The policy's decision and its provenance (rule, grant or default). ``approvers`` is a
    conjunction of lists (``policies.approvers``); ``rules`` names every contributing rule."""

    outcome: Literal["deny", "ask", "allow"]
    reason: str
    source: str
    rule: str | None = None
    grant: str | None = None
    remember: bool = False
    max_grant_seconds: int = 0
    approvers: list[list[str]] = Field(default_factory=list)
    min_approvals: int = 1
    self_approval: bool = True
    approval_timeout_seconds: int = 1800
    rules: list[str] = Field(default_factory=list)
    approve_plan: bool = False  # "Approve plan" of an attempt may stand for this step
    decided_at: datetime
    # Binds this decision to its proposal and plan (``proposals.seals``).
    mac: str = ""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        return _unless_set(self, handler, ("approve_plan",))

    @field_validator("approvers", mode="before")
    @classmethod
    def _one_list(cls, value: Any) -> Any:
        # Proposals stored before approvers became a conjunction hold one flat list.
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return [value]
        return value

    @classmethod
    def of(cls, decision: PolicyDecision, at: datetime) -> Decision:
        return cls(**decision.to_dict(), decided_at=at)

    def policy_decision(self) -> PolicyDecision:
        values = self.model_dump(exclude={"decided_at", "mac"})
        values["approvers"] = tuple(tuple(names) for names in values["approvers"])
        values["rules"] = tuple(values["rules"])
        return PolicyDecision(**values)

    @property
    def approver_lists(self) -> ApproverLists:
        return tuple(tuple(names) for names in self.approvers)

    def requires_same(self, other: PolicyDecision) -> bool:
        """Whether ``other`` asks no more of the humans than this decision did."""
        if other.outcome == "deny":
            return False
        if self.outcome == "allow":
            return other.outcome == "allow"
        if other.outcome == "allow":
            return True
        return (
            other.min_approvals <= self.min_approvals
            and implies(self.approver_lists, other.approvers)
            and (other.self_approval or not self.self_approval)
        )


class Vote(_Model):
    user: str
    choice: Choice
    digest: str  # the plan this vote approved (or rejected)
    at: datetime
    reason: str = ""
    groups: list[str] = Field(default_factory=list)
    # A "plan" vote: the digests of the attempt's later steps it approves as well.
    plan: list[str] = Field(default_factory=list)
    # A vote cast by a plan approval: the proposal whose "plan" vote stands for this one.
    with_plan: str = ""
    # Binds this vote to its proposal and the plan it approved (``proposals.seals``).
    mac: str = ""

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        return _unless_set(self, handler, ("plan", "with_plan"))


class Proposal(_Model):
    schema_version: Literal[1] = 1
    id: str
    incident_id: str | None = None
    action: str
    params: dict[str, Any] = Field(default_factory=dict)
    target: Target
    requester: str
    facts: Facts
    plan: PlanSnapshot
    intent: str
    risk: str
    reversible: bool
    decision: Decision
    votes: list[Vote] = Field(default_factory=list)
    state: ProposalState
    version: int = 0
    created_at: datetime
    updated_at: datetime
    expires_at: datetime
    # Undo proposals: the undo entry they reverse, and whether to overwrite later changes.
    undo_entry: str | None = None
    force: bool = False
    # Results and links.
    execution_id: str | None = None
    undo_id: str | None = None
    executor: str | None = None  # the process that executes it (its lock holder id)
    supersedes: str | None = None
    superseded_by: str | None = None
    previous_diff: str | None = None  # the diff of the proposal this one supersedes
    undone_by: str | None = None
    # What a person should know before approving (e.g. a GitOps controller will revert it).
    warnings: list[str] = Field(default_factory=list)
    # What an outside agent (an MCP client) said the change is for, as it said it: untrusted
    # text, never one of our warnings, shown by each surface as quoted data.
    agent_intent: str = ""
    # The SHA-256 of the token an MCP client proposed with, as its clients-file entry holds
    # it: its proposal stands only while that entry does (``policies.clients.revocation``).
    client_token: str = ""
    error: dict[str, Any] | None = None
    reason: str = ""  # why it ended as it did (rejection reason, failure, expiry)
    # A keyed digest of everything above, set by the repository on every save; the audit row
    # of that save records it too (``proposals.seals``).
    seal: str = ""
    # Never stored: what was done to it outside Stratus, found when a query read it for a
    # surface (``ProposalRepository.shown``). Non-empty: nothing acts on it, surfaces say so.
    tampered: list[str] = Field(default_factory=list, exclude=True)
    # Why the risk is what it is (``proposals.risk``): one line naming the effect.
    risk_reason: str = ""
    # The diagnosed cause this write changes the very object of (set by the incident that
    # proposed it); an undo of it puts that cause back, which ``puts_back`` says.
    fixes: str = ""
    puts_back: str = ""
    # The fleet's cluster it writes to ('': the default, and every proposal from before
    # fleets): execution and its undo go to this cluster, never to whichever is default now.
    cluster: str = ""

    @model_serializer(mode="wrap")
    def _omit_late_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _unless_set(self, handler, LATE_FIELDS)

    @property
    def is_open(self) -> bool:
        return self.state in OPEN

    def approvals(self) -> list[str]:
        """Distinct people whose approval is bound to the current plan."""
        seen: list[str] = []
        for vote in self.votes:
            if (
                vote.choice != "reject"
                and vote.digest == self.plan.digest
                and vote.user not in seen
            ):
                seen.append(vote.user)
        return seen

    def can_move(self, to: ProposalState) -> bool:
        return to in TRANSITIONS.get(self.state, frozenset())

    def body(self) -> str:
        return self.model_dump_json()


def plan_digest(
    *,
    action: str,
    target: str,
    params: dict[str, Any],
    diff: str,
    seen: dict[str, Any] | None = None,
) -> str:
    """What a vote is bound to: this action with these parameters on this object, making
    exactly this change. Server-set fields are not in the diff, so a status update alone
    does not move the digest; a change a human would see does. Hunk headers are left out:
    their line numbers move when something unrelated above the change is edited."""
    change = [line for line in diff.splitlines() if not line.startswith("@@")]
    # The whole object as the humans saw it (without what the server and controllers set),
    # and its uid: an image swapped elsewhere in the spec, or the object deleted and
    # re-created under the same name, is not what they approved. A Secret's values count by
    # their digests, as shown: an unkeyed hash over the values themselves, stored with the
    # proposal, would let a weak value be guessed offline.
    uid = ((seen or {}).get("metadata") or {}).get("uid")
    material = json.dumps(
        [action, target, params, change, redacted(normalized(seen)), uid],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(material.encode()).hexdigest()[:32]


def plan_vote(proposal: Proposal) -> Vote | None:
    """The "Approve plan" vote cast on ``proposal`` (the first step of an attempt), if any."""
    return next((v for v in proposal.votes if v.choice == "plan" and v.plan), None)


def plan_refusal(proposal: Proposal, first: Proposal, vote: Vote | None) -> str | None:
    """Why the plan vote on ``first`` does not stand for ``proposal`` (None: it does): no plan
    vote, another incident, a first step that did not run, a policy that asks this step
    alone, or a digest that moved since the plan was approved."""
    if vote is None:
        return f"no plan was approved on {first.id}"
    if first.incident_id is None or first.incident_id != proposal.incident_id:
        return f"{first.id} is not a step of the same incident"
    if first.state != ProposalState.EXECUTED:
        return f"the plan's first step {first.id} did not run"
    if not proposal.decision.approve_plan or proposal.decision.min_approvals > 1:
        return f"the policy asks for {proposal.id} alone: {proposal.decision.reason}"
    if proposal.plan.digest not in vote.plan:
        return f"{proposal.target} changed since the plan was approved"
    return None
