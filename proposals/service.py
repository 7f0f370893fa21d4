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

from collections.abc import Callable
from datetime import datetime
from typing import Any

from policies.approvals import ApprovalRequest, refusal
from policies.approvers import satisfies
from policies.evaluate import (
    facts_for,
)
from proposals import seals
from proposals.core import ServiceCore, UndoRequest, labels_of, new_proposal_id
from proposals.errors import (
    AnswerRefused,
    NoChange,
    NotExecutable,
    ProposalError,
    StaleProposal,
)
from proposals.events import EventType
from proposals.model import (
    Choice,
    Proposal,
    ProposalState,
    Vote,
    plan_digest,
)
from proposals.recovery import RecoveryUseCases
from proposals.undoing import UndoUseCases
from store.clock import stamp
from store.errors import Remedy, StratusError
from store.locks import holder_name
from store.records import UndoEntry
from tools import actions, crashpoints, errors, gitops
from tools.actions import CATALOG, UNDO, WritePlan
from tools.executor import AppliedWrite
from tools.objects import ObjectRef

S = ProposalState
_CAS_ATTEMPTS = 8


__all__ = [
    "PlanMoved",
    "ProposalService",
    "ServiceCore",
    "Superseded",
    "UndoRequest",
    "labels_of",
    "new_proposal_id",
]


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


class ProposalService(UndoUseCases, RecoveryUseCases):
    """The use-cases every surface calls (see the module docstring)."""

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
        owner = gitops.managed_by(current)
        facts = facts_for(
            built,
            requester=requester,
            labels=labels_of(current),
            managed_by=owner.tool if owner else "",
        )
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
            warnings=[owner.warning()] if owner else [],
        )

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
            # A forged proposal is refused before anyone's vote is added to it.
            proposal = self.repo.check(self.repo.get(proposal_id))
            now = self.clock.now()
            self._check_answerable(proposal, user=user, choice=choice, groups=groups, now=now)
            vote = seals.signed_vote(
                proposal.id,
                Vote(
                    user=user,
                    choice=choice,
                    digest=proposal.plan.digest,
                    at=now,
                    reason=reason,
                    groups=list(groups),
                ),
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
                            creator_groups=groups,
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
        why_not = self.refusal(proposal, user=user, groups=groups, now=now, choice=choice)
        if why_not:
            raise AnswerRefused(why_not, subject=proposal.id)
        if choice == "always" and proposal.decision.min_approvals > 1:
            # One person's grant would let later changes through with fewer approvals than
            # the rule requires.
            raise AnswerRefused(
                "'Always allow' is not available where a rule needs "
                f"{proposal.decision.min_approvals} approvals; approve once instead",
                subject=proposal.id,
            )
        if choice == "always" and not proposal.decision.remember:
            raise AnswerRefused(
                f"'Always allow' is not available here: {proposal.decision.reason}",
                subject=proposal.id,
            )
        if choice != "reject" and user in proposal.approvals():
            raise AnswerRefused(
                f"{user} already approved proposal {proposal.id}; it needs "
                f"{proposal.decision.min_approvals} different approvers",
                subject=proposal.id,
            )

    def refusal(
        self,
        proposal: Proposal,
        *,
        user: str,
        groups: tuple[str, ...],
        now: datetime,
        choice: str = "approve",
    ) -> str | None:
        """Why ``user`` (in ``groups``) may not answer ``proposal`` with ``choice`` — not an
        approver, their own request (approving it; withdrawing it is theirs), already voted —
        or None. A pure check: surfaces ask it before showing
        a refusal, and ``answer`` asks it again."""
        request = ApprovalRequest(
            proposal_id=proposal.id,
            facts=proposal.facts.policy_facts(),
            decision=proposal.decision.policy_decision(),
            digest=proposal.plan.digest,
            created_at=proposal.created_at,
        )
        return refusal(request, user, groups, now, choice=choice)

    # ------------------------------------------------------------------ execute

    def execute(self, proposal_id: str, *, actor: str) -> Proposal:
        """Execute an approved proposal exactly once (compare-and-set approved → executing)."""
        proposal = self.repo.check(self.repo.get(proposal_id))
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
        if proposal.decision.outcome != "allow" and (
            len(proposal.approvals()) < proposal.decision.min_approvals
        ):
            # Sealed or not, an approval is the votes it counts: never fewer than asked for.
            raise NotExecutable(
                f"proposal {proposal.id} is marked approved with {len(proposal.approvals())} of "
                f"{proposal.decision.min_approvals} approvals; nothing was written",
                subject=proposal.id,
            )
        target = proposal.target
        self.settle_earlier_writes(ObjectRef(target.kind, target.name, target.namespace))
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
        old = self._link(old.id, superseded_by=new.id)
        return Superseded(
            f"nothing was written: {moved.message}; proposal {new.id} replaces it",
            old=old,
            new=new,
        )

    # ------------------------------------------------------------------ cancel, drop, expire

    def cancel(self, proposal_id: str, *, actor: str, reason: str = "") -> Proposal:
        """Withdraw a proposal nobody executed yet (the requester or an approver may)."""
        proposal = self.repo.get(proposal_id)
        if actor != proposal.requester and not satisfies(
            proposal.decision.approver_lists, actor, ()
        ):
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

    def withdraw(self, proposal_id: str, *, incident_id: str, actor: str, reason: str) -> Proposal:
        """Withdraw an open proposal of an incident that ended, whoever requested it: nothing of
        a cancelled incident stays open. The authorization is the incident's — its cancel was
        authorized before the incident workflow got here — so neither the requester nor an
        approver is asked; withdrawing writes nothing. ``actor`` is who ended the incident,
        ``reason`` says how; both land in the event and the audit row. Refused for a
        proposal of another incident (or of none)."""
        proposal = self.repo.get(proposal_id)
        if not proposal.incident_id or proposal.incident_id != incident_id:
            raise AnswerRefused(
                f"proposal {proposal.id} belongs to "
                + (f"incident {proposal.incident_id}" if proposal.incident_id else "no incident")
                + f", not to {incident_id}; it is not withdrawn",
                subject=proposal.id,
            )
        return self._move(
            proposal.id,
            S.CANCELLED,
            actor=actor,
            allowed_from={S.AWAITING_APPROVAL, S.APPROVED},
            message=f"withdrawn: {reason}",
            reason=reason,
        )

    # ------------------------------------------------------------------ queries

    # Every query a surface calls checks what it returns (``repo.shown``): a proposal edited
    # outside Stratus comes back with ``tampered`` set, and surfaces show it as such.

    def get(self, proposal_id: str) -> Proposal:
        return self.repo.shown_one(proposal_id)

    def pending(self) -> list[Proposal]:
        self.expire()
        return self.repo.shown(
            self.repo.rows(states=frozenset({S.AWAITING_APPROVAL, S.APPROVED}), limit=1000)
        )

    def by_incident(self, incident_id: str) -> list[Proposal]:
        return self.repo.shown(self.repo.rows(incident_id=incident_id, limit=1000))

    def recent(self, *, limit: int = 50) -> list[Proposal]:
        return self.repo.shown(self.repo.rows(limit=limit))

    def undo_entries(self) -> list[UndoEntry]:
        return self.stack.entries.active()
