"""The use-cases every surface calls: propose, answer, execute, undo, cancel, reconcile, and the
queries. Each reads top to bottom and calls the layers below once each.

Three rules hold everywhere:
- **The approved plan is the executed plan.** Execution re-plans under the object's lock and
  re-evaluates the policy on the object as it is now; if the digest the humans approved moved,
  or the policy now asks for more, nothing is written and a new proposal is asked for.
- **One transaction per state change**: the proposal's new state, its event, its audit row
  and (for a write) the execution record and undo entry commit together.
- **Undo has one owner**: an undo is a proposal of its own (action ``undo``), decided by
  policy, approved and executed like any other write.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from policies.approvals import ApprovalRequest, refusal
from policies.evaluate import (
    CompiledPolicy,
    PolicyDecision,
    ProposalFacts,
    evaluate,
    facts_for,
    undo_facts,
)
from policies.grants import GrantBook
from proposals.errors import (
    AnswerRefused,
    NoChange,
    NotExecutable,
    ProposalError,
    StaleProposal,
)
from proposals.events import EventType, ProposalEvent, ProposalEvents
from proposals.model import (
    OPEN,
    Choice,
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
from store.clock import stamp
from store.db import Store
from store.errors import Remedy, StratusError
from store.locks import holder_alive, holder_name
from store.records import ExecutionLog, UndoEntry
from tools import actions, crashpoints, errors
from tools.actions import CATALOG, UNDO, WritePlan
from tools.executor import AppliedWrite, Executor, Resolution
from tools.objects import ObjectRef
from undo.stack import UndoStack, check_record, plan_inverse

S = ProposalState
PolicySource = Callable[[], CompiledPolicy]
_CAS_ATTEMPTS = 8


class PlanMoved(ProposalError):
    """Raised under the lock when the plan or the policy moved since the approval."""

    code = "plan_moved"
    default_remedy = Remedy.PROPOSE_AGAIN

    def __init__(self, message: str, *, plan: WritePlan, current: dict[str, Any] | None) -> None:
        super().__init__(message)
        self.plan = plan
        self.current = current


class Superseded(ProposalError):
    """Nothing was written: the object or the policy moved since the approval. ``new`` is the
    proposal that replaces it (None when the object already looks as wanted)."""

    code = "superseded"
    default_remedy = Remedy.PROPOSE_AGAIN

    def __init__(self, message: str, *, old: Proposal, new: Proposal | None) -> None:
        super().__init__(
            message,
            subject=old.id,
            details={"old": old.id, "new": new.id if new else None},
        )
        self.old = old
        self.new = new


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


class ProposalService:
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

    def propose(
        self,
        *,
        action: str,
        target: ObjectRef | None = None,
        kind: str | None = None,
        name: str = "",
        namespace: str = "",
        params: dict[str, Any] | None = None,
        requester: str,
        incident_id: str | None = None,
        dry_run: bool = False,
        supersedes: Proposal | None = None,
    ) -> Proposal:
        """Plan a catalog action, server-dry-run it, decide it by policy and store it."""
        if action == UNDO:
            raise errors.Invalid("undo is proposed with propose_undo")
        cls = CATALOG.get(action)
        if cls is None:
            raise errors.Invalid(
                f"unknown action {action!r}; known actions: {', '.join(sorted(CATALOG))}"
            )
        if target is not None:
            kind, name, namespace = target.kind, target.name, target.namespace
        values: dict[str, Any] = {
            **(params or {}),
            "kind": kind or cls.kinds[0],
            "target": name,
            "namespace": namespace,
        }
        if cls is actions.RolloutRestart:
            # Stamped once, here, so the approved plan and the executed plan are the same.
            values.setdefault("restarted_at", stamp(self.clock.now())[:19] + "Z")
        built = actions.build(action, values)
        current, plan = self.executor.preview(built)
        if not plan.changes_anything:
            raise NoChange(
                f"{built.ref()} already looks like that; nothing to do", subject=str(built.ref())
            )
        stored_params = built.model_dump(mode="json", exclude={"kind", "target", "namespace"})
        facts = facts_for(built, requester=requester, labels=labels_of(current))
        return self._open(
            action=action,
            params=stored_params,
            ref=built.ref(),
            facts=facts,
            plan=plan,
            intent=built.intent(current),
            risk=cls.risk,
            reversible=cls.reversible,
            requester=requester,
            incident_id=incident_id,
            dry_run=dry_run,
            supersedes=supersedes,
        )

    def propose_undo(
        self,
        request: UndoRequest,
        *,
        requester: str,
        dry_run: bool = False,
        supersedes: Proposal | None = None,
    ) -> Proposal:
        """Propose undoing one earlier write. A second request for an entry that already has
        an open undo proposal gets that proposal back."""
        entry = self._undo_entry(request)
        execution = entry.execution
        ref = check_record(execution, self.store)
        for existing in self.repo.find(states=OPEN, undo_entry=entry.id, limit=1):
            if not dry_run and supersedes is None:
                return existing
        current = self.executor.kube.find(ref)
        inverse = plan_inverse(execution, current, force=request.force)
        if inverse.changes_anything:
            self.executor.dry_run(inverse)
        facts = undo_facts(
            original_action=execution.action,
            kind=ref.kind,
            namespace=ref.namespace,
            name=ref.name,
            requester=requester,
            labels=labels_of(current),
        )
        return self._open(
            action=UNDO,
            params={"entry": entry.id, "force": request.force},
            ref=ref,
            facts=facts,
            plan=inverse,
            intent=f"Undo: {execution.intent}",
            risk=facts.risk,
            reversible=True,
            requester=requester,
            incident_id=request.incident_id or execution.incident_id,
            dry_run=dry_run,
            supersedes=supersedes,
            undo_entry=entry.id,
            force=request.force,
        )

    def _undo_entry(self, request: UndoRequest) -> UndoEntry:
        if request.last:
            newest = self.stack.entries.newest(incident_id=request.incident_id)
            if newest is None:
                raise errors.NotFound("nothing to undo: Stratus has made no reversible write")
            if newest.state != "active":
                earlier = self.stack.entries.active(incident_id=request.incident_id)
                raise errors.Invalid(
                    f"the last write ({newest.execution.intent}, {newest.id}) was already "
                    f"{newest.state} by {newest.undone_by} at {newest.undone_at}; name an "
                    "earlier entry to undo it",
                    subject=newest.id,
                    details={"entry": newest.id, "next": earlier[0].id if earlier else None},
                )
            return newest
        if not request.entry_id:
            raise errors.Invalid("name an undo entry, or ask for the last one")
        return self.stack.entry(request.entry_id)

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
    ) -> Proposal:
        now = self.clock.now()
        decision = self._decide(facts, now)
        state = {"deny": S.DENIED, "allow": S.APPROVED}.get(decision.outcome, S.AWAITING_APPROVAL)
        proposal = Proposal(
            id=new_proposal_id(),
            incident_id=incident_id,
            action=action,
            params=params,
            target=Target(kind=ref.kind, name=ref.name, namespace=ref.namespace),
            requester=requester,
            facts=Facts.of(facts),
            plan=PlanSnapshot(
                operation=plan.operation,
                before=plan.before,
                after=plan.after,
                diff=plan.diff,
                digest=plan_digest(
                    action=action, target=str(ref), params=params, diff=plan.diff, seen=plan.before
                ),
            ),
            intent=intent,
            risk=risk,
            reversible=reversible,
            decision=Decision.of(decision, now),
            state=state,
            created_at=now,
            updated_at=now,
            expires_at=now + timedelta(seconds=decision.approval_timeout_seconds),
            undo_entry=undo_entry,
            force=force,
            supersedes=supersedes.id if supersedes else None,
            previous_diff=supersedes.plan.diff if supersedes else None,
            reason=decision.reason if decision.outcome == "deny" else "",
        )
        if dry_run:
            return proposal
        with self.store.immediate():
            if undo_entry is not None and supersedes is None:
                open_undo = self.repo.find(states=OPEN, undo_entry=undo_entry, limit=1)
                if open_undo:
                    return open_undo[0]  # a racing request won: answer with its proposal
            self.repo.insert(proposal)
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
                },
            )
        crashpoints.reached("proposed")
        return proposal

    def _decide(self, facts: ProposalFacts, now: datetime) -> PolicyDecision:
        return evaluate(facts, self.policy(), self.grants.active(now), now)

    # ------------------------------------------------------------------ answer

    def answer(
        self,
        proposal_id: str,
        *,
        user: str,
        choice: Choice,
        groups: tuple[str, ...] = (),
        reason: str = "",
        grant_lifetime_seconds: int | None = None,
    ) -> Proposal:
        """Approve once, Always allow, or reject. A vote that may not count changes nothing
        and raises ``AnswerRefused`` saying why."""
        for _ in range(_CAS_ATTEMPTS):
            proposal = self.repo.get(proposal_id)
            now = self.clock.now()
            self._check_answerable(proposal, user=user, choice=choice, groups=groups, now=now)
            vote = Vote(
                user=user,
                choice=choice,
                digest=proposal.plan.digest,
                at=now,
                reason=reason,
                groups=list(groups),
            )
            voted = proposal.model_copy(update={"votes": [*proposal.votes, vote]})
            if choice == "reject":
                target = S.REJECTED
                message = f"rejected by {user}: {reason or 'no reason given'}"
            else:
                approvals = voted.approvals()
                needed = proposal.decision.min_approvals
                target = S.APPROVED if len(approvals) >= needed else S.AWAITING_APPROVAL
                message = (
                    f"approved by {', '.join(approvals)}"
                    if target == S.APPROVED
                    else f"{len(approvals)} of {needed} approvals ({', '.join(approvals)})"
                )
            try:
                with self.store.immediate():
                    saved = self._save(
                        voted,
                        target,
                        actor=user,
                        message=message,
                        reason=reason if choice == "reject" else "",
                        vote=vote,
                    )
                    if choice == "always":
                        grant = self.grants.create(
                            proposal.facts.policy_facts(),
                            proposal.decision.policy_decision(),
                            created_by=user,
                            now=now,
                            lifetime_seconds=grant_lifetime_seconds,
                        )
                        self._event(
                            saved,
                            EventType.VOTED,
                            saved.state.value,
                            None,
                            user,
                            message=f"{user} created grant {grant.id}",
                            data={"grant": grant.id},
                        )
            except StaleProposal:
                continue  # someone voted at the same moment: look again
            crashpoints.reached("answered")
            return saved
        raise StaleProposal(f"proposal {proposal_id} kept changing; try again")

    def _check_answerable(
        self,
        proposal: Proposal,
        *,
        user: str,
        choice: Choice,
        groups: tuple[str, ...],
        now: datetime,
    ) -> None:
        if choice not in ("approve", "always", "reject"):
            raise AnswerRefused(f"unknown answer {choice!r}", remedy=Remedy.FIX_INPUT)
        if proposal.state != S.AWAITING_APPROVAL:
            raise AnswerRefused(
                f"proposal {proposal.id} is already {proposal.state.value.replace('_', ' ')}"
                + (f" ({proposal.reason})" if proposal.reason else ""),
                subject=proposal.id,
                remedy=Remedy.NONE,
            )
        if now >= proposal.expires_at:
            self._expire_one(proposal, now)
            raise AnswerRefused(
                f"proposal {proposal.id} expired at {proposal.expires_at:%Y-%m-%d %H:%M} UTC",
                subject=proposal.id,
                remedy=Remedy.PROPOSE_AGAIN,
            )
        request = ApprovalRequest(
            proposal_id=proposal.id,
            facts=proposal.facts.policy_facts(),
            decision=proposal.decision.policy_decision(),
            digest=proposal.plan.digest,
            created_at=proposal.created_at,
        )
        why_not = refusal(request, user, groups, now)
        if why_not:
            raise AnswerRefused(why_not, subject=proposal.id)
        if choice == "always" and not proposal.decision.remember:
            raise AnswerRefused(
                f"'Always allow' is not available here: {proposal.decision.reason}",
                subject=proposal.id,
            )
        if choice == "always" and proposal.decision.min_approvals > 1:
            # One person's grant would let later changes through with fewer approvals than
            # the rule requires.
            raise AnswerRefused(
                "'Always allow' is not available where a rule needs "
                f"{proposal.decision.min_approvals} approvals; approve once instead",
                subject=proposal.id,
            )
        if choice != "reject" and user in proposal.approvals():
            raise AnswerRefused(
                f"{user} already approved proposal {proposal.id}; it needs "
                f"{proposal.decision.min_approvals} different approvers",
                subject=proposal.id,
            )

    # ------------------------------------------------------------------ execute

    def execute(self, proposal_id: str, *, actor: str) -> Proposal:
        """Execute an approved proposal exactly once (compare-and-set approved → executing)."""
        proposal = self.repo.get(proposal_id)
        if proposal.state == S.EXECUTED:
            return proposal
        if proposal.state == S.EXECUTING:
            who = (proposal.executor or "someone").rpartition("@")[0] or "someone"
            doing = (
                f"{proposal.intent.removeprefix('Undo: ')} is being undone"
                if proposal.undo_entry
                else f"{proposal.intent} is being carried out"
            )
            raise NotExecutable(
                f"{doing} right now by {who} ({proposal.id})",
                subject=proposal.id,
                remedy=Remedy.NONE,
            )
        if proposal.state == S.APPROVED and self.clock.now() >= proposal.expires_at:
            # An approval is for a moment, not for ever: a late execution asks again.
            self._move(
                proposal.id,
                S.EXPIRED,
                actor="stratus-timeout",
                message="approved but not executed in time",
                reason="approved but not executed in time",
            )
            raise NotExecutable(
                f"proposal {proposal.id} was approved but not executed before "
                f"{proposal.expires_at:%Y-%m-%d %H:%M} UTC; propose it again",
                subject=proposal.id,
                remedy=Remedy.PROPOSE_AGAIN,
            )
        if proposal.state != S.APPROVED:
            raise NotExecutable(
                f"proposal {proposal.id} is {proposal.state.value.replace('_', ' ')}, not approved"
                + (f" ({proposal.reason})" if proposal.reason else ""),
                subject=proposal.id,
            )
        holder = holder_name(actor)
        proposal = self._move(
            proposal.id, S.EXECUTING, actor=actor, allowed_from={S.APPROVED}, executor=holder
        )
        crashpoints.reached("executing")
        try:
            applied = self._write(proposal, actor)
        except PlanMoved as moved:
            raise self._supersede(proposal, moved, actor) from moved
        except errors.OutcomeUnknown:
            raise  # stays executing; recovery reads the object and finishes it
        except (errors.LockHeld, errors.Unavailable) as error:
            # Nothing was written and the approval still stands.
            self._move(proposal.id, S.APPROVED, actor=actor, message=error.message, executor=None)
            raise
        except StratusError as error:
            self._move(
                proposal.id, S.FAILED, actor=actor, message=error.message, error=error.to_dict()
            )
            raise
        if not applied:
            # The object already was as planned (an undo of something already restored).
            self._move(proposal.id, S.EXECUTED, actor=actor, message="nothing left to change")
        return self.repo.get(proposal.id)

    def _write(self, proposal: Proposal, actor: str) -> bool:
        guard = self._guard(proposal)

        def record(write: AppliedWrite) -> None:
            self._executed(proposal.id, write, actor)

        if proposal.undo_entry is not None:
            result = self.stack.undo(
                proposal.undo_entry,
                actor=actor,
                force=proposal.force,
                guard=guard,
                on_applied=record,
                proposal_id=proposal.id,
            )
            return bool(result.outcome and result.outcome.applied)
        built = actions.build(
            proposal.action,
            {
                **proposal.params,
                "kind": proposal.target.kind,
                "target": proposal.target.name,
                "namespace": proposal.target.namespace,
            },
        )
        outcome = self.executor.run(
            built.ref(),
            self.executor.action_planner(built),
            action=proposal.action,
            actor=actor,
            intent=proposal.intent,
            guard=guard,
            on_applied=record,
            proposal_id=proposal.id,
            incident_id=proposal.incident_id,
            needs_inverse=proposal.reversible,
        )
        return outcome.applied

    def _guard(self, proposal: Proposal) -> Callable[[WritePlan, dict[str, Any] | None], None]:
        """Under the lock, on the object as it is now: the same change, and a policy that
        asks no more than it did when the humans approved."""

        def guard(plan: WritePlan, current: dict[str, Any] | None) -> None:
            digest = plan_digest(
                action=proposal.action,
                target=str(
                    ObjectRef(proposal.target.kind, proposal.target.name, proposal.target.namespace)
                ),
                params=proposal.params,
                diff=plan.diff,
                seen=plan.before,
            )
            if proposal.undo_entry is not None:
                self._check_undoable(proposal.undo_entry)
            facts = proposal.facts.model_copy(update={"labels": labels_of(current)})
            decision = self._decide(facts.policy_facts(), self.clock.now())
            if not proposal.decision.requires_same(decision):
                raise PlanMoved(
                    f"the policy now decides differently ({decision.reason})",
                    plan=plan,
                    current=current,
                )
            if digest != proposal.plan.digest:
                raise PlanMoved(
                    "the object changed since the plan was approved", plan=plan, current=current
                )

        return guard

    def _check_undoable(self, entry_id: str) -> None:
        """Under the object's lock, before the inverse is written: the entry is still on the
        stack and the write it reverses can still become undone."""
        entry = self.stack.entry(entry_id)  # raises when undone, dropped or irreversible
        original = entry.execution.proposal_id
        if original and not self.repo.get(original).can_move(S.UNDONE):
            state = self.repo.get(original).state.value.replace("_", " ")
            raise NotExecutable(
                f"the write {entry_id} reverses belongs to proposal {original}, which is "
                f"{state}; it cannot be undone",
                subject=entry_id,
            )

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

    def _supersede(self, proposal: Proposal, moved: PlanMoved, actor: str) -> Superseded:
        old = self._move(
            proposal.id,
            S.SUPERSEDED,
            actor=actor,
            message=f"nothing was written: {moved.message}",
            executor=None,
        )
        try:
            if proposal.undo_entry is not None:
                new = self.propose_undo(
                    UndoRequest(
                        entry_id=proposal.undo_entry,
                        force=proposal.force,
                        incident_id=proposal.incident_id,
                    ),
                    requester=proposal.requester,
                    supersedes=old,
                )
            else:
                new = self.propose(
                    action=proposal.action,
                    kind=proposal.target.kind,
                    name=proposal.target.name,
                    namespace=proposal.target.namespace,
                    params=proposal.params,
                    requester=proposal.requester,
                    incident_id=proposal.incident_id,
                    supersedes=old,
                )
        except NoChange:
            return Superseded(
                f"nothing was written: {moved.message}, and it already looks as planned",
                old=old,
                new=None,
            )
        except StratusError as error:
            return Superseded(
                f"nothing was written: {moved.message}; a new proposal could not be made "
                f"({error.message})",
                old=old,
                new=None,
            )
        old = self._move(old.id, S.SUPERSEDED, actor=actor, superseded_by=new.id, force_save=True)
        return Superseded(
            f"nothing was written: {moved.message}; proposal {new.id} replaces it",
            old=old,
            new=new,
        )

    # ------------------------------------------------------------------ cancel, drop, expire

    def cancel(self, proposal_id: str, *, actor: str, reason: str = "") -> Proposal:
        """Withdraw a proposal nobody executed yet (the requester or an approver may)."""
        proposal = self.repo.get(proposal_id)
        approvers = set(proposal.decision.approvers)
        if actor != proposal.requester and "*" not in approvers and actor not in approvers:
            raise AnswerRefused(
                f"only the requester ({proposal.requester}) or an approver may cancel "
                f"proposal {proposal.id}",
                subject=proposal.id,
            )
        return self._move(
            proposal.id,
            S.CANCELLED,
            actor=actor,
            allowed_from={S.AWAITING_APPROVAL, S.APPROVED},
            message=f"cancelled by {actor}: {reason or 'no reason given'}",
            reason=reason,
        )

    def drop_undo_entry(self, entry_id: str, *, actor: str, reason: str) -> UndoEntry:
        """Take an entry off the undo stack without undoing it — for an object that was
        deleted and re-created since, say. Audited, and an event on its proposal."""
        entry = self.stack.entry(entry_id)
        open_undo = self.repo.find(states=OPEN, undo_entry=entry_id, limit=1)
        if open_undo:
            raise NotExecutable(
                f"{entry_id} has an open undo proposal ({open_undo[0].id}, "
                f"{open_undo[0].state.value.replace('_', ' ')}); cancel it first",
                subject=entry_id,
            )
        ref = check_record(entry.execution, self.store)
        holder = holder_name(actor)
        blocker = self.executor.locks.acquire(ref.key, holder, wait=self.executor.lock_wait)
        if blocker is not None:
            raise errors.LockHeld(f"{ref} is being changed; try again", subject=str(ref))
        try:
            return self._drop(entry, actor, reason)
        finally:
            self.executor.locks.release(ref.key, holder)

    def _drop(self, entry: UndoEntry, actor: str, reason: str) -> UndoEntry:
        entry_id = entry.id
        with self.store.immediate():
            if not self.stack.entries.drop(entry_id, actor):
                raise errors.Conflict(f"{entry_id} changed while it was dropped", subject=entry_id)
            self.audit.append(
                actor=actor,
                event="undo-dropped",
                subject=entry.execution.target,
                payload={"entry": entry_id, "execution": entry.execution.id, "reason": reason},
            )
            original = entry.execution.proposal_id
            if original:
                proposal = self.repo.get(original)
                self._event(
                    proposal,
                    EventType.UNDO_DROPPED,
                    proposal.state.value,
                    None,
                    actor,
                    message=f"undo entry {entry_id} dropped by {actor}: {reason}",
                    data={"entry": entry_id},
                )
        dropped = self.stack.entries.get(entry_id)
        assert dropped is not None
        return dropped

    def expire(self) -> list[Proposal]:
        """Requests nobody answered in time become *expired* — never a human rejection."""
        now = self.clock.now()
        expired = []
        for proposal in self.repo.find(states=frozenset({S.AWAITING_APPROVAL}), limit=10_000):
            if now >= proposal.expires_at:
                moved = self._expire_one(proposal, now)
                if moved is not None:
                    expired.append(moved)
        return expired

    def _expire_one(self, proposal: Proposal, now: datetime) -> Proposal | None:
        try:
            return self._move(
                proposal.id,
                S.EXPIRED,
                actor="stratus-timeout",
                allowed_from={S.AWAITING_APPROVAL},
                message=f"nobody answered by {proposal.expires_at:%Y-%m-%d %H:%M} UTC",
                reason="nobody answered in time",
            )
        except NotExecutable:
            return None  # answered or expired by someone else meanwhile

    # ------------------------------------------------------------------ recovery

    def reconcile(self, *, actor: str = "stratus-reconciler") -> list[str]:
        """Finish what a crash left behind: pending writes (by reading the object) and
        proposals whose executing process is gone. Live processes are left alone."""
        lines = [
            str(resolution)
            for resolution in self.executor.reconcile(actor, on_resolved=self._resolved)
        ]
        for proposal in self.repo.find(states=frozenset({S.EXECUTING}), limit=10_000):
            if proposal.executor and not self._gone(proposal.executor):
                continue
            executions = self.executions.by_proposal(proposal.id)
            if any(e.state == "pending" for e in executions):
                continue  # its write is unresolved yet: the executor's recovery decides
            applied = [e for e in executions if e.state == "applied"]
            if applied:
                continue  # recorded with its write; nothing to finish
            try:
                self._move(
                    proposal.id,
                    S.FAILED,
                    actor=actor,
                    allowed_from={S.EXECUTING},
                    message="interrupted before the write; nothing was written",
                    reason="interrupted before the write",
                )
            except NotExecutable:
                continue  # another process finished it first
            lines.append(f"{proposal.id}: interrupted before the write; nothing was written")
        self.expire()
        return lines

    def _gone(self, holder: str) -> bool:
        alive = holder_alive(holder)
        if alive is not None:
            return not alive
        return not self.executor.locks.held_by(holder)

    def _resolved(self, resolution: Resolution) -> None:
        """Inside the recovery transaction: the proposal follows its write."""
        proposal_id = resolution.execution.proposal_id
        if not proposal_id:
            return
        try:
            self._follow(proposal_id, resolution)
        except (NotExecutable, ProposalError) as error:
            # The write's own record, undo entry and audit row still commit; a proposal in an
            # unexpected state (an edited database, say) must not block every later command.
            self.audit.append(
                actor="stratus-reconciler",
                event="reconcile-anomaly",
                subject=proposal_id,
                payload={"execution": resolution.execution.id, "problem": error.message},
            )

    def _follow(self, proposal_id: str, resolution: Resolution) -> None:
        if resolution.verdict == "not applied":
            self._move(
                proposal_id,
                S.FAILED,
                actor="stratus-reconciler",
                message="interrupted: the write never reached the object",
                reason="interrupted before the write",
            )
            return
        self._executed(
            proposal_id,
            AppliedWrite(
                resolution.execution.id, resolution.undo_id, _no_plan(), None, resolution.verdict
            ),
            "stratus-reconciler",
        )

    # ------------------------------------------------------------------ queries

    def get(self, proposal_id: str) -> Proposal:
        return self.repo.get(proposal_id)

    def pending(self) -> list[Proposal]:
        self.expire()
        return self.repo.find(states=frozenset({S.AWAITING_APPROVAL, S.APPROVED}), limit=1000)

    def by_incident(self, incident_id: str) -> list[Proposal]:
        return self.repo.find(incident_id=incident_id, limit=1000)

    def recent(self, *, limit: int = 50) -> list[Proposal]:
        return self.repo.find(limit=limit)

    def undo_entries(self) -> list[UndoEntry]:
        return self.stack.entries.active()

    # ------------------------------------------------------------------ state changes

    def _move(
        self,
        proposal_id: str,
        to: ProposalState,
        *,
        actor: str,
        allowed_from: set[ProposalState] | None = None,
        message: str = "",
        force_save: bool = False,
        **updates: Any,
    ) -> Proposal:
        """One state change: load, check the move, save by compare-and-set, event and audit
        row — all in one transaction (joining the caller's when there is one)."""
        with self.store.immediate():
            proposal = self.repo.get(proposal_id)
            if force_save and proposal.state == to:
                saved = self.repo.save(
                    proposal.model_copy(update={**updates, "updated_at": self.clock.now()}),
                    expected_version=proposal.version,
                )
                return saved
            if (allowed_from is not None and proposal.state not in allowed_from) or not (
                proposal.can_move(to)
            ):
                raise NotExecutable(
                    f"proposal {proposal.id} is {proposal.state.value.replace('_', ' ')}; it "
                    f"cannot become {to.value.replace('_', ' ')}",
                    subject=proposal.id,
                )
            return self._save(proposal, to, actor=actor, message=message, **updates)

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


def _no_plan() -> WritePlan:
    return WritePlan("replace", None, None, "")
