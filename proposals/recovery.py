"""Finishing what a crash or a timeout left behind, and expiring what nobody answered."""

from __future__ import annotations

from datetime import datetime

from proposals.core import ServiceCore
from proposals.errors import (
    NotExecutable,
    ProposalError,
    ProposalTampered,
)
from proposals.killswitch import KillSwitch
from proposals.model import (
    Proposal,
    ProposalState,
)
from store.locks import holder_alive
from tools.actions import WritePlan
from tools.executor import AppliedWrite, Resolution
from tools.objects import ObjectRef

S = ProposalState


class RecoveryUseCases(ServiceCore):
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
        by = f"{proposal.expires_at:%Y-%m-%d %H:%M} UTC"
        approvals = len(proposal.approvals())
        # Someone may have answered: a two-person rule met halfway did not go unanswered.
        got = f"{approvals} of {proposal.decision.min_approvals} approvals"
        try:
            return self._move(
                proposal.id,
                S.EXPIRED,
                actor="stratus-timeout",
                allowed_from={S.AWAITING_APPROVAL},
                message=f"{got} by {by}" if approvals else f"nobody answered by {by}",
                reason=f"expired with {got}" if approvals else "nobody answered in time",
            )
        except NotExecutable:
            return None  # answered or expired by someone else meanwhile
        except ProposalTampered:
            # Left as found, for `stratus audit verify` to name; nothing can execute it.
            return None

    # ------------------------------------------------------------------ recovery

    def reconcile(self, *, actor: str = "stratus-reconciler") -> list[str]:
        """Finish what a crash left behind: pending writes (by reading the object) and
        proposals whose executing process is gone. Live processes are left alone."""
        lines = [
            str(resolution)
            for resolution in self.executor.reconcile(
                actor, on_resolved=self._resolved, creates_held=self._creates_held()
            )
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
            except ProposalTampered:
                continue  # left as found; `stratus audit verify` names it
            lines.append(f"{proposal.id}: interrupted before the write; nothing was written")
        self.expire()
        return lines

    def settle_earlier_writes(self, ref: ObjectRef) -> None:
        """Before a write to ``ref`` starts: record what earlier writes to it did, if the
        object already says (a long-running bot has no next command to recover for it)."""
        self.executor.reconcile(
            on_resolved=self._resolved, ref=ref, creates_held=self._creates_held()
        )

    def _creates_held(self) -> str:
        """Why recovery must not complete a held create now ('' when it may): its fence is
        the approved create itself, a change like any, and the kill switch holds changes."""
        state = KillSwitch(self.store).state()
        return "Stratus is paused; it is completed after resume" if state.paused else ""

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


def _no_plan() -> WritePlan:
    return WritePlan("replace", None, None, "")
