"""The event stream: an append-only, ordered log of state changes, read with a cursor.

Each event is appended inside the transaction of the change it describes, so a reader never
sees a change without its event or an event without its change. ``since(seq)`` returns what
came after a cursor; surfaces keep the last ``seq`` they rendered. The typed event models live
with the aggregates that emit them (``proposals.events``); this module stores rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from store.db import Store


@dataclass(frozen=True)
class EventRow:
    seq: int
    at: str
    stream: str
    subject: str
    type: str
    version: int
    payload: dict[str, Any]


class EventStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    def append(
        self, *, stream: str, subject: str, type: str, version: int, payload: dict[str, Any]
    ) -> int:
        """Append one event; joins the caller's transaction when there is one."""
        body = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
        with self.store.immediate() as db:
            cursor = db.execute(
                "INSERT INTO events (at, stream, subject, type, version, payload) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [self.store.now(), stream, subject, type, version, body],
            )
            return int(cursor.lastrowid or 0)

    def since(
        self,
        seq: int = 0,
        *,
        stream: str | None = None,
        subject: str | None = None,
        limit: int = 1000,
    ) -> list[EventRow]:
        sql = "SELECT * FROM events WHERE seq > ?"
        params: list[Any] = [seq]
        if stream is not None:
            sql += " AND stream = ?"
            params.append(stream)
        if subject is not None:
            sql += " AND subject = ?"
            params.append(subject)
        sql += " ORDER BY seq LIMIT ?"
        params.append(limit)
        return [
            EventRow(
                r["seq"],
                r["at"],
                r["stream"],
                r["subject"],
                r["type"],
                r["version"],
                json.loads(r["payload"]),
            )
            for r in self.store.query(sql, params)
        ]

    def last_seq(self) -> int:
        return int(self.store.query("SELECT COALESCE(MAX(seq), 0) AS n FROM events")[0]["n"])
