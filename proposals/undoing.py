"""Undo as a proposal of its own: proposing it (one entry, or the most recent write),
checking under the lock that it can still happen, and dropping an entry explicitly. Executing
an undo proposal is ``proposals.execute``, like any other write."""

from __future__ import annotations

import dataclasses

from policies import authority, impersonation
from policies.approvers import is_person
from policies.evaluate import (
    undo_facts,
)
from proposals import risk
from proposals.core import Deps, UndoRequest, event, labels_of, open_proposal, routes_to
from proposals.errors import (
    AnswerRefused,
    NotExecutable,
)
from proposals.events import EventType
from proposals.model import (
    OPEN,
    Proposal,
    ProposalState,
)
from proposals.repository import ProposalRepository
from store.errors import Remedy, StratusError
from store.locks import holder_name
from tools import errors
from tools.actions import UNDO
from undo.conflicts import UndoConflict
from undo.entries import UndoEntry
from undo.stack import check_record, off_the_stack, plan_inverse

S = ProposalState


def propose_undo(
    deps: Deps,
    request: UndoRequest,
    *,
    requester: str,
    dry_run: bool = False,
    supersedes: Proposal | None = None,
) -> Proposal:
    """Propose undoing one earlier write. A second request for an entry that already has
    an open undo proposal gets that proposal back."""
    entry = _undo_entry(deps, request)
    deps = deps.on(entry.cluster)  # back to the cluster the write was made in
    execution = entry.execution
    ref = check_record(execution, deps.store)
    for existing in deps.repo.find(states=OPEN, undo_entry=entry.id, limit=1):
        if not dry_run and supersedes is None:
            return existing
    current = deps.executor.kube.find(ref)
    try:
        inverse = plan_inverse(
            execution, current, force=request.force, before=deps.stack.before_image(execution)
        )
    except UndoConflict as conflict:
        raise conflict.naming(deps.stack.who_changed(execution)) from None
    if inverse.changes_anything:
        previewer = impersonation.previewer(
            deps.impersonation, requester=requester, is_person=is_person(requester)
        )
        try:
            deps.executor.dry_run(inverse, writer=previewer)
        except errors.Forbidden:
            if deps.impersonation is None:
                raise  # as the approver, the cluster decides at execution (``execute``)
    puts_back = cause_put_back(deps.repo, execution.proposal_id)
    floor = undo_facts(
        original_action=execution.action,
        kind=ref.kind,
        namespace=ref.namespace,
        name=ref.name,
        requester=requester,
        labels=labels_of(current),
    )
    assessed = risk.assess(
        risk.RiskFacts(
            action=UNDO,
            floor=risk.level(floor.risk),
            kind=ref.kind,
            name=ref.name,
            before=inverse.before,
            after=inverse.after,
            routed_by=routes_to(deps, ref, inverse.before or inverse.after),
            puts_back=puts_back,
        )
    )
    # An undo that puts the diagnosed cause back is decided as high, whatever it reverses.
    facts = dataclasses.replace(floor, risk=assessed.level, puts_back=bool(puts_back))
    return open_proposal(
        deps,
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
        risk_reason=assessed.reason,
        puts_back=puts_back,
    )


def cause_put_back(repo: ProposalRepository, original_id: str | None) -> str:
    """The diagnosed cause the write being undone fixed on its own object ("" when it fixed
    none, or its proposal is unreadable): undoing it puts that cause back."""
    if not original_id:
        return ""
    try:
        return repo.get(original_id).fixes
    except StratusError:
        return ""


def undo_conflict(deps: Deps, entry_id: str) -> UndoConflict | None:
    """What stands in the way of undoing ``entry_id`` without force now (the object moved,
    was deleted or re-created since, and who did it), or None when a plain undo would do.
    Raises like ``propose_undo`` when the entry cannot be undone at all."""
    entry = deps.stack.entry(entry_id)
    deps = deps.on(entry.cluster)
    execution = entry.execution
    ref = check_record(execution, deps.store)
    current = deps.executor.kube.find(ref)
    try:
        plan_inverse(execution, current, force=False, before=deps.stack.before_image(execution))
    except UndoConflict as conflict:
        return conflict.naming(deps.stack.who_changed(execution))
    return None


def undo_target(deps: Deps, request: UndoRequest) -> UndoEntry:
    """The entry ``request`` names (``last``: the most recent write), as ``propose_undo``
    would resolve it — so a surface can check who may undo it, then propose exactly that
    entry (a write landing in between does not change what was checked)."""
    return _undo_entry(deps, request)


