"""An outside agent's proposal adopted as an incident's attempt (docs/mcp.md).

Split from ``incidents.attempts`` (which it calls): the attempt is made here, then verified,
kept or undone there exactly like one of Stratus's own.
"""

from __future__ import annotations

from agents.model import Candidate, Step
from incidents import attempts as a
from incidents import moves
from incidents.model import Attempt, Incident, new_transaction_id
from incidents.moves import Deps
from proposals.model import Proposal


def adopt(d: Deps, incident: Incident, proposal: Proposal) -> Incident:
    """An outside agent's proposal (docs/mcp.md) as the incident's next attempt: one step,
    already proposed by the agent, with the health taken now, before it is written — so that
    once executed it is verified, kept or undone (TNR) exactly like an attempt of Stratus's
    own. ``incident``: planning, with no attempt in flight (one the proposal just opened, or
    one whose last attempt has its verdict: ``continuation.queued_turn``)."""
    candidate = Candidate(
        steps=[
            Step(
                action=proposal.action,
                kind=proposal.target.kind,
                name=proposal.target.name,
                params=proposal.params,
            )
        ],
        intent=proposal.intent,
        why=f"proposed by {proposal.requester}",
    )
    before = moves.health(d, incident).to_dict()
    attempt = Attempt(
        number=len(incident.attempts) + 1,
        candidate=candidate,
        transaction_id=new_transaction_id(),
        proposals=[proposal.id],
        health_before=before,
        started_at=d.clock.now(),
    )
    incident = moves.update(
        d,
        incident,
        attempts=[*incident.attempts, attempt],
        tried=[*incident.tried, candidate.key()],
        health_at_start=incident.health_at_start or before,
        health_now=before,
    )
    a.note_attempt(d, incident, attempt)
    return a.after_proposal(d, incident, proposal)
