"""The shared machinery of the proposal use-cases: opening a proposal, deciding it by policy,
and moving it — one state change, its event and its audit row in one transaction."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from policies.evaluate import (
    CompiledPolicy,
    PolicyDecision,
    ProposalFacts,
    evaluate,
)
from policies.grants import GrantBook, GrantTampered
from proposals import seals
from proposals.errors import (
    NotExecutable,
)
from proposals.events import EventType, ProposalEvent, ProposalEvents
from proposals.killswitch import KillSwitch, while_paused
from proposals.model import (
    OPEN,
    Decision,
    Facts,
    PlanSnapshot,
    Proposal,
    ProposalState,
    Target,
    Vote,
    plan_digest,
)
from proposals.repository import ProposalRepository
from store.audit import AuditLog
from store.db import Store
from store.records import ExecutionLog
from tools import crashpoints, secrets
from tools.actions import WritePlan
from tools.executor import AppliedWrite, Executor
from tools.objects import ObjectRef
from undo.stack import UndoStack

S = ProposalState
PolicySource = Callable[[], CompiledPolicy]
_CAS_ATTEMPTS = 8


@dataclass(frozen=True)
class UndoRequest:
    """What to undo: one entry by id, or the most recent write."""

    entry_id: str | None = None
    last: bool = False
    force: bool = False
    incident_id: str | None = None


def labels_of(obj: dict[str, Any] | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def new_proposal_id() -> str:
    return f"prop-{uuid.uuid4().hex[:12]}"


def decide(
    facts: ProposalFacts, *, policy: CompiledPolicy, store: Store, now: datetime
) -> PolicyDecision:
    """The decision for these facts under this policy with the grants in the store now: the
    one place a decision is computed (proposals, the guard, and `stratus policy explain`).
    A grant that would allow this but was inserted or edited outside Stratus stops it."""
    book = GrantBook(store)
    for grant, problem in book.forged(facts, now):
        raise GrantTampered(
            f"grant {grant.id} ({grant.action} on {grant.namespace}/{grant.resource}) was "
            f"changed outside Stratus: {problem}; it allows nothing, and nothing was written "
            f"(revoke it with `stratus policy revoke {grant.id}`, see `stratus audit verify`)",
            subject=grant.id,
        )
    return evaluate(facts, policy, book.active(now), now)


class ServiceCore:
    """What every use-case needs: the store, the executor, the policy, the repository, the
    event stream and the audit log; and the one way a proposal changes state."""

    def __init__(self, *, store: Store, executor: Executor, policy: PolicySource) -> None:
        self.store = store
        self.clock = store.clock
        self.executor = executor
        self.policy = policy
        self.repo = ProposalRepository(store)
        self.events = ProposalEvents(store)
        self.audit = AuditLog(store)
        self.grants = GrantBook(store)
        self.stack = UndoStack(executor)
        self.executions = ExecutionLog(store)

    # ------------------------------------------------------------------ propose

    def _open(
        self,
        *,
        action: str,
        params: dict[str, Any],
        ref: ObjectRef,
        facts: ProposalFacts,
        plan: WritePlan,
        intent: str,
        risk: str,
        reversible: bool,
        requester: str,
        incident_id: str | None,
        dry_run: bool,
        supersedes: Proposal | None,
        undo_entry: str | None = None,
        force: bool = False,
        warnings: list[str] | None = None,
    ) -> Proposal:
        now = self.clock.now()
        decision = self._decide(facts, now)
        state = {"deny": S.DENIED, "allow": S.APPROVED}.get(decision.outcome, S.AWAITING_APPROVAL)
        proposal_id = new_proposal_id()
        digest = plan_digest(
            action=action, target=str(ref), params=params, diff=plan.diff, seen=plan.before
        )
        proposal = Proposal(
            id=proposal_id,
            incident_id=incident_id,
            action=action,
            params=params,
            target=Target(kind=ref.kind, name=ref.name, namespace=ref.namespace),
            requester=requester,
            facts=Facts.of(facts),
            plan=PlanSnapshot(
                operation=plan.operation,
                # What people see, and all Stratus stores: a Secret's values as digests.
                before=secrets.stored_image(plan.before),
                after=secrets.stored_image(plan.after),
                diff=plan.diff,
                digest=digest,
            ),
            intent=intent,
            risk=risk,
            reversible=reversible,
            decision=seals.signed_decision(proposal_id, digest, Decision.of(decision, now)),
            state=state,
            created_at=now,
            updated_at=now,
            expires_at=now + timedelta(seconds=decision.approval_timeout_seconds),
            undo_entry=undo_entry,
            force=force,
            supersedes=supersedes.id if supersedes else None,
            previous_diff=supersedes.plan.diff if supersedes else None,
            reason=decision.reason if decision.outcome == "deny" else "",
            warnings=list(warnings or []),
        )
        if dry_run:
            return proposal
        with self.store.immediate():
            if undo_entry is not None and supersedes is None:
                open_undo = self.repo.find(states=OPEN, undo_entry=undo_entry, limit=1)
                if open_undo:
                    return open_undo[0]  # a racing request won: answer with its proposal
            proposal = self.repo.insert(proposal)
            self._event(proposal, EventType.PROPOSED, S.PROPOSED.value, None, requester)
            self._event(proposal, EventType.STATE_CHANGED, state.value, "proposed", requester)
            self.audit.append(
                actor=requester,
                event="proposal",
                subject=str(ref),
                payload={
                    "proposal": proposal.id,
                    "action": action,
                    "state": state.value,
                    "digest": proposal.plan.digest,
                    "decision": decision.to_dict(),
                    "supersedes": proposal.supersedes,
                    "seal": proposal.seal,
                },
            )
        crashpoints.reached("proposed")
        return proposal

    def _decide(self, facts: ProposalFacts, now: datetime) -> PolicyDecision:
        policy = self.policy()
        decision = decide(facts, policy=policy, store=self.store, now=now)
        # The kill switch: while paused, nothing that would run without a human does.
        return while_paused(decision, policy, KillSwitch(self.store).state())

    def _executed(self, proposal_id: str, write: AppliedWrite, actor: str) -> None:
        """Inside the write's transaction: the proposal is executed, and an undo marks the
        proposal it reverses undone."""
        proposal = self.repo.get(proposal_id)
        undo_id = write.undo_id if proposal.reversible and proposal.undo_entry is None else None
        self._move(
            proposal_id,
            S.EXECUTED,
            actor=actor,
            message=f"{write.verdict}: {proposal.intent}",
            execution_id=write.execution_id,
            undo_id=undo_id,
        )
        if proposal.undo_entry is None:
            return
        entry = self.stack.entries.get(proposal.undo_entry)
        original = entry.execution.proposal_id if entry else None
        if original:
            self._move(
                original,
                S.UNDONE,
                actor=actor,
                message=f"undone by {proposal_id}",
                undone_by=proposal_id,
            )

    # ------------------------------------------------------------------ state changes

    def _move(
        self,
        proposal_id: str,
        to: ProposalState,
        *,
        actor: str,
        allowed_from: set[ProposalState] | None = None,
        message: str = "",
        **updates: Any,
    ) -> Proposal:
        """One state change: load, check the move, save by compare-and-set, event and audit
        row — all in one transaction (joining the caller's when there is one)."""
        with self.store.immediate():
            proposal = self.repo.get(proposal_id)
            if (allowed_from is not None and proposal.state not in allowed_from) or not (
                proposal.can_move(to)
            ):
                raise NotExecutable(
                    f"proposal {proposal.id} is {proposal.state.value.replace('_', ' ')}; it "
                    f"cannot become {to.value.replace('_', ' ')}",
                    subject=proposal.id,
                )
            return self._save(proposal, to, actor=actor, message=message, **updates)

    def _link(self, proposal_id: str, **links: str) -> Proposal:
        """Record links (the proposal that replaces this one) without a state change."""
        with self.store.immediate():
            proposal = self.repo.get(proposal_id)
            saved = self.repo.save(
                proposal.model_copy(update={**links, "updated_at": self.clock.now()}),
                expected_version=proposal.version,
            )
            self.audit.append(
                actor="stratus",
                event="proposal",
                subject=str(saved.target),
                payload={"proposal": saved.id, **links, "seal": saved.seal},
            )
            return saved

    def _save(
        self,
        proposal: Proposal,
        to: ProposalState,
        *,
        actor: str,
        message: str,
        vote: Vote | None = None,
        **updates: Any,
    ) -> Proposal:
        previous = proposal.state
        changed = proposal.model_copy(
            update={**updates, "state": to, "updated_at": self.clock.now()}
        )
        if (
            message
            and to != previous
            and "reason" not in updates
            and to
            in (
                S.FAILED,
                S.SUPERSEDED,
            )
        ):
            changed = changed.model_copy(update={"reason": message})
        with self.store.immediate():
            saved = self.repo.save(changed, expected_version=proposal.version)
            if vote is not None:
                self._event(
                    saved,
                    EventType.VOTED,
                    to.value,
                    previous.value,
                    actor,
                    message=message,
                    data={"choice": vote.choice, "approvals": saved.approvals()},
                )
            if to != previous:
                self._event(
                    saved, EventType.STATE_CHANGED, to.value, previous.value, actor, message
                )
            self.audit.append(
                actor=actor,
                event="vote" if vote is not None else "proposal",
                subject=str(saved.target),
                payload={
                    "proposal": saved.id,
                    "from": previous.value,
                    "to": to.value,
                    "message": message,
                    "digest": saved.plan.digest,
                    **({"choice": vote.choice} if vote is not None else {}),
                    "seal": saved.seal,
                },
            )
        return saved

    def _event(
        self,
        proposal: Proposal,
        type: EventType,
        state: str,
        previous: str | None,
        actor: str,
        message: str = "",
        data: dict[str, Any] | None = None,
    ) -> None:
        self.events.append(
            ProposalEvent(
                type=type,
                proposal_id=proposal.id,
                incident_id=proposal.incident_id,
                action=proposal.action,
                target=str(proposal.target),
                state=state,
                previous_state=previous,
                actor=actor,
                message=message,
                data=data or {},
            )
        )
