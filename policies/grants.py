"""Grants ("Always allow") in the store: scoped, expiring, attributed, revocable.

A grant covers one action on one resource in one namespace, lives no longer than the rule
that allowed it says, names who created it, and stops matching the moment it is revoked or
expires.

Each grant row carries a ``mac`` (``store.integrity``: an HMAC under ``STRATUS_AUDIT_KEY``)
over its id, scope, rule, creator, creation and expiry, and the audit row of its creation
records the same mac. A grant whose mac does not match, or that no audit row created, allows
nothing; a grant the audit log says was revoked stays revoked whatever its row says.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from policies.evaluate import Grant, PolicyDecision, ProposalFacts
from store import integrity, versioned
from store.audit import AuditLog
from store.db import Store
from store.errors import NotFound, Remedy, StratusError, Tampered


class GrantError(StratusError, code="grant", remedy=Remedy.FIX_INPUT):
    """A grant cannot be created or revoked; the message says why."""


class GrantNotFound(NotFound, GrantError):
    """No stored grant has the id."""


# What a grant with a time Stratus cannot read stands for: expired and revoked long ago.
_NEVER = datetime(1970, 1, 1, tzinfo=UTC)


def _stamp(text: Any) -> datetime | None:
    """A time exactly as Stratus writes it (``isoformat()`` of an aware time), else None: an
    edited one ("garbage", a trailing space, no offset) makes the grant tampered."""
    if not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None or parsed.isoformat() != text:
        return None
    return parsed


def unreadable(row: dict[str, Any]) -> str | None:
    """Which stored field of a grant row Stratus cannot have written (None: all readable)."""
    for name in ("created_at", "expires_at"):
        if _stamp(row[name]) is None:
            return f"its {name} ({str(row[name])[:40]!r}) is not a time Stratus writes"
    if row["revoked_at"] is not None and _stamp(row["revoked_at"]) is None:
        return f"its revoked_at ({str(row['revoked_at'])[:40]!r}) is not a time Stratus writes"
    try:
        groups = json.loads(row.get("creator_groups") or "[]")
    except ValueError:
        groups = None
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        return "its creator_groups is not a list of groups"
    return None


class GrantTampered(Tampered, GrantError):
    """A stored grant was inserted or edited outside Stratus: it allows nothing."""


def grant_mac(row: dict[str, Any]) -> str:
    """What a grant's mac binds: who allowed which action on what, from when until when."""
    fields = (
        "id",
        "action",
        "namespace",
        "resource",
        "rule",
        "created_by",
        "creator_groups",
        "requested_by",
    )
    material: dict[str, Any] = {name: row[name] or "" for name in fields}
    for name in ("created_at", "expires_at"):
        material[name] = str(row[name] or "")
    if row.get("cluster"):
        # Bound only when named (a fleet): grants from before fleets keep their mac, and a
        # fleet's grant cannot be moved to another cluster unnoticed.
        material["cluster"] = row["cluster"]
    return integrity.digest({"record": "grant", **material})


def _checked_fields(grant: Grant) -> dict[str, str | None]:
    """The columns today's rules are checked against (migration 7)."""
    return {
        "creator_groups": json.dumps(list(grant.creator_groups)),
        "requested_by": grant.requested_by,
    }


