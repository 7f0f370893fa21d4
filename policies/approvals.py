"""Human approval of one proposal: who may vote, quorum, expiry, and exactly-once transitions.

"Approve once" approves exactly one proposal — its id *and* its planned diff (a digest); if the
plan changes, earlier votes stop counting. "Always allow" also creates a grant, and only where
the rule allows remembering. A vote from someone who may not approve changes nothing. A
request that nobody answers in time is *expired*, never recorded as a human denial. The state
moves by compare-and-set in SQLite, so two approvers, two clicks or a retry approve once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from policies.evaluate import PolicyDecision, ProposalFacts
from policies.grants import GrantBook
from store.db import Store

Choice = Literal["approve", "always", "reject"]
AWAITING, APPROVED, REJECTED, EXPIRED = "awaiting_approval", "approved", "rejected", "expired"
MACHINE_ACTORS = ("agent:", "stratus")


def plan_digest(action: str, target: str, diff: str) -> str:
    return hashlib.sha256(json.dumps([action, target, diff]).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class ApprovalRequest:
    proposal_id: str
    facts: ProposalFacts
    decision: PolicyDecision
    digest: str
    created_at: datetime

    @property
    def expires_at(self) -> datetime:
        return self.created_at + timedelta(seconds=self.decision.approval_timeout_seconds)


@dataclass(frozen=True)
class VoteResult:
    accepted: bool
    message: str
    state: str
    approvals: tuple[str, ...] = ()
    decided_now: bool = False  # True for the one vote that moved the proposal to its end state


def refusal(
    request: ApprovalRequest, user: str, groups: tuple[str, ...], now: datetime
) -> str | None:
    """Why this user may not answer this request now, or None if they may."""
    decision = request.decision
    if decision.outcome != "ask":
        return f"this proposal is not waiting for a human ({decision.reason})"
    if now >= request.expires_at:
        return f"this request expired at {request.expires_at:%H:%M} UTC; ask for it again"
    if not user or user.startswith(MACHINE_ACTORS):
        return "only a human may answer an approval request"
    allowed = set(decision.approvers)
    if "*" not in allowed and user not in allowed and not allowed.intersection(groups):
        return f"you are not an approver for this change ({decision.reason})"
    if not decision.self_approval and user == request.facts.requester:
        return f"you asked for this change; someone else must approve it ({decision.reason})"
    return None


class ApprovalDesk:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.grants = GrantBook(store)

    def open(self, request: ApprovalRequest) -> None:
        now = request.created_at.isoformat()
        with self.store.immediate() as db:
            db.table("proposals").insert(
                {
                    "id": request.proposal_id,
                    "incident_id": None,
                    "action": request.facts.action,
                    "target": f"{request.facts.namespace}/{request.facts.resource}",
                    "state": AWAITING,
                    "plan": json.dumps(
                        {
                            "digest": request.digest,
                            "expires_at": request.expires_at.isoformat(),
                            "decision": request.decision.to_dict(),
                        }
                    ),
                    "created_at": now,
                    "updated_at": now,
                }
            )

    def _digest(self, proposal_id: str) -> tuple[str, str]:
        rows = self.store.query("SELECT state, plan FROM proposals WHERE id = ?", [proposal_id])
        if not rows:
            raise KeyError(proposal_id)
        return rows[0]["state"], json.loads(rows[0]["plan"])["digest"]

    def approvals(self, proposal_id: str, digest: str) -> tuple[str, ...]:
        rows = self.store.query(
            "SELECT DISTINCT actor FROM decisions WHERE proposal_id = ? AND outcome IN "
            "('approve', 'always') AND reason = ? ORDER BY id",
            [proposal_id, digest],
        )
        return tuple(r["actor"] for r in rows)

    def vote(
        self,
        request: ApprovalRequest,
        *,
        user: str,
        groups: tuple[str, ...] = (),
        choice: Choice,
        now: datetime,
        reason: str = "",
        grant_lifetime_seconds: int | None = None,
    ) -> VoteResult:
        state, digest = self._digest(request.proposal_id)
        if state != AWAITING:
            return VoteResult(False, f"this proposal is already {state.replace('_', ' ')}", state)
        if choice not in ("approve", "always", "reject"):
            return VoteResult(False, f"unknown answer {choice!r}", state)
        if digest != request.digest:
            return VoteResult(
                False, "the planned change moved since this was shown; look at the new diff", state
            )
        why_not = refusal(request, user, groups, now)
        if why_not:
            return VoteResult(False, why_not, state)
        if choice == "always" and not request.decision.remember:
            return VoteResult(
                False, f"'Always allow' is not available here: {request.decision.reason}", state
            )
        with self.store.immediate() as db:
            db.table("decisions").insert(
                {
                    "proposal_id": request.proposal_id,
                    "outcome": choice,
                    "source": "human",
                    "actor": user,
                    "reason": digest if choice != "reject" else reason or "rejected",
                    "created_at": now.isoformat(),
                }
            )
        if choice == "reject":
            moved = self._move(request.proposal_id, REJECTED, now)
            return VoteResult(
                True,
                f"rejected by {user}: {reason or 'no reason given'}",
                REJECTED,
                decided_now=moved,
            )
        if choice == "always":
            self.grants.create(
                request.facts,
                request.decision,
                created_by=user,
                now=now,
                lifetime_seconds=grant_lifetime_seconds,
            )
        approvals = self.approvals(request.proposal_id, digest)
        needed = request.decision.min_approvals
        if len(approvals) < needed:
            return VoteResult(True, f"{len(approvals)} of {needed} approvals", AWAITING, approvals)
        moved = self._move(request.proposal_id, APPROVED, now)
        return VoteResult(
            True, f"approved by {', '.join(approvals)}", APPROVED, approvals, decided_now=moved
        )

    def _move(self, proposal_id: str, state: str, now: datetime) -> bool:
        """Compare-and-set from awaiting: True only for the caller that made the move."""
        with self.store.immediate() as db:
            cursor = db.execute(
                "UPDATE proposals SET state = ?, updated_at = ? WHERE id = ? AND state = ?",
                [state, now.isoformat(), proposal_id, AWAITING],
            )
            return bool(cursor.rowcount)

    def expire(self, now: datetime) -> list[str]:
        """Requests nobody answered in time become *expired* (never a human denial)."""
        expired = []
        for row in self.store.query("SELECT id, plan FROM proposals WHERE state = ?", [AWAITING]):
            if datetime.fromisoformat(json.loads(row["plan"])["expires_at"]) <= now and self._move(
                row["id"], EXPIRED, now
            ):
                with self.store.immediate() as db:
                    db.table("decisions").insert(
                        {
                            "proposal_id": row["id"],
                            "outcome": "expired",
                            "source": "timeout",
                            "actor": None,
                            "reason": "nobody answered in time",
                            "created_at": now.isoformat(),
                        }
                    )
                expired.append(row["id"])
        return expired

    def replan(self, request: ApprovalRequest, new_digest: str, now: datetime) -> ApprovalRequest:
        """The object moved and the plan changed: earlier approvals no longer count."""
        state, _ = self._digest(request.proposal_id)
        with self.store.immediate() as db:
            plan = {
                "digest": new_digest,
                "expires_at": request.expires_at.isoformat(),
                "decision": request.decision.to_dict(),
            }
            db.execute(
                "UPDATE proposals SET state = ?, plan = ?, updated_at = ? WHERE id = ?",
                [
                    AWAITING if state in (AWAITING, APPROVED) else state,
                    json.dumps(plan),
                    now.isoformat(),
                    request.proposal_id,
                ],
            )
        return ApprovalRequest(
            request.proposal_id, request.facts, request.decision, new_digest, request.created_at
        )

    def state(self, proposal_id: str) -> str:
        return self._digest(proposal_id)[0]
