"""Grants ("Always allow") in the store: scoped, expiring, attributed, revocable.

A grant covers one action on one resource in one namespace, lives no longer than the rule
that allowed it says, names who created it, and stops matching the moment it is revoked or
expires.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta

from policies.evaluate import Grant, PolicyDecision, ProposalFacts
from store.audit import AuditLog
from store.db import Store
from store.errors import Remedy, StratusError


class GrantError(StratusError):
    """A grant cannot be created or revoked; the message says why."""

    code = "grant"
    default_remedy = Remedy.FIX_INPUT


def _parse(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _checked_fields(grant: Grant) -> dict[str, str | None]:
    """The columns today's rules are checked against (migration 7)."""
    return {
        "creator_groups": json.dumps(list(grant.creator_groups)),
        "requested_by": grant.requested_by,
    }


class GrantBook:
    def __init__(self, store: Store) -> None:
        self.store = store

    def create(
        self,
        facts: ProposalFacts,
        decision: PolicyDecision,
        *,
        created_by: str,
        now: datetime,
        lifetime_seconds: int | None = None,
        creator_groups: tuple[str, ...] = (),
    ) -> Grant:
        """Answer "Always allow" to a proposal whose decision allows remembering. The creator's
        groups and the requester are kept: while the grant lives, the rules in force are
        checked against them (``policies.evaluate.grant_refusal``)."""
        if decision.outcome != "ask" or not decision.remember:
            raise GrantError(f"this decision does not allow 'Always allow' ({decision.reason})")
        if decision.min_approvals > 1:
            raise GrantError(
                f"'Always allow' cannot stand for {decision.min_approvals} approvals "
                f"({decision.reason})"
            )
        longest = decision.max_grant_seconds
        lifetime = min(lifetime_seconds or longest, longest)
        grant = Grant(
            id=f"grant-{uuid.uuid4().hex[:10]}",
            action=facts.action,
            namespace=facts.namespace,
            resource=facts.resource,
            created_by=created_by,
            expires_at=now + timedelta(seconds=lifetime),
            rule=decision.rule or "",
            created_at=now,
            creator_groups=tuple(sorted(set(creator_groups))),
            requested_by=facts.requester,
        )
        with self.store.immediate() as db:
            db.table("grants").insert(
                {
                    "id": grant.id,
                    "action": grant.action,
                    "namespace": grant.namespace,
                    "resource": grant.resource,
                    "rule": grant.rule,
                    "created_by": created_by,
                    "created_at": now.isoformat(),
                    "expires_at": grant.expires_at.isoformat(),
                    "revoked_at": None,
                    "revoked_by": None,
                    **_checked_fields(grant),
                }
            )
            AuditLog(self.store).append(
                actor=created_by,
                event="grant",
                subject=f"{grant.namespace}/{grant.resource}",
                payload={
                    "grant": grant.id,
                    "action": grant.action,
                    "rule": grant.rule,
                    "expires_at": grant.expires_at.isoformat(),
                },
            )
        return grant

    def revoke(self, grant_id: str, *, by: str, now: datetime | None = None) -> None:
        moment = (now or self.store.clock.now()).isoformat()
        with self.store.immediate() as db:
            cursor = db.execute(
                "UPDATE grants SET revoked_at = ?, revoked_by = ? WHERE id = ? "
                "AND revoked_at IS NULL",
                [moment, by, grant_id],
            )
            if not cursor.rowcount:
                exists = db.execute(
                    "SELECT revoked_at FROM grants WHERE id = ?", [grant_id]
                ).fetchone()
                if exists is None:
                    raise GrantError(f"no grant {grant_id}", subject=grant_id)
                raise GrantError(
                    f"grant {grant_id} was already revoked at {exists[0]}", subject=grant_id
                )
            AuditLog(self.store).append(
                actor=by, event="grant-revoked", subject=grant_id, payload={"grant": grant_id}
            )

    def all(self) -> list[Grant]:
        rows = self.store.query("SELECT * FROM grants ORDER BY created_at")
        return [
            Grant(
                id=r["id"],
                action=r["action"],
                namespace=r["namespace"],
                resource=r["resource"],
                created_by=r["created_by"],
                expires_at=datetime.fromisoformat(r["expires_at"]),
                rule=r["rule"] or "",
                revoked_at=_parse(r["revoked_at"]),
                created_at=_parse(r["created_at"]),
                creator_groups=tuple(json.loads(r.get("creator_groups") or "[]")),
                requested_by=r.get("requested_by"),
            )
            for r in rows
        ]

    def active(self, now: datetime) -> list[Grant]:
        return [g for g in self.all() if g.revoked_at is None and now < g.expires_at]