def _grant(r: dict[str, Any]) -> Grant:
    """A stored row as a grant; one with a field Stratus cannot read stands expired and
    revoked (it allows nothing), and ``GrantBook.problem`` names it."""
    broken = unreadable(r) is not None
    return Grant(
        id=r["id"],
        action=r["action"],
        namespace=r["namespace"],
        resource=r["resource"],
        created_by=r["created_by"],
        expires_at=_NEVER if broken else _stamp(r["expires_at"]) or _NEVER,
        rule=r["rule"] or "",
        revoked_at=_NEVER if broken and r["revoked_at"] is not None else _stamp(r["revoked_at"]),
        created_at=None if broken else _stamp(r["created_at"]),
        creator_groups=() if broken else tuple(json.loads(r.get("creator_groups") or "[]")),
        requested_by=r.get("requested_by"),
        cluster=r.get("cluster") or "",
    )


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
            cluster=facts.cluster,
        )
        row: dict[str, Any] = {
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
            "cluster": grant.cluster,
        }
        row["mac"] = grant_mac(row)
        with self.store.immediate() as db:
            db.table("grants").insert(row)
            AuditLog(self.store).append(
                actor=created_by,
                event="grant",
                subject=f"{grant.namespace}/{grant.resource}",
                payload={
                    "grant": grant.id,
                    "action": grant.action,
                    "rule": grant.rule,
                    "expires_at": grant.expires_at.isoformat(),
                    "mac": row["mac"],
                    **({"cluster": grant.cluster} if grant.cluster else {}),
                },
            )
        return grant

    def revoke(self, grant_id: str, *, by: str, now: datetime | None = None) -> None:
        moment = (now or self.store.clock.now()).isoformat()
        with self.store.immediate() as db:
            if not versioned.write_if(
                db,
                "grants",
                where={"id": grant_id, "revoked_at": None},
                changes={"revoked_at": moment, "revoked_by": by},
            ):
                exists = db.execute(
                    "SELECT revoked_at FROM grants WHERE id = ?", [grant_id]
                ).fetchone()
                if exists is None:
                    raise GrantNotFound(
                        f"no grant {grant_id}", subject=grant_id, details={"record": "grant"}
                    )
                raise GrantError(
                    f"grant {grant_id} was already revoked at {exists[0]}",
                    subject=grant_id,
                    details={"record": "grant", "revoked_at": exists[0]},
                )
            AuditLog(self.store).append(
                actor=by, event="grant-revoked", subject=grant_id, payload={"grant": grant_id}
            )

    def all(self) -> list[Grant]:
        rows = self.store.query("SELECT * FROM grants ORDER BY created_at, id")
        return [_grant(r) for r in rows]

    def active(self, now: datetime) -> list[Grant]:
        """Grants that allow something now: intact, not revoked, not expired."""
        return [
            g
            for g in self.all()
            if g.revoked_at is None and now < g.expires_at and not self.problem(g.id)
        ]

    def problem(self, grant_id: str) -> str | None:
        """What was done to this stored grant outside Stratus (None: intact). A grant the
        audit log says was revoked reads as revoked, whatever its row says."""
        rows = self.store.query("SELECT * FROM grants WHERE id = ?", [grant_id])
        if not rows:
            return None
        row = rows[0]
        found = unreadable(row)
        if found:
            return found
        audit = AuditLog(self.store)
        if row["revoked_at"] is None and audit.newest(
            field="grant", value=grant_id, having="grant", event="grant-revoked"
        ):
            return "it was revoked, but its row says it was not"
        if not row.get("mac") and row["revoked_at"] is not None:
            return None  # created before grants were sealed, and revoked by the upgrade
        if not row.get("mac"):
            return "it carries no MAC (inserted outside Stratus)"
        if integrity.audit_key() is None and str(row["mac"]).startswith("hmac-"):
            return f"it was sealed with {integrity.KEY_ENV}, which is not set: it cannot be proven"
        if integrity.audit_key() is not None and str(row["mac"]).startswith("sha256:"):
            return f"it was made without {integrity.KEY_ENV} (before the key was set, or forged)"
        if not integrity.matches_digest(grant_mac(row), row["mac"]):
            return "its scope, creator, rule or expiry was edited outside Stratus"
        created = audit.newest(field="grant", value=grant_id, having="mac", event="grant")
        if created is None or created.record.payload.get("mac") != row["mac"]:
            return "no audit row records its creation (inserted outside Stratus)"
        if not created.proven:
            return "the audit row of its creation was not written by Stratus"
        return None

    def forged(self, facts: ProposalFacts, now: datetime) -> list[tuple[Grant, str]]:
        """Grants that would allow ``facts`` now if they were genuine, and are not."""
        found = []
        for grant in self.all():
            if grant.matches(facts, now):
                problem = self.problem(grant.id)
                if problem:
                    found.append((grant, problem))
        return found

    def tampered(self) -> list[str]:
        """Every stored grant checked: one line per grant edited or inserted outside Stratus."""
        found = []
        for grant in self.all():
            problem = self.problem(grant.id)
            if problem:
                found.append(f"grant {grant.id}: {problem}")
        return found
