"""Proposals in the store: the whole aggregate as a versioned JSON body, with the columns
queries need, written only by compare-and-set on ``version``. Every body is sealed when it is
written, and the stored one is checked before it is overwritten (``proposals.seals``), so an
edit made outside Stratus is never carried into a new, genuinely sealed version."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from proposals import model, seals
from proposals.errors import ProposalNotFound, ProposalTampered, StaleProposal
from proposals.model import OPEN, Proposal, ProposalState
from store import integrity, versioned
from store.audit import AuditLog
from store.db import Store

TABLE = versioned.Table(
    "proposals", "proposal", ("state", "body", "version", "updated_at", "plan"), stale=StaleProposal
)

# A body someone made unreadable must not make every query over ``undo_entry`` fail.
UNDO_ENTRY = "(CASE WHEN json_valid(body) THEN json_extract(body, '$.undo_entry') END)"


class ProposalRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    def insert(self, proposal: Proposal) -> Proposal:
        """Store a new proposal, sealed; the caller's audit row must record its ``seal``."""
        sealed = seals.sealed(proposal)
        with self.store.immediate() as db:
            db.table("proposals").insert(self._columns(sealed))
        return sealed

    def save(self, proposal: Proposal, *, expected_version: int) -> Proposal:
        """Store ``proposal`` as the next version, sealed, only if nobody saved since we loaded
        it and the stored version is intact. The caller's audit row must record the seal."""
        saved = seals.sealed(proposal.model_copy(update={"version": expected_version + 1}))
        with self.store.immediate() as db:
            self.check(self.get(proposal.id))
            TABLE.save(db, self._columns(saved), expected=expected_version)
        return saved

    def get(self, proposal_id: str) -> Proposal:
        rows = self.store.query("SELECT body FROM proposals WHERE id = ?", [proposal_id])
        if not rows:
            raise _not_found(proposal_id)
        proposal = _load(proposal_id, rows[0]["body"])
        if proposal.id != proposal_id:
            raise ProposalTampered(
                f"proposal {proposal_id} was edited outside Stratus: its row holds the body of "
                f"proposal {proposal.id}; nothing acts on it",
                subject=proposal_id,
                details={
                    "record": "proposal",
                    "problems": [f"its row holds proposal {proposal.id}"],
                },
            )
        return proposal

    def problems(self, proposal: Proposal, row: dict[str, Any] | None = None) -> list[str]:
        """What was done to this stored proposal outside Stratus (none: intact): its seals,
        and the row's columns, which queries select by, against its body. ``row``: the row
        it was read from (default: read it now)."""
        if row is None:
            rows = self.store.query("SELECT * FROM proposals WHERE id = ?", [proposal.id])
            row = rows[0] if rows else {}
        found = _column_problems(proposal, row)
        audited = AuditLog(self.store).newest(field="proposal", value=proposal.id, having="seal")
        return seals.problems(proposal, audited=audited) + found

    def shown(self, rows: list[dict[str, Any]]) -> list[Proposal]:
        """Proposals as surfaces list and show them: each with ``tampered`` saying what was
        done to it outside Stratus. The one query behind every listing (CLI, cards, App Home,
        status), so a tampered proposal is never shown as open or answerable."""
        shown = []
        for row in rows:
            read, unreadable = _read(row["body"])
            if read is None:
                shown.append(_stand_in(row, unreadable))
                continue
            proposal = read
            found = self.problems(proposal, row)
            if found:
                # Read outside a transaction: a save may have committed between the body and
                # its audit row. Both are read again together before anything is called tampered.
                with self.store.immediate():
                    again = self.store.query("SELECT * FROM proposals WHERE id = ?", [row["id"]])
                    if again and not _unreadable(again[0]["body"]):
                        proposal = _load(row["id"], again[0]["body"])
                        found = self.problems(proposal, again[0])
            shown.append(proposal.model_copy(update={"tampered": found}))
        return shown

    def shown_one(self, proposal_id: str) -> Proposal:
        rows = self.store.query("SELECT * FROM proposals WHERE id = ?", [proposal_id])
        if not rows:
            raise _not_found(proposal_id)
        return self.shown(rows)[0]

    def check(self, proposal: Proposal) -> Proposal:
        """``proposal`` as loaded (or as saved since, when someone saved it meanwhile), or
        ``ProposalTampered`` naming what was done to it."""
        found = self.problems(proposal)
        if found:
            # Loaded outside a transaction: another process may have saved a newer version and
            # its audit row in between. Body and audit row are read again together.
            with self.store.immediate():
                proposal = self.get(proposal.id)
                found = self.problems(proposal)
        if found and not AuditLog(self.store).key_fits():
            raise integrity.AuditKeyError(
                f"{integrity.KEY_MISMATCH}: proposal {proposal.id} cannot be checked, so "
                "nothing acts on it; set the installation's key",
                subject=proposal.id,
            )
        if found:
            raise ProposalTampered(
                f"proposal {proposal.id} was edited outside Stratus: {found[0]}; nothing acts "
                "on it",
                subject=proposal.id,
                details={"record": "proposal", "problems": found},
            )
        return proposal

    def tampered(self) -> tuple[list[str], list[str]]:
        """Every stored proposal checked: problems (one line each, naming the proposal), and
        warnings for closed proposals stored before seals existed."""
        problems: list[str] = []
        warnings: list[str] = []
        log = AuditLog(self.store)
        for row in self.store.query("SELECT * FROM proposals ORDER BY created_at, id"):
            proposal, unreadable = _read(row["body"])
            if (
                proposal is None
                and row["body"] is None
                and not log.newest(field="proposal", value=str(row["id"]), having="seal")
            ):
                # Stored before proposals had bodies (migration 2): closed, and never sealed.
                warnings.append(f"proposal {row['id']} ({row['state']}) has no body")
                continue
            if proposal is None:
                problems.append(f"proposal {row['id']}: {unreadable}")
                continue
            if not proposal.seal and not proposal.is_open and not _column_problems(proposal, row):
                warnings.append(f"proposal {proposal.id} ({proposal.state.value}) has no seal")
                continue
            problems += [f"proposal {row['id']}: {p}" for p in self.problems(proposal, row)]
        problems += [
            f"proposal {r['id']}: it is gone, but audit row {r['seq']} recorded it"
            for r in self.store.query(
                "SELECT json_extract(payload, '$.proposal') AS id, MAX(seq) AS seq "
                "FROM audit_log WHERE json_extract(payload, '$.proposal') IS NOT NULL "
                "AND json_extract(payload, '$.seal') IS NOT NULL GROUP BY 1 "
                "HAVING id NOT IN (SELECT id FROM proposals)"
            )
        ]
        return problems, warnings

    def find(
        self,
        *,
        states: frozenset[ProposalState] | None = None,
        incident_id: str | None = None,
        undo_entry: str | None = None,
        limit: int = 100,
        requester: str | None = None,
    ) -> list[Proposal]:
        # What acts on proposals (expiry, recovery, undo) skips a row it cannot read: nothing
        # can act on it, and surfaces (``shown``) and ``audit verify`` name it.
        read = (
            _read(r["body"])[0]
            for r in self.rows(
                states=states,
                incident_id=incident_id,
                undo_entry=undo_entry,
                limit=limit,
                requester=requester,
            )
        )
        return [proposal for proposal in read if proposal is not None]

    def rows(
        self,
        *,
        states: frozenset[ProposalState] | None = None,
        incident_id: str | None = None,
        undo_entry: str | None = None,
        limit: int = 100,
        requester: str | None = None,
    ) -> list[dict[str, Any]]:
        """The stored rows ``find`` selects, newest first (``shown`` checks them), unreadable
        ones included: a listing shows them as tampered."""
        sql = "SELECT * FROM proposals WHERE 1 = 1"
        params: list[Any] = []
        if states:
            sql += f" AND state IN ({', '.join('?' for _ in states)})"
            params.extend(s.value for s in sorted(states))
        if incident_id:
            sql += " AND incident_id = ?"
            params.append(incident_id)
        if undo_entry:
            sql += f" AND {UNDO_ENTRY} = ?"
            params.append(undo_entry)
        if requester:
            sql += " AND requester = ?"
            params.append(requester)
        sql += " ORDER BY created_at DESC, id LIMIT ?"
        params.append(limit)
        return self.store.query(sql, params)

    def open_ones(self) -> list[Proposal]:
        return self.find(states=OPEN, limit=10_000)

    @staticmethod
    def _columns(proposal: Proposal) -> dict[str, Any]:
        return {
            "id": proposal.id,
            "incident_id": proposal.incident_id,
            "action": proposal.action,
            "target": str(proposal.target),
            "state": proposal.state.value,
            "plan": json.dumps({"digest": proposal.plan.digest}),
            "created_at": proposal.created_at.isoformat(),
            "updated_at": proposal.updated_at.isoformat(),
            "version": proposal.version,
            "requester": proposal.requester,
            "body": proposal.body(),
            "cluster": proposal.cluster,
        }


