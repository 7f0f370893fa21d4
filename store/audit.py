"""The append-only, hash-chained audit log.

Each row carries the hash of the previous row and a hash of its own content, and
``audit_head`` remembers the last row. Triggers refuse UPDATE and DELETE; ``verify`` finds what
someone who went around the triggers (or edited the file) did: an edited row, a removed row, a
reordered row, or rows cut off the end.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from store.db import Store, utc_now

GENESIS = "0" * 64


def _row_hash(
    seq: int, at: str, actor: str, event: str, subject: str, payload: str, prev_hash: str
) -> str:
    material = "\x1f".join((str(seq), at, actor, event, subject, payload, prev_hash))
    return hashlib.sha256(material.encode()).hexdigest()


@dataclass(frozen=True)
class AuditRecord:
    seq: int
    at: str
    actor: str
    event: str
    subject: str
    payload: dict[str, Any]


class AuditLog:
    def __init__(self, store: Store) -> None:
        self.store = store

    def append(
        self, *, actor: str, event: str, subject: str, payload: dict[str, Any] | None = None
    ) -> int:
        body = json.dumps(payload or {}, sort_keys=True, separators=(",", ":"), default=str)
        with self.store.immediate() as db:
            head = db.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
            seq, prev = (head[0] + 1, head[1]) if head else (1, GENESIS)
            at = utc_now()
            digest = _row_hash(seq, at, actor, event, subject, body, prev)
            db.execute(
                "INSERT INTO audit_log VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [seq, at, actor, event, subject, body, prev, digest],
            )
            db.execute(
                "INSERT INTO audit_head (id, seq, hash) VALUES (1, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
                [seq, digest],
            )
        return seq

    def records(self, *, limit: int = 50, subject: str | None = None) -> list[AuditRecord]:
        sql = "SELECT * FROM audit_log"
        params: list[Any] = []
        if subject:
            sql += " WHERE subject = ?"
            params.append(subject)
        sql += " ORDER BY seq DESC LIMIT ?"
        params.append(limit)
        rows = self.store.query(sql, params)
        return [
            AuditRecord(
                r["seq"], r["at"], r["actor"], r["event"], r["subject"], json.loads(r["payload"])
            )
            for r in reversed(rows)
        ]

    def verify(self) -> list[str]:
        """Every problem found, one line each; an empty list means the chain is intact."""
        problems: list[str] = []
        expected_seq = 1
        prev_hash = GENESIS
        with self.store._lock:  # one consistent read of the whole chain
            cursor = self.store.db.execute(
                "SELECT seq, at, actor, event, subject, payload, prev_hash, hash "
                "FROM audit_log ORDER BY seq"
            )
            for seq, at, actor, event, subject, payload, row_prev, row_hash in cursor:
                if seq != expected_seq:
                    missing = (
                        f"{expected_seq}"
                        if seq == expected_seq + 1
                        else f"{expected_seq}-{seq - 1}"
                    )
                    problems.append(f"row {missing} was removed")
                elif row_prev != prev_hash:
                    problems.append(
                        f"row {seq} does not follow row {seq - 1}: rows were reordered or replaced"
                    )
                if _row_hash(seq, at, actor, event, subject, payload, row_prev) != row_hash:
                    problems.append(
                        f"row {seq} was edited (its content no longer matches its hash)"
                    )
                expected_seq = seq + 1
                prev_hash = row_hash
            head = self.store.db.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
        last = expected_seq - 1
        if head is not None and (head[0] != last or head[1] != prev_hash):
            if head[0] > last:
                problems.append(f"rows {last + 1}-{head[0]} were removed from the end")
            else:
                problems.append(f"the log ends at row {last} but its head says row {head[0]}")
        elif head is None and last:
            problems.append("the audit head is missing")
        return problems

    def count(self) -> int:
        return int(self.store.query("SELECT COUNT(*) AS n FROM audit_log")[0]["n"])
