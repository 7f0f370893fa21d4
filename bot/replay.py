"""Signed requests already handled, so that a captured one replayed within Slack's five-minute
window does nothing the second time.

A signature is valid for five minutes (``http.MAX_AGE``); in that window anyone who captured a
signed ``/stratus resume`` could send it again after an emergency ``/stratus pause``. Each
request's signature (an HMAC over its timestamp and body, so it names exactly one request) is
kept until its timestamp leaves the window, in the store — a restarted bot, or a second one on
the same database, still knows it. Slack itself never sends a request twice with the same
signature (an Events API retry is a new request, and is dropped by the middleware).

The bot owns this table; nothing else reads it.
"""

from __future__ import annotations

import hashlib

from store.db import Store

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bot_requests (digest TEXT PRIMARY KEY, stamp INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS bot_requests_stamp ON bot_requests (stamp)",
)


class SeenRequests:
    def __init__(self, store: Store, *, window: int) -> None:
        self.store = store
        self.window = window
        with store.immediate() as db:
            for statement in _SCHEMA:
                db.execute(statement)

    def first_time(self, signature: str, *, stamp: int, now: float) -> bool:
        """Record the request; False when it was recorded before (a replay). Rows whose
        timestamp left the window go at the same time: their requests are refused anyway."""
        digest = hashlib.sha256(signature.encode("utf-8", "replace")).hexdigest()
        with self.store.immediate() as db:
            db.execute("DELETE FROM bot_requests WHERE stamp < ?", [int(now) - 2 * self.window])
            cursor = db.execute("INSERT OR IGNORE INTO bot_requests VALUES (?, ?)", [digest, stamp])
            return bool(cursor.rowcount)
