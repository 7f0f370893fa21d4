"""Who may answer an approval request: the pure authorization check.

"Approve once" approves exactly one proposal — its id *and* its planned diff (a digest); if the
plan changes, earlier votes stop counting. A vote from someone who may not approve changes
nothing. A request that nobody answers in time is *expired*, never recorded as a human denial.
Storing requests and votes, quorum counting and the exactly-once state moves belong to the
proposal service (``proposals/``); this module only decides whether one person may answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from policies.approvers import MACHINE_ACTORS, is_machine, is_person, satisfies
from policies.evaluate import PolicyDecision, ProposalFacts

__all__ = [
    "MACHINE_ACTORS",
    "ApprovalRequest",
    "is_approver",
    "is_machine",
    "is_person",
    "refusal",
]


@dataclass(frozen=True, kw_only=True)
class ApprovalRequest:
    proposal_id: str
    facts: ProposalFacts
    decision: PolicyDecision
    digest: str
    created_at: datetime

    @property
    def expires_at(self) -> datetime:
        return self.created_at + timedelta(seconds=self.decision.approval_timeout_seconds)


def is_approver(decision: PolicyDecision, user: str, groups: tuple[str, ...]) -> bool:
    """Whether ``user`` (in ``groups``) satisfies every approver list of ``decision``: every
    rule that contributed to it names them, directly or through a group."""
    return is_person(user) and satisfies(decision.approvers, user, groups)


def not_a_person(user: str, what: str) -> str:
    """Why an identity that is not a person's may not do ``what``."""
    if is_machine(user):
        return f"only a human may {what}"
    return f"only a person may {what}; {user[:40]!r} is not a person's identity"


def refusal(
    request: ApprovalRequest,
    user: str,
    groups: tuple[str, ...],
    now: datetime,
    *,
    choice: str = "approve",
) -> str | None:
    """Why this user may not answer this request now with ``choice`` (``approve``, ``always``
    or ``reject``), or None if they may. Whoever asked for a change may always withdraw it
    (reject it) — a self-approval ban is about approving, never about taking a request back."""
    decision = request.decision
    if decision.outcome != "ask":
        return f"this proposal is not waiting for a human ({decision.reason})"
    if now >= request.expires_at:
        return f"this request expired at {request.expires_at:%H:%M} UTC; ask for it again"
    what = "reject a change" if choice == "reject" else "answer an approval request"
    if not is_person(user):
        return not_a_person(user, what)
    if choice == "reject":
        if user == request.facts.requester or is_approver(decision, user, groups):
            return None
        return (
            "only its approvers, or whoever asked for it, may reject this change "
            f"({decision.reason})"
        )
    if not is_approver(decision, user, groups):
        return f"you are not an approver for this change ({decision.reason})"
    if not decision.self_approval and user == request.facts.requester:
        return f"you asked for this change; someone else must approve it ({decision.reason})"
    return None
