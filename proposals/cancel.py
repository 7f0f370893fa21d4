"""Closing a proposal nobody executed: cancelled by its requester or an approver, or withdrawn
by the incident workflow when its incident ends. Neither writes to the cluster (a revoked MCP
client's proposals are withdrawn by ``recover.withdraw_revoked``)."""

from __future__ import annotations

from policies.approvers import satisfies
from proposals.core import Deps, move
from proposals.errors import AnswerRefused
from proposals.model import Proposal, ProposalState

S = ProposalState


def cancel(deps: Deps, proposal_id: str, *, actor: str, reason: str = "") -> Proposal:
    """Withdraw a proposal nobody executed yet (the requester or an approver may)."""
    proposal = deps.repo.get(proposal_id)
    if actor != proposal.requester and not satisfies(proposal.decision.approver_lists, actor, ()):
        raise AnswerRefused(
            f"only the requester ({proposal.requester}) or an approver may cancel "
            f"proposal {proposal.id}",
            subject=proposal.id,
        )
    return move(
        deps,
        proposal.id,
        S.CANCELLED,
        actor=actor,
        allowed_from={S.AWAITING_APPROVAL, S.APPROVED},
        message=f"cancelled by {actor}: {reason or 'no reason given'}",
        reason=reason,
    )


def withdraw(
    deps: Deps, proposal_id: str, *, incident_id: str, actor: str, reason: str
) -> Proposal:
    """Withdraw an open proposal of an incident that ended, whoever requested it: nothing of
    a cancelled incident stays open. The authorization is the incident's — its cancel was
    authorized before the incident workflow got here — so neither the requester nor an
    approver is asked; withdrawing writes nothing. ``actor`` is who ended the incident,
    ``reason`` says how; both land in the event and the audit row. Refused for a
    proposal of another incident (or of none)."""
    proposal = deps.repo.get(proposal_id)
    if not proposal.incident_id or proposal.incident_id != incident_id:
        raise AnswerRefused(
            f"proposal {proposal.id} belongs to "
            + (f"incident {proposal.incident_id}" if proposal.incident_id else "no incident")
            + f", not to {incident_id}; it is not withdrawn",
            subject=proposal.id,
        )
    return move(
        deps,
        proposal.id,
        S.CANCELLED,
        actor=actor,
        allowed_from={S.AWAITING_APPROVAL, S.APPROVED},
        message=f"withdrawn: {reason}",
        reason=reason,
    )
