"""What surfaces read: one proposal, the open ones, an incident's, the recent ones, the undo
stack. Every query checks what it returns (``repo.shown``): a proposal edited outside Stratus
comes back with ``tampered`` set, and surfaces show it as such."""

from __future__ import annotations

from proposals.core import Deps
from proposals.model import Proposal, ProposalState
from proposals.recover import expire
from undo.entries import UndoEntry

S = ProposalState


def get(deps: Deps, proposal_id: str) -> Proposal:
    return deps.repo.shown_one(proposal_id)


def pending(deps: Deps) -> list[Proposal]:
    expire(deps)
    return deps.repo.shown(
        deps.repo.rows(states=frozenset({S.AWAITING_APPROVAL, S.APPROVED}), limit=1000)
    )


def by_incident(deps: Deps, incident_id: str) -> list[Proposal]:
    return deps.repo.shown(deps.repo.rows(incident_id=incident_id, limit=1000))


def recent(deps: Deps, *, limit: int = 50) -> list[Proposal]:
    return deps.repo.shown(deps.repo.rows(limit=limit))


def undo_entries(deps: Deps) -> list[UndoEntry]:
    return deps.stack.entries.active()
