"""Execution records (the executor's write-ahead log). Undo entries are ``undo.entries``'s.

An execution is recorded as ``pending`` with its before-image and planned after-image *before*
the write reaches the cluster. It is marked ``applied`` inside a transaction its caller holds,
in which the caller pushes its undo entry (``undo.entries``), so there is never an applied
write without an undo entry. Start-up reconciliation resolves executions left ``pending`` by a
crash.
"""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass
from typing import Any

from store import integrity
from store.db import Store


class ExecutionState(enum.StrEnum):
    PENDING = "pending"  # recorded before the write; resolved by the writer or recovery
    APPLIED = "applied"
    ABORTED = "aborted"  # never reached the object
    FAILED = "failed"  # the cluster refused it


PENDING, APPLIED, ABORTED, FAILED = (
    ExecutionState.PENDING,
    ExecutionState.APPLIED,
    ExecutionState.ABORTED,
    ExecutionState.FAILED,
)


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True)
class Execution:
    id: str
    incident_id: str | None
    transaction_id: str | None
    action: str
    operation: str  # replace, create or delete
    api_version: str
    kind: str
    namespace: str
    name: str
    actor: str
    state: str
    before_image: dict[str, Any] | None
    planned_after: dict[str, Any] | None
    before_rv: str | None
    written_rv: str | None
    diff: str
    intent: str
    error: str | None
    inverse_of: str | None
    created_at: str
    proposal_id: str | None = None
    owner: str | None = None
    before_digest: str | None = None
    updated_at: str | None = None
    # When the write left for the API server (None: it never did — a crash before sending).
    sent_at: str | None = None
    # The cluster it was written to ('': the default one, and every record from before fleets).
    cluster: str = ""

    @property
    def target(self) -> str:
        return f"{self.kind.lower()}/{self.name} in {self.namespace or 'the cluster'}"

    def integrity_material(self) -> dict[str, Any]:
        """What the stored digest covers: the record's identity (its id, the proposal,
        incident and undo it belongs to, who wrote it and when), the object it names and the
        images undo restores — so a genuine digest copied onto another row does not match."""
        return record_material(
            execution_id=self.id,
            identity=self._identity(),
            operation=self.operation,
            api_version=self.api_version,
            kind=self.kind,
            namespace=self.namespace,
            name=self.name,
            before_image=self.before_image,
            planned_after=self.planned_after,
        )

    def _identity(self) -> dict[str, Any]:
        return identity_material(
            action=self.action,
            actor=self.actor,
            intent=self.intent,
            diff=self.diff,
            proposal_id=self.proposal_id,
            incident_id=self.incident_id,
            transaction_id=self.transaction_id,
            inverse_of=self.inverse_of,
            created_at=self.created_at,
            cluster=self.cluster,
        )

    def proven(self) -> bool:
        """The record is the one Stratus wrote under this id: its digest covers its identity
        as well as its images. Recovery settles only such records."""
        return bool(self.before_digest) and integrity.matches(
            self.integrity_material(), self.before_digest or ""
        )

    def intact(self) -> bool:
        """False when the before-image, after-image or target were edited since recorded. A
        record written before digests covered its identity counts by its images alone."""
        if self.proven():
            return True
        legacy = record_material(
            execution_id=None,
            identity=None,
            operation=self.operation,
            api_version=self.api_version,
            kind=self.kind,
            namespace=self.namespace,
            name=self.name,
            before_image=self.before_image,
            planned_after=self.planned_after,
        )
        return bool(self.before_digest) and integrity.matches(legacy, self.before_digest or "")


def identity_material(
    *,
    action: str,
    actor: str,
    intent: str,
    diff: str,
    proposal_id: str | None,
    incident_id: str | None,
    transaction_id: str | None,
    inverse_of: str | None,
    created_at: str,
    cluster: str = "",
) -> dict[str, Any]:
    material = {
        "action": action,
        "actor": actor,
        "intent": intent or "",
        "diff": diff or "",
        "proposal": proposal_id,
        "incident": incident_id,
        "transaction": transaction_id,
        "inverse_of": inverse_of,
        "created_at": created_at,
    }
    if cluster:
        # Named only when there is a fleet: a record of the default cluster digests as it did
        # before fleets, and a named one cannot be moved to another cluster unnoticed.
        material["cluster"] = cluster
    return material


def record_material(
    *,
    execution_id: str | None,
    identity: dict[str, Any] | None,
    operation: str,
    api_version: str,
    kind: str,
    namespace: str,
    name: str,
    before_image: dict[str, Any] | None,
    planned_after: dict[str, Any] | None,
) -> dict[str, Any]:
    material: dict[str, Any] = {
        "operation": operation,
        "apiVersion": api_version,
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "before": before_image,
        "after": planned_after,
    }
    if execution_id is not None:
        # Records written before this covered only the object and its images (``intact``).
        material.update(record="execution", id=execution_id, identity=identity)
    return material