def _read(body: str | None) -> tuple[Proposal | None, str]:
    """A stored body as a proposal, or why it cannot be read: gone, not JSON, or not this
    version's proposal (an unknown field, another schema version, a bad value)."""
    if body is None:
        return None, "its stored body is gone"
    try:
        proposal = Proposal.model_validate_json(body)
    except ValidationError as error:
        found = error.errors()
        where = ".".join(str(part) for part in found[0]["loc"]) if found else ""
        what = found[0]["msg"][:120] if found else "unreadable"
        return None, f"its stored body is not a proposal ({where or 'body'}: {what})"
    except ValueError as error:
        return None, f"its stored body is not a proposal ({str(error)[:120]})"
    # ``tampered`` is never read from the store (``shown`` finds it).
    return (proposal.model_copy(update={"tampered": []}) if proposal.tampered else proposal), ""


def _unreadable(body: str | None) -> str:
    return _read(body)[1]


def _load(proposal_id: str, body: str | None) -> Proposal:
    """A stored body as a proposal; one that is not a proposal is named, never a traceback."""
    proposal, unreadable = _read(body)
    if proposal is None:
        raise ProposalTampered(
            f"proposal {proposal_id} was edited outside Stratus: {unreadable}; nothing acts on it",
            subject=proposal_id,
            details={"record": "proposal", "problems": [unreadable]},
        )
    return proposal


