"""Which Slack message shows which incident or proposal, and how far the event stream was
rendered — kept in the store, so a restarted bot (or a second one) updates the same cards.

The bot owns these tables; nothing else reads them.
"""

from __future__ import annotations

from dataclasses import dataclass

from store.db import Store

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bot_threads (incident_id TEXT PRIMARY KEY, channel TEXT NOT NULL,"
    " ts TEXT NOT NULL, requester TEXT NOT NULL DEFAULT '')",
    "CREATE UNIQUE INDEX IF NOT EXISTS bot_threads_ts ON bot_threads (channel, ts)",
    "CREATE TABLE IF NOT EXISTS bot_cards (proposal_id TEXT PRIMARY KEY, incident_id TEXT,"
    " channel TEXT NOT NULL, ts TEXT NOT NULL, thread_ts TEXT)",
    "CREATE TABLE IF NOT EXISTS bot_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # Incidents whose thread could not be posted: where to post it on a retry.
    "CREATE TABLE IF NOT EXISTS bot_parked (incident_id TEXT PRIMARY KEY, channel TEXT NOT NULL,"
    " requester TEXT NOT NULL DEFAULT '')",
)
CURSOR = "cursor"


@dataclass(frozen=True)
class MessageRef:
    channel: str
    ts: str


class Links:
    def __init__(self, store: Store) -> None:
        self.store = store
        with store.immediate() as db:
            for statement in _SCHEMA:
                db.execute(statement)

    # ------------------------------------------------------------------ incident threads

    def link_thread(self, incident_id: str, where: MessageRef, requester: str) -> None:
        with self.store.immediate() as db:
            db.execute(
                "INSERT OR REPLACE INTO bot_threads VALUES (?, ?, ?, ?)",
                [incident_id, where.channel, where.ts, requester],
            )

    def thread(self, incident_id: str) -> MessageRef | None:
        rows = self.store.query(
            "SELECT channel, ts FROM bot_threads WHERE incident_id = ?", [incident_id]
        )
        return MessageRef(rows[0]["channel"], rows[0]["ts"]) if rows else None

    def incident_at(self, channel: str, thread_ts: str) -> str | None:
        rows = self.store.query(
            "SELECT incident_id FROM bot_threads WHERE channel = ? AND ts = ?", [channel, thread_ts]
        )
        return str(rows[0]["incident_id"]) if rows else None

    def incident_in(self, channel: str) -> list[str]:
        rows = self.store.query(
            "SELECT incident_id FROM bot_threads WHERE channel = ? ORDER BY rowid DESC", [channel]
        )
        return [str(r["incident_id"]) for r in rows]

    def park(self, incident_id: str, channel: str, requester: str) -> None:
        with self.store.immediate() as db:
            db.execute(
                "INSERT OR REPLACE INTO bot_parked VALUES (?, ?, ?)",
                [incident_id, channel, requester],
            )

    def parked_in(self, incident_id: str) -> tuple[str, str] | None:
        """(channel, requester) of an incident whose thread could not be posted."""
        rows = self.store.query(
            "SELECT channel, requester FROM bot_parked WHERE incident_id = ?", [incident_id]
        )
        return (str(rows[0]["channel"]), str(rows[0]["requester"])) if rows else None

    def unpark(self, incident_id: str) -> None:
        with self.store.immediate() as db:
            db.execute("DELETE FROM bot_parked WHERE incident_id = ?", [incident_id])

    # ------------------------------------------------------------------ proposal cards

    def link_card(
        self, proposal_id: str, incident_id: str | None, where: MessageRef, thread_ts: str
    ) -> None:
        with self.store.immediate() as db:
            db.execute(
                "INSERT OR REPLACE INTO bot_cards VALUES (?, ?, ?, ?, ?)",
                [proposal_id, incident_id, where.channel, where.ts, thread_ts],
            )

    def card(self, proposal_id: str) -> MessageRef | None:
        rows = self.store.query(
            "SELECT channel, ts FROM bot_cards WHERE proposal_id = ?", [proposal_id]
        )
        return MessageRef(rows[0]["channel"], rows[0]["ts"]) if rows else None

    def card_thread(self, proposal_id: str) -> MessageRef | None:
        """The thread a card sits in (its parent message)."""
        rows = self.store.query(
            "SELECT channel, thread_ts FROM bot_cards WHERE proposal_id = ?", [proposal_id]
        )
        return MessageRef(rows[0]["channel"], rows[0]["thread_ts"]) if rows else None

    # ------------------------------------------------------------------ the stream cursor

    def cursor(self) -> int | None:
        rows = self.store.query("SELECT value FROM bot_state WHERE key = ?", [CURSOR])
        return int(rows[0]["value"]) if rows else None

    def set_cursor(self, seq: int) -> None:
        with self.store.immediate() as db:
            db.execute("INSERT OR REPLACE INTO bot_state VALUES (?, ?)", [CURSOR, str(seq)])
