"""Finishing what a crash or a timeout left behind, and expiring what nobody answered.

An interrupted write is settled by reading its object (``Executor.judge``); the verdict, the
undo entry of a write judged applied, the proposal following it and their audit rows commit in
one transaction (``Executor.settling``).
"""

from __future__ import annotations

import logging
from datetime import datetime

from policies import clients
from proposals.core import Deps, mark_executed, move
from proposals.errors import NotExecutable, ProposalError, ProposalTampered
from proposals.killswitch import KillSwitch
from proposals.model import Proposal, ProposalState
from store.errors import StratusError
from store.locks import holder_alive
from tools.lost_writes import Resolution
from tools.objects import ObjectRef
from undo.inverse import is_reversible

S = ProposalState
log = logging.getLogger(__name__)
_RECONCILER = "stratus-reconciler"


def expire(deps: Deps) -> list[Proposal]:
    """Requests nobody answered in time become *expired* — never a human rejection."""
    now = deps.clock.now()
    expired = []
    for proposal in deps.repo.find(states=frozenset({S.AWAITING_APPROVAL}), limit=10_000):
        if now >= proposal.expires_at:
            moved = expire_one(deps, proposal, now)
            if moved is not None:
                expired.append(moved)
    return expired


def expire_one(deps: Deps, proposal: Proposal, now: datetime) -> Proposal | None:
    by = f"{proposal.expires_at:%Y-%m-%d %H:%M} UTC"
    approvals = len(proposal.approvals())
    # Someone may have answered: a two-person rule met halfway did not go unanswered.
    got = f"{approvals} of {proposal.decision.min_approvals} approvals"
    try:
        return move(
            deps,
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


def reconcile(deps: Deps, *, actor: str = _RECONCILER) -> list[str]:
    """Finish what a crash left behind: pending writes (by reading the object) and
    proposals whose executing process is gone. Live processes are left alone. Then withdraw
    what revoked MCP clients left open (``withdraw_revoked``)."""
    lines = [str(resolution) for resolution in settle_writes(deps, actor=actor)]
    for cluster in deps.executors:  # each cluster's writes are judged by reading that cluster
        if not deps.executor.owns(cluster):
            lines += [str(r) for r in settle_writes(deps.on(cluster), actor=actor)]
    for proposal in deps.repo.find(states=frozenset({S.EXECUTING}), limit=10_000):
        if proposal.executor and not _gone(deps, proposal.executor):
            continue
        executions = deps.executions.by_proposal(proposal.id)
        if any(e.state == "pending" for e in executions):
            continue  # its write is unresolved yet: the executor's recovery decides
        applied = [e for e in executions if e.state == "applied"]
        if applied:
            continue  # recorded with its write; nothing to finish
        try:
            move(
                deps,
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
    lines += withdraw_revoked(deps, actor=actor)
    expire(deps)
    return lines


def settle_earlier_writes(deps: Deps, ref: ObjectRef) -> None:
    """Before a write to ``ref`` starts: record what earlier writes to it did, if the
    object already says (a long-running bot has no next command to recover for it)."""
    settle_writes(deps, actor=_RECONCILER, ref=ref)


def settle_writes(deps: Deps, *, actor: str, ref: ObjectRef | None = None) -> list[Resolution]:
    """Judge each write whose owner is gone (with ``ref``, only the writes to that object);
    record each verdict with its proposal following it, in one transaction."""
    resolutions: list[Resolution] = []
    for execution in deps.executor.unsettled(ref=ref):
        judged = deps.executor.judge(execution, actor=actor, creates_held=_creates_held(deps))
        if isinstance(judged, Resolution):
            resolutions.append(judged)  # cannot tell yet
            continue
        with deps.executor.settling(judged, actor=actor) as settled:
            if settled is None:
                continue  # another process recorded it first
            resolution, applied = settled
            undo_id = None
            if applied is not None:
                # As after any applied write: its undo entry, then the audit row naming it.
                undo_id = deps.stack.entries.follow(
                    applied.execution, reversible=is_reversible(applied.execution.action)
                )
                applied.audit(undo_entry=undo_id)
            _follow(deps, resolution, undo_id)
        resolutions.append(resolution)
    return resolutions


def _creates_held(deps: Deps) -> str:
    """Why recovery must not complete a held create now ('' when it may): its fence is
    the approved create itself, a change like any, and the kill switch holds changes."""
    state = KillSwitch(deps.store).state()
    return "Stratus is paused; it is completed after resume" if state.paused else ""


def _gone(deps: Deps, holder: str) -> bool:
    alive = holder_alive(holder)
    if alive is not None:
        return not alive
    return not deps.executor.locks.held_by(holder)


def _follow(deps: Deps, resolution: Resolution, undo_id: str | None) -> None:
    """Inside the recovery transaction: the proposal follows its write."""
    proposal_id = resolution.execution.proposal_id
    if not proposal_id:
        return
    try:
        if resolution.verdict == "not applied":
            move(
                deps,
                proposal_id,
                S.FAILED,
                actor=_RECONCILER,
                message="interrupted: the write never reached the object",
                reason="interrupted before the write",
            )
            return
        mark_executed(
            deps,
            proposal_id,
            execution_id=resolution.execution.id,
            undo_id=undo_id,
            verdict=resolution.verdict,
            actor=_RECONCILER,
        )
    except (NotExecutable, ProposalError) as error:
        # The write's own record, undo entry and audit row still commit; a proposal in an
        # unexpected state (an edited database, say) must not block every later command.
        deps.audit.append(
            actor=_RECONCILER,
            event="reconcile-anomaly",
            subject=proposal_id,
            payload={"execution": resolution.execution.id, "problem": error.message},
        )


UNEXECUTED = frozenset({S.AWAITING_APPROVAL, S.APPROVED})


def withdraw_revoked(deps: Deps, *, actor: str) -> list[str]:
    """Withdraw every proposal nobody executed yet of an MCP client that was revoked — removed
    from the clients file, or its token changed (``clients.revocation``) — cancelled with the
    reason, so its card says so and no click approves it. One line per proposal withdrawn.
    A clients file that does not load withdraws nothing: a broken edit must not end every
    client's proposals (none is approved meanwhile: ``core.revoked``)."""
    if deps.clients is None:
        return []
    try:
        configured = deps.clients.load()
    except StratusError as exc:
        log.warning("MCP clients file does not load; no proposal withdrawn: %s", exc.message)
        return []
    lines = []
    for proposal in deps.repo.find(states=UNEXECUTED, limit=10_000):
        why = clients.revocation(configured, proposal.requester, proposal.client_token)
        if why is None:
            continue
        try:
            move(
                deps,
                proposal.id,
                S.CANCELLED,
                actor=actor,
                allowed_from=set(UNEXECUTED),
                message=f"withdrawn: {why}",
                reason=f"withdrawn: {why}",
            )
        except (NotExecutable, ProposalTampered):
            continue  # moved meanwhile, or left as found (`stratus audit verify` names it)
        lines.append(f"{proposal.id}: withdrawn: {why}")
    return lines