def _undo_entry(deps: Deps, request: UndoRequest) -> UndoEntry:
    if request.last:
        newest = deps.stack.entries.newest(incident_id=request.incident_id)
        if newest is None:
            raise errors.NotFound("nothing to undo: Stratus has made no reversible write")
        if newest.state != "active":
            earlier = deps.stack.entries.active(incident_id=request.incident_id)
            raise errors.Invalid(
                f"the last write ({newest.execution.intent}, {newest.id}) "
                f"{off_the_stack(newest)}; name an earlier entry to undo it",
                subject=newest.id,
                details={"entry": newest.id, "next": earlier[0].id if earlier else None},
            )
        return newest
    if not request.entry_id:
        raise errors.Invalid("name an undo entry, or ask for the last one")
    return deps.stack.entry(request.entry_id)


def check_undoable(deps: Deps, entry_id: str) -> None:
    """Under the object's lock, before the inverse is written: the entry is still on the
    stack and the write it reverses can still become undone."""
    entry = deps.stack.entry(entry_id)  # raises when undone, dropped or irreversible
    original = entry.execution.proposal_id
    if original and not deps.repo.get(original).can_move(S.UNDONE):
        state = deps.repo.get(original).state.value.replace("_", " ")
        raise NotExecutable(
            f"the write {entry_id} reverses belongs to proposal {original}, which is "
            f"{state}; it cannot be undone",
            subject=entry_id,
        )


def drop_undo_entry(
    deps: Deps, entry_id: str, *, actor: str, reason: str, groups: tuple[str, ...] = ()
) -> UndoEntry:
    """Take an entry off the undo stack without undoing it — for an object that was
    deleted and re-created since, say. Audited, and an event on its proposal. Dropping
    gives up the way back without a policy decision of its own, so it needs whoever may
    undo the write (``policies.authority``): an approver of its decision, or an admin."""
    entry = deps.stack.entry(entry_id)
    why = undo_refusal(deps, entry, actor=actor, groups=groups)
    if why is not None:
        # Nothing to approve: a drop is not a proposal, so no "ask an approver" remedy.
        raise AnswerRefused(
            f"{entry_id}: {why}; nothing was dropped", subject=entry_id, remedy=Remedy.NONE
        )
    open_undo = deps.repo.find(states=OPEN, undo_entry=entry_id, limit=1)
    if open_undo:
        raise NotExecutable(
            f"{entry_id} has an open undo proposal ({open_undo[0].id}, "
            f"{open_undo[0].state.value.replace('_', ' ')})",
            subject=entry_id,
            remedy=Remedy.CANCEL_OPEN,
            details={"open": open_undo[0].id, "state": open_undo[0].state.value},
        )
    ref = check_record(entry.execution, deps.store)
    executor = deps.on(entry.cluster).executor  # the lease of the object in its own cluster
    holder = holder_name(actor)
    blocker = executor.locks.acquire(executor.lock_key(ref), holder, wait=executor.lock_wait)
    if blocker is not None:
        raise errors.LockHeld(f"{ref} is being changed; try again", subject=str(ref))
    try:
        return _drop(deps, entry, actor, reason)
    finally:
        executor.locks.release(executor.lock_key(ref), holder)


def _drop(deps: Deps, entry: UndoEntry, actor: str, reason: str) -> UndoEntry:
    entry_id = entry.id
    with deps.store.immediate():
        if not deps.stack.entries.drop(entry_id, actor):
            raise errors.Conflict(f"{entry_id} changed while it was dropped", subject=entry_id)
        deps.audit.append(
            actor=actor,
            event="undo-dropped",
            subject=entry.execution.target,
            payload={
                "entry": entry_id,
                "execution": entry.execution.id,
                "reason": reason,
                **({"cluster": entry.cluster} if entry.cluster else {}),
            },
        )
        original = entry.execution.proposal_id
        if original:
            proposal = deps.repo.get(original)
            event(
                deps,
                proposal,
                EventType.UNDO_DROPPED,
                proposal.state.value,
                None,
                actor,
                message=f"undo entry {entry_id} dropped by {actor}: {reason}",
                data={"entry": entry_id},
            )
    dropped = deps.stack.entries.get(entry_id)
    assert dropped is not None
    return dropped


def undo_refusal(
    deps: Deps, entry: UndoEntry, *, actor: str, groups: tuple[str, ...] = ()
) -> str | None:
    """Why ``actor`` may not undo the write ``entry`` records (``policies.authority``: an
    approver of its decision, or an admin when nobody was asked), or None. Surfaces ask
    this before proposing an undo for a person; the workflow undoing its own attempt
    (TNR) is not a person's request and is decided by policy alone."""
    original = None
    if entry.execution.proposal_id:
        try:
            original = deps.repo.get(entry.execution.proposal_id).decision.policy_decision()
        except StratusError:
            original = None  # unreadable or gone: only the admins may
    admins = authority.admins(deps.policy())
    asker = authority.Asker(user=actor, groups=groups)
    return authority.undo_refusal(asker, original=original, admins=admins)
