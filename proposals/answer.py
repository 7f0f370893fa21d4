"""Answering a proposal: approve once, Always allow, or reject — who may answer is decided by
``policies``, the vote is bound to the plan's digest and stored by compare-and-set with its
event and audit row (and, for "Always allow", its grant) in one transaction."""

from __future__ import annotations

from datetime import datetime

from policies import impersonation
from policies.approvals import ApprovalRequest
from policies.approvals import refusal as approval_refusal
from proposals import seals
from proposals.core import Deps, event, revoked, save
from proposals.errors import AnswerRefused, StaleProposal
from proposals.events import EventType
from proposals.model import Choice, Proposal, ProposalState, Vote, plan_refusal, plan_vote
from proposals.recover import expire_one
from store.errors import Remedy
from tools import crashpoints

S = ProposalState
_CAS_ATTEMPTS = 8


def answer(
    deps: Deps,
    proposal_id: str,
    *,
    user: str,
    choice: Choice,
    groups: tuple[str, ...] = (),
    reason: str = "",
    grant_lifetime_seconds: int | None = None,
    plan: tuple[str, ...] = (),
    with_plan: str = "",
) -> Proposal:
    """Approve once, Always allow, Approve plan (``plan``: the digests of the later steps
    the vote approves too) or reject. A vote that may not count changes nothing and raises
    ``AnswerRefused`` saying why. ``with_plan``: the vote is cast by the plan approval on that
    proposal (``approve_with_plan``), not by a click."""
    for _ in range(_CAS_ATTEMPTS):
        # A forged proposal is refused before anyone's vote is added to it.
        proposal = deps.repo.check(deps.repo.get(proposal_id))
        now = deps.clock.now()
        _check_answerable(deps, proposal, user=user, choice=choice, groups=groups, now=now)
        if choice == "plan":
            _check_plan(proposal, plan)
        vote = seals.signed_vote(
            proposal.id,
            Vote(
                user=user,
                choice=choice,
                digest=proposal.plan.digest,
                at=now,
                reason=reason,
                groups=list(groups),
                plan=list(plan) if choice == "plan" else [],
                with_plan=with_plan,
            ),
        )
        voted = proposal.model_copy(update={"votes": [*proposal.votes, vote]})
        if choice == "reject":
            target = S.REJECTED
            message = f"rejected by {user}: {reason or 'no reason given'}"
        else:
            approvals = voted.approvals()
            needed = proposal.decision.min_approvals
            target = S.APPROVED if len(approvals) >= needed else S.AWAITING_APPROVAL
            message = (
                f"approved by {', '.join(approvals)}"
                if target == S.APPROVED
                else f"{len(approvals)} of {needed} approvals ({', '.join(approvals)})"
            )
            if with_plan:
                message = f"approved with the plan by {user} (on {with_plan})"
            elif choice == "plan":
                message = f"plan approved by {user} ({len(plan)} later step(s) bound)"
        try:
            with deps.store.immediate():
                saved = save(
                    deps,
                    voted,
                    target,
                    actor=user,
                    message=message,
                    reason=reason if choice == "reject" else "",
                    vote=vote,
                )
                if choice == "always":
                    grant = deps.grants.create(
                        proposal.facts.policy_facts(),
                        proposal.decision.policy_decision(),
                        created_by=user,
                        now=now,
                        lifetime_seconds=grant_lifetime_seconds,
                        creator_groups=groups,
                    )
                    event(
                        deps,
                        saved,
                        EventType.VOTED,
                        saved.state.value,
                        None,
                        user,
                        message=f"{user} created grant {grant.id}",
                        data={"grant": grant.id},
                    )
        except StaleProposal:
            continue  # someone voted at the same moment: look again
        crashpoints.reached("answered")
        return saved
    raise StaleProposal(f"proposal {proposal_id} kept changing; try again")


