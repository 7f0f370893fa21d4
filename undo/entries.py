"""The undo stack's entries: one per applied write, newest first, each active until its
inverse succeeded (undone), it was taken off explicitly (dropped), or never undoable
(no_inverse, an irreversible write kept on the record).

The stack follows each applied write inside the transaction that records it (``follow``): the
caller holds that transaction (``HeldObject.recording``, ``Executor.settling``) and the entry
commits with the record, its audit row and the caller's own rows, or none of them does. Reading
the stack, moving an entry by compare-and-set and the history of an incident live here too.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from store.db import Store
from store.records import Execution, execution_of, new_id


class EntryState(enum.StrEnum):
    ACTIVE = "active"  # can be undone
    UNDONE = "undone"
    NO_INVERSE = "no_inverse"  # an irreversible write: on the record, never undone
    DROPPED = "dropped"  # taken off the stack explicitly


ACTIVE, UNDONE, NO_INVERSE, DROPPED = (
    EntryState.ACTIVE,
    EntryState.UNDONE,
    EntryState.NO_INVERSE,
    EntryState.DROPPED,
)


@dataclass(frozen=True)
class UndoEntry:
    id: str
    execution: Execution
    seq: int
    state: str
    created_at: str
    undone_at: str | None
    undone_by: str | None
    last_error: str | None

    @property
    def cluster(self) -> str:
        """The cluster the write was made in, where its undo goes back to ('': the default)."""
        return self.execution.cluster


class UndoEntries:
    def __init__(self, store: Store) -> None:
        self.store = store

    def _query(self, where: str, params: list[Any], *, limit: int = -1) -> list[UndoEntry]:
        rows = self.store.query(
            "SELECT u.id AS undo_id, u.seq, u.state AS undo_state, u.created_at AS undo_created,"
            " u.undone_at, u.undone_by, u.last_error, e.* FROM undo_entries u "
            f"JOIN executions e ON e.id = u.execution_id WHERE {where} ORDER BY u.seq DESC "
            "LIMIT ?",
            [*params, limit],
        )
        return [
            UndoEntry(
                r["undo_id"],
                execution_of(r),
                r["seq"],
                r["undo_state"],
                r["undo_created"],
                r["undone_at"],
                r["undone_by"],
                r["last_error"],
            )
            for r in rows
        ]

    def get(self, entry_id: str) -> UndoEntry | None:
        found = self._query("u.id = ?", [entry_id])
        return found[0] if found else None

    def active(self, *, incident_id: str | None = None) -> list[UndoEntry]:
        """Entries that can still be undone, newest first."""
        where, params = "u.state = ?", [ACTIVE.value]
        if incident_id:
            where += " AND u.incident_id = ?"
            params.append(incident_id)
        return self._query(where, params)

    def history(self, *, incident_id: str | None = None, limit: int = 100) -> list[UndoEntry]:
        """Every entry whatever its state (active, undone, dropped, no inverse), newest
        first: one incident's, or all of them."""
        where, params = "1 = 1", []
        if incident_id:
            where, params = "u.incident_id = ?", [incident_id]
        return self._query(where, params, limit=limit)

    def newest(self, *, incident_id: str | None = None) -> UndoEntry | None:
        """The most recent write on the stack, whatever its state: "undo the last write"
        names one write, so two people who ask at once ask for the same one."""
        where, params = "u.state != ?", [NO_INVERSE.value]
        if incident_id:
            where += " AND u.incident_id = ?"
            params.append(incident_id)
        found = self._query(where, params)
        return found[0] if found else None

    def follow(self, execution: Execution, *, reversible: bool) -> str | None:
        """The stack follows a write just recorded applied, in the caller's transaction: a
        write is pushed and its entry's id returned; an undo's write pushes nothing (None) and
        takes the entry it undoes off the stack instead."""
        if execution.inverse_of:
            self.undone_by(execution)
            return None
        return self.push(execution, reversible=reversible)

    def push(self, execution: Execution, *, reversible: bool) -> str:
        """A new entry on top of the stack for an applied write: active, or ``no_inverse`` for
        an irreversible one (kept on the record, never undone). Joins the caller's
        transaction."""
        entry_id = new_id("undo")
        with self.store.immediate() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM undo_entries").fetchone()[0]
            db.table("undo_entries").insert(
                {
                    "id": entry_id,
                    "execution_id": execution.id,
                    "incident_id": execution.incident_id,
                    "seq": seq,
                    "state": ACTIVE.value if reversible else NO_INVERSE.value,
                    "created_at": self.store.now(),
                    "undone_at": None,
                    "undone_by": None,
                    "last_error": None,
                    "cluster": execution.cluster,
                }
            )
        return entry_id

    def undone_by(self, inverse: Execution) -> None:
        """The entry of the write ``inverse`` undoes leaves the stack (undone, by the inverse's
        actor). Joins the caller's transaction, which records the inverse applied: a crash can
        never leave a restored object with its entry still active."""
        with self.store.immediate() as db:
            db.execute(
                "UPDATE undo_entries SET state = ?, undone_at = ?, undone_by = ?, "
                "last_error = NULL WHERE execution_id = ? AND state = ?",
                [UNDONE.value, self.store.now(), inverse.actor, inverse.inverse_of, ACTIVE.value],
            )

    def mark_undone(self, entry_id: str, by: str) -> bool:
        """Compare-and-set: True only for the caller that moved it from active to undone."""
        return self._move(entry_id, UNDONE, by)

    def drop(self, entry_id: str, by: str) -> bool:
        """Take an entry off the stack without undoing it (its object was deleted and
        re-created, say): compare-and-set from active."""
        return self._move(entry_id, DROPPED, by)

    def _move(self, entry_id: str, state: str, by: str) -> bool:
        with self.store.immediate() as db:
            cursor = db.execute(
                "UPDATE undo_entries SET state = ?, undone_at = ?, undone_by = ?,"
                " last_error = NULL WHERE id = ? AND state = ?",
                [state, self.store.now(), by, entry_id, ACTIVE],
            )
            return bool(cursor.rowcount)

    def record_failure(self, entry_id: str, error: str) -> None:
        with self.store.immediate() as db:
            db.execute("UPDATE undo_entries SET last_error = ? WHERE id = ?", [error, entry_id])