def _loads(text: str | None) -> dict[str, Any] | None:
    return json.loads(text) if text else None


def execution_of(row: dict[str, Any]) -> Execution:
    """An execution record from its row (a query may add columns of its own)."""
    return _execution(row)


def _execution(row: dict[str, Any]) -> Execution:
    return Execution(
        id=row["id"],
        incident_id=row["incident_id"],
        transaction_id=row["transaction_id"],
        action=row["action"],
        operation=row["operation"],
        api_version=row["api_version"],
        kind=row["kind"],
        namespace=row["namespace"],
        name=row["name"],
        actor=row["actor"],
        state=row["state"],
        before_image=_loads(row["before_image"]),
        planned_after=_loads(row["planned_after"]),
        before_rv=row["before_rv"],
        written_rv=row["written_rv"],
        diff=row["diff"] or "",
        intent=row["intent"] or "",
        error=row["error"],
        inverse_of=row["inverse_of"],
        created_at=row["created_at"],
        proposal_id=row.get("proposal_id"),
        owner=row.get("owner"),
        before_digest=row.get("before_digest"),
        updated_at=row.get("updated_at"),
        sent_at=row.get("sent_at"),
        cluster=row.get("cluster") or "",
    )


class ExecutionLog:
    def __init__(self, store: Store) -> None:
        self.store = store

    def begin(
        self,
        *,
        action: str,
        operation: str,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        actor: str,
        before_image: dict[str, Any] | None,
        planned_after: dict[str, Any] | None,
        diff: str,
        intent: str,
        owner: str | None = None,
        proposal_id: str | None = None,
        incident_id: str | None = None,
        inverse_of: str | None = None,
        cluster: str = "",
    ) -> str:
        """The write-ahead record, stored before the write is sent. ``owner`` names the
        process that sends it: nobody else resolves it while that process lives."""
        execution_id = new_id("ex")
        now = self.store.now()
        before_rv = (before_image or {}).get("metadata", {}).get("resourceVersion")
        sealed = integrity.digest(
            record_material(
                execution_id=execution_id,
                identity=identity_material(
                    action=action,
                    actor=actor,
                    intent=intent,
                    diff=diff,
                    proposal_id=proposal_id,
                    incident_id=incident_id,
                    # Nothing groups writes into transactions any more; older records may
                    # name one, and their digests cover it (``Execution.transaction_id``).
                    transaction_id=None,
                    inverse_of=inverse_of,
                    created_at=now,
                    cluster=cluster,
                ),
                operation=operation,
                api_version=api_version,
                kind=kind,
                namespace=namespace,
                name=name,
                before_image=before_image,
                planned_after=planned_after,
            )
        )
        with self.store.immediate() as db:
            db.table("executions").insert(
                {
                    "id": execution_id,
                    "incident_id": incident_id,
                    "proposal_id": proposal_id,
                    "action": action,
                    "operation": operation,
                    "api_version": api_version,
                    "kind": kind,
                    "namespace": namespace,
                    "name": name,
                    "actor": actor,
                    "state": PENDING,
                    "before_image": json.dumps(before_image) if before_image else None,
                    "planned_after": json.dumps(planned_after) if planned_after else None,
                    "before_rv": before_rv,
                    "written_rv": None,
                    "diff": diff,
                    "intent": intent,
                    "error": None,
                    "inverse_of": inverse_of,
                    "created_at": now,
                    "updated_at": now,
                    "owner": owner,
                    "before_digest": sealed,
                    "cluster": cluster,
                }
            )
        return execution_id

    def mark_applied(self, execution_id: str, written_rv: str | None) -> Execution:
        """Pending → applied; returns the record as it now stands. Joins the caller's
        transaction: the caller pushes the undo entry (``undo.entries``) in the same one, so a
        write is never applied on the record without its entry."""
        with self.store.immediate() as db:
            cursor = db.execute(
                "UPDATE executions SET state = ?, written_rv = ?, updated_at = ? "
                "WHERE id = ? AND state = ?",
                [APPLIED, written_rv, self.store.now(), execution_id, PENDING],
            )
            applied = self.get(execution_id) if cursor.rowcount else None
            if applied is None:
                raise ValueError(f"execution {execution_id} is not pending")
        return applied

    def finish(self, execution_id: str, state: str, error: str | None = None) -> None:
        with self.store.immediate() as db:
            db.execute(
                "UPDATE executions SET state = ?, error = ?, updated_at = ? "
                "WHERE id = ? AND state = ?",
                [state, error, self.store.now(), execution_id, PENDING],
            )

    def mark_sent(self, execution_id: str) -> bool:
        """Stamped just before the write leaves: a pending record without it was never sent
        (its process died first), so recovery may call it "not applied" at once; one with it
        may still land, whatever happened to its process. False when recovery settled the
        record first (its writer was taken for gone): the write must not be sent then."""
        now = self.store.now()
        with self.store.immediate() as db:
            cursor = db.execute(
                "UPDATE executions SET sent_at = ?, updated_at = ? WHERE id = ? AND state = ?",
                [now, now, execution_id, PENDING],
            )
            return bool(cursor.rowcount)

    def orphan(self, execution_id: str, error: str) -> None:
        """The writer cannot tell whether its write landed: leave it pending for recovery
        (which reads the object) and give up ownership, so any process may resolve it."""
        with self.store.immediate() as db:
            db.execute(
                "UPDATE executions SET owner = NULL, error = ?, updated_at = ? "
                "WHERE id = ? AND state = ?",
                [error, self.store.now(), execution_id, PENDING],
            )

    def get(self, execution_id: str) -> Execution | None:
        rows = self.store.query("SELECT * FROM executions WHERE id = ?", [execution_id])
        return _execution(rows[0]) if rows else None

    def by_proposal(self, proposal_id: str) -> list[Execution]:
        rows = self.store.query(
            "SELECT * FROM executions WHERE proposal_id = ? ORDER BY created_at", [proposal_id]
        )
        return [_execution(r) for r in rows]

    def pending(self) -> list[Execution]:
        """Writes whose outcome is not known yet. A record marked pending although the audit
        log recorded its write as applied was edited outside Stratus: it is left as found
        (recovery would otherwise judge it again, and call a write "not applied" that the
        object no longer shows), and ``misrecorded`` names it."""
        rows = self.store.query(
            "SELECT * FROM executions e WHERE e.state = ? AND NOT EXISTS (SELECT 1 FROM "
            "audit_log a WHERE a.event IN ('write', 'undo', 'reconcile') AND "
            "json_extract(a.payload, '$.execution') = e.id) ORDER BY e.created_at",
            [PENDING],
        )
        # A record whose digest does not prove it (images edited, or a genuine digest copied
        # onto an inserted row) would be judged, and vouched for, on what someone else wrote.
        return [e for e in map(_execution, rows) if e.proven()]

    def pending_on(self, *, kind: str, namespace: str, name: str) -> list[Execution]:
        """Writes to one object whose outcome is not recorded yet, oldest first."""
        rows = self.store.query(
            "SELECT * FROM executions WHERE kind = ? AND namespace = ? AND name = ? "
            "AND state = ? ORDER BY created_at",
            [kind, namespace, name, PENDING],
        )
        # Only records Stratus wrote hold a write back; ``misrecorded`` names the others.
        return [e for e in map(_execution, rows) if e.proven()]


