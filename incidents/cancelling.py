"""Cancelling an incident: what a cancel does to the attempt it finds running.

A cancel waits (bounded) for a write in flight, withdraws what is still open, and then either
keeps a complete attempt (its changes stay, on the undo stack like any write), undoes a
half-done one through the attempt's own undo, or ends at once. Split from ``incidents.attempts``
(which it calls) so that each module keeps one job.
"""

from __future__ import annotations

import contextlib
import time

from incidents import attempts as a
from incidents import moves
from incidents.model import Attempt, Incident, IncidentState
from incidents.moves import Deps
from proposals.model import Proposal, ProposalState
from store.errors import StratusError

St = IncidentState
P = ProposalState


def cancel_now(d: Deps, incident: Incident) -> Incident | None:
    busy = wait_for_writes(d, incident)
    if busy is not None:
        moves.say(d, incident, f"the cancel waits for {busy.id} ({busy.intent}) to finish")
        return None  # carried out by the next advance, once the write settled
    attempt = incident.current
    if incident.state == St.UNDOING:
        return a.undo_attempt(d, incident)
    if attempt is not None and not attempt.finished_at and attempt.undo_proposals:
        pending, _ = a.waiting_proposal(d, attempt)
        if pending is not None and pending.state == P.AWAITING_APPROVAL:
            return None  # an undo waits for a human; the cancel completes after it
        # The undo was asked for already (by this cancel, or by TNR): carry it on — run
        # it, or end on its refusal — never ask again, never record the move again.
        return a.undo_attempt(d, incident)
    if attempt is not None and not attempt.finished_at:
        for proposal_id in attempt.proposals:  # never the undos: they clean up
            proposal = d.service.get(proposal_id)
            if proposal.state in (P.AWAITING_APPROVAL, P.APPROVED):
                # It may move on meanwhile; it is judged below by what it became.
                # Withdrawn as every open proposal of a cancelled incident is: by whoever
                # cancelled it, saying so (docs/workflow.md), never by Stratus's agent.
                by = incident.cancel_requested or moves.AGENT
                with contextlib.suppress(StratusError):
                    d.service.withdraw(
                        proposal.id,
                        incident_id=incident.id,
                        actor=by,
                        reason=f"incident {incident.id} was cancelled by {by}",
                    )
        executed = a.executed_steps(d, attempt)
        if executed and a.complete(d, attempt):
            return _cancel_keeping(d, incident, attempt, executed)
        if executed:
            incident = moves.with_attempt(
                d, incident, attempt.model_copy(update={"outcome": "cancelled"})
            )
            return moves.go(d, incident, St.UNDOING, "cancelled half-way: undoing the steps made")
    return moves.move(
        d,
        incident,
        St.CANCELLED,
        message=f"cancelled by {incident.cancel_requested}",
        reason=f"cancelled by {incident.cancel_requested}",
    )


def _cancel_keeping(
    d: Deps, incident: Incident, attempt: Attempt, executed: list[Proposal]
) -> Incident:
    """Every step of the attempt executed before the cancel (an approval won the race, or
    it was verifying): it is a whole action, not a half-done one. Its changes stay, on the
    undo stack like any write, and the record says which they are."""
    who = incident.cancel_requested
    undo = ", ".join(p.undo_id for p in executed if p.undo_id)
    steps = "; ".join(f"{p.intent} ({p.id})" for p in executed)
    return moves.move(
        d,
        incident,
        St.CANCELLED,
        message=f"cancelled by {who}; attempt {attempt.number} was complete and stays, not "
        f"verified: {steps}" + (f" (undo entries: {undo})" if undo else ""),
        reason=f"cancelled by {who}",
        attempts=[
            *incident.attempts[:-1],
            attempt.model_copy(
                update={
                    "outcome": "complete when cancelled; its changes stay (not verified)",
                    "finished_at": d.clock.now(),
                }
            ),
        ],
    )


def wait_for_writes(d: Deps, incident: Incident) -> Proposal | None:
    """Wait (up to ``config.cancel_wait``) until no write of the incident is in flight;
    the one still in flight after that, or None."""
    deadline = time.monotonic() + d.config.cancel_wait
    while (busy := moves.in_flight(d, incident)) is not None:
        if time.monotonic() >= deadline:
            return busy
        d.pause(d.config.poll_interval)
    return None
