"""Who may undo a write, cancel an incident, revoke a grant or pause Stratus (an admin) — the
authorization rules beside
``approvals.refusal`` (who may answer one request), written once so that every surface (the
Undo button, ``/stratus undo``, ``/stratus cancel``, the CLI) asks the same question and gets
the same answer.

The rules are pure: the caller gathers the facts (who is asking, the user groups they belong
to among those named, where they ask from, what the incident is waiting on) and gets back why
not, or None. Undoing a write needs whoever could have approved it: the approvers of its
decision when a human was asked, the admins (the policy's default approvers) when a rule or a
grant allowed it. Cancelling an incident withdraws what it waits on, so it is an answer like
Reject: the canceller must be allowed to reject every request the incident is waiting on, and
must ask from the incident's own channel — unless they are an admin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from policies.approvals import ApprovalRequest, is_person, not_a_person, refusal
from policies.approvers import ApproverLists, satisfies
from policies.evaluate import CompiledPolicy, PolicyDecision


@dataclass(frozen=True, kw_only=True)
class Asker:
    """Who asks: a user id and the user groups they belong to among those the rules name."""

    user: str
    groups: tuple[str, ...] = ()

    def named_in(self, names: Sequence[str]) -> bool:
        return "*" in names or self.user in names or bool(set(self.groups) & set(names))


@dataclass(frozen=True, kw_only=True)
class CancelFacts:
    """What cancelling an incident would withdraw, and where the incident lives."""

    incident_id: str
    requester: str
    # The channel of the incident's thread; None when it has none (started from a terminal).
    channel: str | None
    waiting: tuple[ApprovalRequest, ...] = ()


def undo_approvers(original: PolicyDecision | None, admins: Sequence[str]) -> ApproverLists:
    """Who may undo a write made under ``original``: the approvers a human was asked from
    (every list of the conjunction at once), or the admins when nobody was asked (an allow
    rule, a grant, or no decision on record)."""
    if original is not None and original.outcome == "ask" and original.approvers:
        return original.approvers
    return (tuple(admins),)


def undo_refusal(
    asker: Asker, *, original: PolicyDecision | None, admins: Sequence[str]
) -> str | None:
    """Why ``asker`` may not undo a write made under ``original``, or None if they may."""
    if not is_person(asker.user):
        return not_a_person(asker.user, "undo a change")
    if satisfies(undo_approvers(original, admins), asker.user, asker.groups):
        return None
    why = original.reason if original is not None else "no decision on record"
    return f"you may not undo this change: only its approvers may ({why})"


def force_undo_refusal(
    asker: Asker, *, original: PolicyDecision | None, admins: Sequence[str]
) -> str | None:
    """Why ``asker`` may not be offered Force for an undo that meets a later change, or None.
    Forcing only *proposes* an undo that overwrites that change — the proposal is decided by
    policy like any write — so whoever may undo the write may ask for it forced; nobody else
    is shown the button."""
    if undo_refusal(asker, original=original, admins=admins) is None:
        return None
    if not is_person(asker.user):
        return not_a_person(asker.user, "force an undo")
    why = original.reason if original is not None else "no decision on record"
    return f"you may not force this undo: only those who may undo the change may ({why})"


def admins(policy: CompiledPolicy) -> tuple[str, ...]:
    """Who the admins are: the policy's default approvers (a floor for every approval, so
    whoever may approve anything is named there). One definition for every surface."""
    return tuple(policy.policy.defaults.approvers)


def is_admin(asker: Asker, admins: Sequence[str]) -> bool:
    return is_person(asker.user) and asker.named_in(admins)


def revoke_refusal(asker: Asker, *, created_by: str, admins: Sequence[str]) -> str | None:
    """Why ``asker`` may not revoke a grant ``created_by`` made, or None: a grant is revoked by
    whoever created it, or by an admin — from Slack or from a terminal alike."""
    if not is_person(asker.user):
        return not_a_person(asker.user, "revoke a grant")
    if asker.user == created_by or is_admin(asker, admins):
        return None
    return f"only the grant's creator ({created_by}) or an admin may revoke it"


def may_revoke(asker: Asker, *, created_by: str, admins: Sequence[str]) -> bool:
    return revoke_refusal(asker, created_by=created_by, admins=admins) is None


def pause_refusal(asker: Asker, *, admins: Sequence[str]) -> str | None:
    """Why ``asker`` may not pause or resume Stratus (the kill switch), or None: admins only,
    since pausing stops every write that would run without a human, for everyone."""
    if not is_person(asker.user):
        return not_a_person(asker.user, "pause or resume Stratus")
    if is_admin(asker, admins):
        return None
    return "only Stratus admins (the policy's default approvers) may pause or resume Stratus"


def cancel_refusal(
    asker: Asker,
    facts: CancelFacts,
    *,
    admins: Sequence[str],
    asked_from: str | None,
    now: datetime,
) -> str | None:
    """Why ``asker`` may not cancel the incident, or None if they may. ``asked_from`` is the
    channel the request came from (None: not from a channel, a terminal)."""
    if not is_person(asker.user):
        return not_a_person(asker.user, "cancel an incident")
    if is_admin(asker, admins):
        return None
    if asked_from is not None and asked_from != facts.channel:
        return f"{facts.incident_id} can be cancelled only from its own thread, or by an admin"
    for request in facts.waiting:
        if now >= request.expires_at:
            continue  # nobody can answer it any more; it is withdrawn as expired anyway
        why = refusal(request, asker.user, asker.groups, now, choice="reject")
        if why is not None:
            return f"cancelling {facts.incident_id} would reject {request.proposal_id}: {why}"
    if not facts.waiting and asker.user != facts.requester:
        return (
            f"{facts.incident_id} is waiting on nobody's answer; only whoever started it "
            "or an admin may cancel it"
        )
    return None