def audited_digest(store: Store, execution_id: str) -> str | None:
    """The record digest the audit log wrote when this execution was applied (None: no
    audit row names it)."""
    rows = store.query(
        "SELECT payload FROM audit_log WHERE event IN ('write', 'undo') "
        "AND json_extract(payload, '$.execution') = ? ORDER BY seq LIMIT 1",
        [execution_id],
    )
    if not rows:
        return None
    digest = json.loads(rows[0]["payload"]).get("record_digest")
    return str(digest) if digest else ""


def unaudited_writes(store: Store) -> list[str]:
    """Applied executions with no audit row: writes whose audit trail was removed."""
    rows = store.query(
        "SELECT e.id, e.intent FROM executions e WHERE e.state = 'applied' AND NOT EXISTS "
        "(SELECT 1 FROM audit_log a WHERE a.event IN ('write', 'undo') "
        "AND json_extract(a.payload, '$.execution') = e.id) ORDER BY e.created_at"
    )
    return [f"{r['id']} ({r['intent']})" for r in rows]


def misrecorded(store: Store) -> list[str]:
    """Execution records and undo entries that disagree with the audit log: state edited
    outside Stratus that would lose a write's record or its place on the undo stack. One line
    each, naming the execution."""
    found = []
    for r in store.query(
        "SELECT e.id, e.state FROM executions e WHERE e.state != 'applied' AND EXISTS "
        "(SELECT 1 FROM audit_log a WHERE a.event IN ('write', 'undo') "
        "AND json_extract(a.payload, '$.execution') = e.id)"
    ):
        found.append(f"execution {r['id']} is marked {r['state']}, but its write was applied")
    for r in store.query(
        "SELECT e.id FROM executions e WHERE e.state = 'pending' AND EXISTS "
        "(SELECT 1 FROM audit_log a WHERE a.event = 'reconcile' "
        "AND json_extract(a.payload, '$.execution') = e.id)"
    ):
        found.append(
            f"execution {r['id']} is marked pending, but recovery recorded it as not applied: "
            "recovery leaves it as found"
        )
    for r in store.query("SELECT * FROM executions WHERE state = ?", [PENDING]):
        pending = _execution(r)
        if not pending.intact():
            found.append(
                f"execution {r['id']} is pending, but its images were edited since it was "
                "recorded: recovery leaves it as found"
            )
        elif not pending.proven():
            found.append(
                f"execution {r['id']} is pending, but its digest does not cover its id and "
                "origin (inserted or copied outside Stratus, or recorded before digests did): "
                "recovery leaves it as found"
            )
    for r in store.query(
        "SELECT e.id FROM executions e WHERE e.state = 'applied' AND e.inverse_of IS NULL "
        "AND NOT EXISTS (SELECT 1 FROM undo_entries u WHERE u.execution_id = e.id)"
    ):
        found.append(f"execution {r['id']} was applied, but its undo entry is gone")
    for r in store.query(
        "SELECT u.id, u.state, u.execution_id FROM undo_entries u WHERE u.state != 'active' "
        "AND u.state != 'no_inverse'"
    ):
        if not _entry_left_on_record(store, r["id"], r["execution_id"], r["state"]):
            found.append(
                f"execution {r['execution_id']}: its undo entry {r['id']} is marked "
                f"{r['state']}, but no undo or drop of it is on record"
            )
    for r in store.query(
        "SELECT u.id, u.execution_id FROM undo_entries u WHERE u.state = 'active'"
    ):
        left = entry_left(store, r["id"], r["execution_id"])
        if left:
            found.append(
                f"execution {r['execution_id']}: its undo entry {r['id']} is active again, "
                f"but it was {left}"
            )
    return found