def _not_found(proposal_id: str) -> ProposalNotFound:
    return ProposalNotFound(
        f"no proposal {proposal_id}", subject=proposal_id, details={"record": "proposal"}
    )


def _stand_in(row: dict[str, Any], unreadable: str) -> Proposal:
    """What a listing shows for a row whose body cannot be read: its columns (which say
    nothing trustworthy, but name it), marked tampered, so surfaces render it as such."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    created = _stamp(row.get("created_at")) or epoch
    kind, _, rest = str(row.get("target") or "unknown/unknown").partition("/")
    name, _, namespace = rest.partition(" in ")
    try:
        state = ProposalState(str(row.get("state")))
    except ValueError:
        state = ProposalState.FAILED
    action = str(row.get("action") or "unknown")
    requester = str(row.get("requester") or "unknown")
    target = model.Target(kind=kind or "unknown", name=name or "unknown", namespace=namespace)
    return Proposal(
        id=str(row["id"]),
        incident_id=row.get("incident_id") if isinstance(row.get("incident_id"), str) else None,
        action=action,
        target=target,
        requester=requester,
        facts=model.Facts(
            action=action,
            namespace=target.namespace,
            kind=target.kind,
            name=target.name,
            risk="unknown",
            reversible=False,
            requester=requester,
        ),
        plan=model.PlanSnapshot(operation="unknown", before=None, after=None, diff="", digest=""),
        intent="unreadable",
        risk="unknown",
        reversible=False,
        decision=model.Decision(
            outcome="deny", reason=unreadable, source="store", decided_at=created
        ),
        state=state,
        created_at=created,
        updated_at=created,
        expires_at=created,
        tampered=[unreadable],
    )


def _stamp(value: Any) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _column_problems(proposal: Proposal, row: dict[str, Any]) -> list[str]:
    """The row's columns against its body: queries select by the columns (open ones, an
    incident's, an undo's), everything else reads the body, so both must say the same."""
    if not row:
        return ["its row is gone"]
    expected = ProposalRepository._columns(proposal)
    edited = sorted(
        name for name, value in expected.items() if name != "body" and row.get(name) != value
    )
    if not edited:
        return []
    return [f"its row and its body disagree ({', '.join(edited)} edited)"]