def approve_with_plan(deps: Deps, proposal_id: str, *, plan_proposal_id: str) -> Proposal:
    """Approve a later step of an attempt with the "Approve plan" vote cast on its first step
    (``plan_proposal_id``): only if that vote bound this step's digest as it is now, the
    policy lets a plan approval stand for it today, and its author may approve it today. The
    vote is stored in their name, saying which plan vote cast it. Whether the attempt that
    plan belongs to is still running is the incident's to judge (``incidents.plans``)."""
    proposal = deps.repo.check(deps.repo.get(proposal_id))
    first = deps.repo.check(deps.repo.get(plan_proposal_id))
    vote = plan_vote(first)
    why = plan_refusal(proposal, first, vote)
    if why is not None or vote is None:
        raise AnswerRefused(why or "no plan vote", subject=proposal.id)
    lost = refusal(deps, proposal, user=vote.user, groups=tuple(vote.groups), now=deps.clock.now())
    if lost:
        raise AnswerRefused(
            f"{vote.user}, who approved the plan, may not approve {proposal.id} today: {lost}",
            subject=proposal.id,
        )
    return answer(
        deps,
        proposal.id,
        user=vote.user,
        choice="approve",
        groups=tuple(vote.groups),
        reason=f"approved with the plan on {first.id}",
        with_plan=first.id,
    )


def _check_plan(proposal: Proposal, plan: tuple[str, ...]) -> None:
    if not plan:
        raise AnswerRefused(
            f"no later step of {proposal.id}'s plan can be approved with it; approve once",
            subject=proposal.id,
            remedy=Remedy.FIX_INPUT,
        )
    if not proposal.decision.approve_plan or proposal.decision.min_approvals > 1:
        raise AnswerRefused(
            f"'Approve plan' is not available here: {proposal.decision.reason}",
            subject=proposal.id,
        )


def _check_answerable(
    deps: Deps,
    proposal: Proposal,
    *,
    user: str,
    choice: Choice,
    groups: tuple[str, ...],
    now: datetime,
) -> None:
    if choice not in ("approve", "always", "reject", "plan"):
        raise AnswerRefused(f"unknown answer {choice!r}", remedy=Remedy.FIX_INPUT)
    if proposal.state != S.AWAITING_APPROVAL:
        raise AnswerRefused(
            f"proposal {proposal.id} is already {proposal.state.value.replace('_', ' ')}"
            + (f" ({proposal.reason})" if proposal.reason else ""),
            subject=proposal.id,
            remedy=Remedy.NONE,
        )
    if now >= proposal.expires_at:
        expire_one(deps, proposal, now)
        raise AnswerRefused(
            f"proposal {proposal.id} expired at {proposal.expires_at:%Y-%m-%d %H:%M} UTC",
            subject=proposal.id,
            remedy=Remedy.PROPOSE_AGAIN,
        )
    if choice != "reject":
        # Below every surface: a click, ``stratus proposals approve``, a plan approval.
        gone = revoked(deps, proposal)
        if gone:
            raise AnswerRefused(
                f"proposal {proposal.id} is not approved: {gone}",
                subject=proposal.id,
                remedy=Remedy.NONE,
            )
    why_not = refusal(deps, proposal, user=user, groups=groups, now=now, choice=choice)
    if why_not:
        raise AnswerRefused(why_not, subject=proposal.id)
    if choice != "reject":
        unmapped = impersonation.approver_refusal(
            deps.impersonation, user=user, groups=groups, subject=proposal.id
        )
        if unmapped is not None:
            raise unmapped
    if choice == "always" and proposal.decision.min_approvals > 1:
        # One person's grant would let later changes through with fewer approvals than
        # the rule requires.
        raise AnswerRefused(
            "'Always allow' is not available where a rule needs "
            f"{proposal.decision.min_approvals} approvals; approve once instead",
            subject=proposal.id,
        )
    if choice == "always" and not proposal.decision.remember:
        raise AnswerRefused(
            f"'Always allow' is not available here: {proposal.decision.reason}",
            subject=proposal.id,
        )
    if choice != "reject" and user in proposal.approvals():
        raise AnswerRefused(
            f"{user} already approved proposal {proposal.id}; it needs "
            f"{proposal.decision.min_approvals} different approvers",
            subject=proposal.id,
        )


def refusal(
    deps: Deps,
    proposal: Proposal,
    *,
    user: str,
    groups: tuple[str, ...],
    now: datetime,
    choice: str = "approve",
) -> str | None:
    """Why ``user`` (in ``groups``) may not answer ``proposal`` with ``choice`` — not an
    approver, their own request (approving it; withdrawing it is theirs), already voted —
    or None. A pure check: surfaces ask it before showing
    a refusal, and ``answer`` asks it again."""
    request = ApprovalRequest(
        proposal_id=proposal.id,
        facts=proposal.facts.policy_facts(),
        decision=proposal.decision.policy_decision(),
        digest=proposal.plan.digest,
        created_at=proposal.created_at,
    )
    return approval_refusal(request, user, groups, now, choice=choice)