def lost(store: Store) -> list[str]:
    """Records of writes the audit log vouches for that are gone, or are no longer what it
    recorded: an execution record an audit row names, the undo entry a write's row pushed,
    or an applied record whose digest or images differ from what its row recorded. One line
    each, naming the record and the audit row."""
    found = []
    for r in store.query(
        "SELECT json_extract(payload, '$.execution') AS id, MIN(seq) AS seq FROM audit_log "
        "WHERE json_extract(payload, '$.execution') IS NOT NULL GROUP BY 1 "
        "HAVING id NOT IN (SELECT id FROM executions)"
    ):
        found.append(f"execution {r['id']}, which audit row {r['seq']} records, is gone")
    for r in store.query(
        "SELECT a.seq, json_extract(a.payload, '$.execution') AS execution, "
        "json_extract(a.payload, '$.undo_entry') AS entry FROM audit_log a "
        "WHERE a.event = 'write' AND json_extract(a.payload, '$.undo_entry') IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM undo_entries u WHERE u.id = "
        "json_extract(a.payload, '$.undo_entry') AND u.execution_id = "
        "json_extract(a.payload, '$.execution'))"
    ):
        found.append(
            f"execution {r['execution']}: its undo entry {r['entry']}, which audit row "
            f"{r['seq']} records, is gone (or moved to another write)"
        )
    for r in store.query(
        "SELECT e.*, a.seq AS audit_seq, json_extract(a.payload, '$.record_digest') AS recorded "
        "FROM executions e JOIN audit_log a ON a.event IN ('write', 'undo') "
        "AND json_extract(a.payload, '$.execution') = e.id"
    ):
        execution = _execution(r)
        if r["recorded"] and r["recorded"] != execution.before_digest:
            found.append(
                f"execution {execution.id} is not the record audit row {r['audit_seq']} "
                "wrote (its digest differs)"
            )
        elif r["recorded"] and not execution.intact():
            found.append(
                f"execution {execution.id} was edited since audit row {r['audit_seq']} "
                "recorded it (its images or origin no longer match its digest)"
            )
    return found


def entry_left(store: Store, entry_id: str, execution_id: str) -> str | None:
    """How the audit log says an undo entry left the stack ("undone", "dropped"), or None."""
    if store.query(
        "SELECT 1 FROM audit_log WHERE event = 'undo' "
        "AND json_extract(payload, '$.inverse_of') = ? LIMIT 1",
        [execution_id],
    ):
        return "undone"
    if store.query(
        "SELECT 1 FROM audit_log WHERE event = 'undo-dropped' "
        "AND json_extract(payload, '$.entry') = ? LIMIT 1",
        [entry_id],
    ):
        return "dropped"
    return None


def _entry_left_on_record(store: Store, entry_id: str, execution_id: str, state: str) -> bool:
    left = entry_left(store, entry_id, execution_id)
    if left is not None:
        return left == state
    # An undo that found the object already restored wrote nothing: its executed undo
    # proposal (sealed, checked by ``audit verify``) is the record.
    return state == "undone" and bool(
        store.query(
            "SELECT 1 FROM proposals WHERE state = 'executed' "
            "AND (CASE WHEN json_valid(body) THEN json_extract(body, '$.undo_entry') END) = ? "
            "LIMIT 1",
            [entry_id],
        )
    )
