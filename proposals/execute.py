"""Executing an approved proposal, top to bottom: check it may run, move it to executing,
then under the object's lock re-read, re-plan, check the digest and the policy (the approved
plan is the executed plan), server dry-run, write-ahead record, write, and ONE transaction that
marks the write applied, pushes its undo entry, writes its audit row and moves the proposal to
executed with its event. An undo proposal takes the same path with the inverse plan.

If the object moved between the read and the write, it is read and planned again once (the
loop in ``_write_under_lock``; the executor bounds it). If the plan or the policy moved since
the approval, nothing is written and the proposal is superseded by a new one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from policies import impersonation
from policies.approvers import is_person
from proposals.core import (
    Deps,
    UndoRequest,
    decide_now,
    labels_of,
    link,
    mark_executed,
    move,
)
from proposals.errors import NoChange, NotExecutable, ProposalError
from proposals.model import Proposal, ProposalState, plan_digest
from proposals.propose import propose
from proposals.recover import settle_earlier_writes
from proposals.undoing import check_undoable, propose_undo
from store.errors import Remedy, StratusError
from store.locks import holder_name
from tools import actions, crashpoints, errors, secrets
from tools.actions import UNDO, WritePlan
from tools.identity import KubeIdentity
from tools.objects import ObjectRef
from tools.write_steps import Replan, WriteRecord
from undo.conflicts import UndoConflict
from undo.entries import UNDONE
from undo.stack import check_record, plan_inverse

S = ProposalState
Planner = Callable[[dict[str, Any] | None], WritePlan]


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


def execute(deps: Deps, proposal_id: str, *, actor: str) -> Proposal:
    """Execute an approved proposal exactly once (compare-and-set approved → executing)."""
    proposal = deps.repo.check(deps.repo.get(proposal_id))
    if proposal.state == S.EXECUTED:
        return proposal
    deps = deps.on(proposal.cluster)  # the cluster it was planned on, never today's default
    _check_executable(deps, proposal)
    target = proposal.target
    settle_earlier_writes(deps, ObjectRef(target.kind, target.name, target.namespace))
    proposal = move(
        deps,
        proposal.id,
        S.EXECUTING,
        actor=actor,
        allowed_from={S.APPROVED},
        executor=holder_name(actor),
    )
    crashpoints.reached("executing")
    try:
        sent_as = _sent_as(deps, proposal)
        writer = sent_as[1] if sent_as else None
        try:
            if proposal.undo_entry is not None:
                applied = _write_undo(deps, proposal, actor, writer)
            else:
                applied = _write_action(deps, proposal, actor, writer)
        except errors.Forbidden as forbidden:
            if sent_as is None:
                raise
            cluster = str(forbidden.details.get("cluster") or forbidden.message)
            raise impersonation.refused(sent_as[0], sent_as[1], cluster, proposal.id) from (
                forbidden
            )
    except PlanMoved as moved:
        raise _supersede(deps, proposal, moved, actor) from moved
    except errors.OutcomeUnknown:
        raise  # stays executing; recovery reads the object and finishes it
    except (errors.LockHeld, errors.Unavailable) as error:
        # Nothing was written and the approval still stands.
        move(deps, proposal.id, S.APPROVED, actor=actor, message=error.message, executor=None)
        raise
    except StratusError as error:
        move(deps, proposal.id, S.FAILED, actor=actor, message=error.message, error=error.to_dict())
        raise
    if not applied:
        # The object already was as planned (an undo of something already restored).
        move(deps, proposal.id, S.EXECUTED, actor=actor, message="nothing left to change")
    return deps.repo.get(proposal.id)


def _check_executable(deps: Deps, proposal: Proposal) -> None:
    """Refuse a proposal that is running, expired, not approved, or short of approvals."""
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
    if proposal.state == S.APPROVED and deps.clock.now() >= proposal.expires_at:
        # An approval is for a moment, not for ever: a late execution asks again.
        move(
            deps,
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


def _sent_as(
    deps: Deps, proposal: Proposal
) -> tuple[impersonation.Accountable, KubeIdentity] | None:
    """Whom the write goes out as, when impersonation is on (None: it is off): the person
    accountable for it (``policies.impersonation.accountable``) and their Kubernetes identity.
    ``NotMapped`` before anything is sent when they have none."""
    if deps.impersonation is None:
        return None
    approvals: dict[str, impersonation.Approval] = {}
    for vote in proposal.votes:
        if vote.choice != "reject" and vote.digest == proposal.plan.digest:
            approvals.setdefault(vote.user, impersonation.Approval(vote.user, tuple(vote.groups)))
    creator = None
    if proposal.decision.source == "grant" and proposal.decision.grant:
        grant = next((g for g in deps.grants.all() if g.id == proposal.decision.grant), None)
        if grant is not None:
            creator = impersonation.Approval(grant.created_by, grant.creator_groups)
    people = impersonation.accountable(
        outcome=proposal.decision.outcome,
        approvals=list(approvals.values()),
        grant_creator=creator,
        requester=proposal.requester,
        is_person=is_person(proposal.requester),
    )
    return people[0], impersonation.writer(deps.impersonation, people)


def _write_action(
    deps: Deps, proposal: Proposal, actor: str, writer: KubeIdentity | None = None
) -> bool:
    built = actions.build(
        proposal.action,
        {
            **proposal.params,
            "kind": proposal.target.kind,
            "target": proposal.target.name,
            "namespace": proposal.target.namespace,
        },
    )
    record = WriteRecord(
        action=proposal.action,
        intent=proposal.intent,
        proposal_id=proposal.id,
        incident_id=proposal.incident_id,
        needs_inverse=proposal.reversible,
        writer=writer,
    )

    def plan_for(current: dict[str, Any] | None) -> WritePlan:
        return deps.executor.plan_action(built, current)

    return _write_under_lock(deps, proposal, built.ref(), plan_for, record, actor)


def _write_undo(
    deps: Deps, proposal: Proposal, actor: str, writer: KubeIdentity | None = None
) -> bool:
    """The inverse of the write the proposal's undo entry names. A failure is kept on the
    entry; the entry leaves the stack in the write's transaction (or here, when the object
    already was as it was before)."""
    assert proposal.undo_entry is not None
    entry = deps.stack.entry(proposal.undo_entry)
    execution = entry.execution
    ref = check_record(execution, deps.store)
    record = WriteRecord(
        action=UNDO,
        intent=f"Undo: {execution.intent}",
        proposal_id=proposal.id,
        incident_id=execution.incident_id,
        inverse_of=execution.id,
        writer=writer,
    )
    try:
        before = deps.stack.before_image(execution)

        def plan_for(current: dict[str, Any] | None) -> WritePlan:
            return plan_inverse(execution, current, force=proposal.force, before=before)

        applied = _write_under_lock(deps, proposal, ref, plan_for, record, actor)
    except UndoConflict as conflict:
        named = conflict.naming(deps.stack.who_changed(execution))
        deps.stack.entries.record_failure(entry.id, named.message)
        raise named from conflict
    except errors.OutcomeUnknown:
        raise  # not a failure: the inverse may have landed (recovery decides)
    except errors.ToolError as error:
        deps.stack.entries.record_failure(entry.id, error.message)
        raise
    if not applied:
        # Nothing left to restore (the object is already as it was): the entry is done.
        deps.stack.entries.mark_undone(entry.id, actor)
    finished = deps.stack.entries.get(entry.id)
    if finished is None or finished.state != UNDONE:
        raise errors.Conflict(f"{entry.id} was not marked undone", subject=entry.id)
    if secrets.is_secret(execution.before_image):
        deps.executor.forget_secret(execution.id, execution.namespace)
    return applied


def _write_under_lock(
    deps: Deps,
    proposal: Proposal,
    ref: ObjectRef,
    plan_for: Planner,
    record: WriteRecord,
    actor: str,
) -> bool:
    """Lock, re-read, re-plan, check, dry-run, write-ahead, write, record: False when the
    object already looks as planned (nothing written)."""
    with deps.executor.locked(ref, actor=actor) as held:
        while True:
            current = held.read()
            plan = plan_for(current)
            held.check(plan)
            _check_still_approved(deps, proposal, plan, current)
            if not plan.changes_anything:
                return False
            try:
                sent = held.apply(plan, record=record)
            except Replan:
                continue  # the object moved between the read and the write: once more
            with held.recording(sent) as applied:
                # The undo stack follows the write in its transaction: pushed (an undo's write
                # takes its entry off instead), then the audit row that names the entry.
                undo_id = deps.stack.entries.follow(
                    applied.execution, reversible=record.needs_inverse
                )
                applied.audit(undo_entry=undo_id)
                mark_executed(
                    deps,
                    proposal.id,
                    execution_id=sent.execution_id,
                    undo_id=undo_id,
                    verdict="applied",
                    actor=actor,
                )
            return True


def _check_still_approved(
    deps: Deps, proposal: Proposal, plan: WritePlan, current: dict[str, Any] | None
) -> None:
    """Under the lock, on the object as it is now: the same change, and a policy that asks no
    more than it did when the humans approved."""
    target = proposal.target
    digest = plan_digest(
        action=proposal.action,
        target=str(ObjectRef(target.kind, target.name, target.namespace)),
        params=proposal.params,
        diff=plan.diff,
        seen=plan.before,
    )
    if proposal.undo_entry is not None:
        check_undoable(deps, proposal.undo_entry)
    facts = proposal.facts.model_copy(update={"labels": labels_of(current)})
    decision = decide_now(deps, facts.policy_facts(), deps.clock.now())
    if not proposal.decision.requires_same(decision):
        raise PlanMoved(
            f"the policy now decides differently ({decision.reason})", plan=plan, current=current
        )
    if digest != proposal.plan.digest:
        raise PlanMoved(
            "the object changed since the plan was approved", plan=plan, current=current
        )


def _supersede(deps: Deps, proposal: Proposal, moved: PlanMoved, actor: str) -> Superseded:
    old = move(
        deps,
        proposal.id,
        S.SUPERSEDED,
        actor=actor,
        message=f"nothing was written: {moved.message}",
        executor=None,
    )
    try:
        if proposal.undo_entry is not None:
            new = propose_undo(
                deps,
                UndoRequest(
                    entry_id=proposal.undo_entry,
                    force=proposal.force,
                    incident_id=proposal.incident_id,
                ),
                requester=proposal.requester,
                supersedes=old,
            )
        else:
            new = propose(
                deps,
                action=proposal.action,
                kind=proposal.target.kind,
                name=proposal.target.name,
                namespace=proposal.target.namespace,
                params=proposal.params,
                requester=proposal.requester,
                incident_id=proposal.incident_id,
                supersedes=old,
                fixes=proposal.fixes,  # the replacement fixes what its original did
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
    old = link(deps, old.id, superseded_by=new.id)
    return Superseded(
        f"nothing was written: {moved.message}; proposal {new.id} replaces it",
        old=old,
        new=new,
    )
