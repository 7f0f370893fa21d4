"""Undo as a proposal of its own: proposing it (one entry, or the most recent write),
checking under the lock that it can still happen, and dropping an entry explicitly."""

from __future__ import annotations

from policies import authority
from policies.evaluate import (
    undo_facts,
)
from proposals.core import ServiceCore, UndoRequest, labels_of
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
from store.errors import StratusError
from store.locks import holder_name
from store.records import UndoEntry
from tools import errors
from tools.actions import UNDO
from undo.stack import check_record, off_the_stack, plan_inverse

S = ProposalState


class UndoUseCases(ServiceCore):
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
        inverse = plan_inverse(
            execution, current, force=request.force, before=self.stack.before_image(execution)
        )
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

    def undo_target(self, request: UndoRequest) -> UndoEntry:
        """The entry ``request`` names (``last``: the most recent write), as ``propose_undo``
        would resolve it — so a surface can check who may undo it, then propose exactly that
        entry (a write landing in between does not change what was checked)."""
        return self._undo_entry(request)

    def _undo_entry(self, request: UndoRequest) -> UndoEntry:
        if request.last:
            newest = self.stack.entries.newest(incident_id=request.incident_id)
            if newest is None:
                raise errors.NotFound("nothing to undo: Stratus has made no reversible write")
            if newest.state != "active":
                earlier = self.stack.entries.active(incident_id=request.incident_id)
                raise errors.Invalid(
                    f"the last write ({newest.execution.intent}, {newest.id}) "
                    f"{off_the_stack(newest)}; name an earlier entry to undo it",
                    subject=newest.id,
                    details={"entry": newest.id, "next": earlier[0].id if earlier else None},
                )
            return newest
        if not request.entry_id:
            raise errors.Invalid("name an undo entry, or ask for the last one")
        return self.stack.entry(request.entry_id)

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

    def drop_undo_entry(
        self, entry_id: str, *, actor: str, reason: str, groups: tuple[str, ...] = ()
    ) -> UndoEntry:
        """Take an entry off the undo stack without undoing it — for an object that was
        deleted and re-created since, say. Audited, and an event on its proposal. Dropping
        gives up the way back without a policy decision of its own, so it needs whoever may
        undo the write (``policies.authority``): an approver of its decision, or an admin."""
        entry = self.stack.entry(entry_id)
        why = self._undo_refusal(entry, actor=actor, groups=groups)
        if why is not None:
            raise AnswerRefused(f"{entry_id}: {why}; nothing was dropped", subject=entry_id)
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

    def _undo_refusal(self, entry: UndoEntry, *, actor: str, groups: tuple[str, ...]) -> str | None:
        original = None
        if entry.execution.proposal_id:
            try:
                original = self.repo.get(entry.execution.proposal_id).decision.policy_decision()
            except StratusError:
                original = None  # unreadable or gone: only the admins may
        admins = tuple(self.policy().policy.defaults.approvers)
        asker = authority.Asker(user=actor, groups=groups)
        return authority.undo_refusal(asker, original=original, admins=admins)
