"""Which Slack message shows which incident or proposal, and how far the event stream was
rendered — kept in the store, so a restarted bot (or a second one) updates the same cards.

The bot owns these tables (made by the store's migration 12); nothing else reads them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from store.db import Store

CURSOR = "cursor"
# A card whose "after" figures were read before the change could show in them, and when to
# render it again: kept in the store so a bot restarted in between reads them again too.
REFRESH = "refresh:"
SUMMARY = "summary:"  # + incident id → "channel ts" of the incident's one summary message
# + "channel ts" of a thread Slack says is gone (its parent deleted, the playground restarted
# empty) → the incident it showed: a post aimed at it goes to the incident's new thread.
GONE = "gone:"
CHART = "chart:"  # + proposal id → the chart file its card shows (``ChartFile`` as JSON)


@dataclass(frozen=True)
class MessageRef:
    channel: str
    ts: str


@dataclass(frozen=True)
class ChartFile:
    """The chart a card shows: the uploaded file (or why the upload failed) and the digest of
    what it draws, so the same picture is never uploaded twice."""

    file_id: str
    digest: str
    alt: str = ""
    why: str = ""


class Links:
    def __init__(self, store: Store) -> None:
        self.store = store

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

    def relink_thread(self, incident_id: str, gone: MessageRef, where: MessageRef) -> None:
        """The incident's thread ``gone`` no longer exists in Slack: it lives at ``where``
        from now on (its summary, posted in the old thread, is posted again when due)."""
        with self.store.immediate() as db:
            db.execute(
                "UPDATE bot_threads SET channel = ?, ts = ? WHERE incident_id = ?",
                [where.channel, where.ts, incident_id],
            )
            db.execute(
                "INSERT OR REPLACE INTO bot_state VALUES (?, ?)",
                [f"{GONE}{gone.channel} {gone.ts}", incident_id],
            )
            db.execute("DELETE FROM bot_state WHERE key = ?", [SUMMARY + incident_id])

    def forget_thread(self, incident_id: str, gone: MessageRef) -> None:
        """The thread is gone and no new one could be posted: no link rather than a dead one."""
        with self.store.immediate() as db:
            db.execute("DELETE FROM bot_threads WHERE incident_id = ?", [incident_id])
            db.execute(
                "INSERT OR REPLACE INTO bot_state VALUES (?, ?)",
                [f"{GONE}{gone.channel} {gone.ts}", incident_id],
            )
            db.execute("DELETE FROM bot_state WHERE key = ?", [SUMMARY + incident_id])

    def gone_thread(self, where: MessageRef) -> str | None:
        """The incident a thread Slack lost showed, if it was one of ours."""
        rows = self.store.query(
            "SELECT value FROM bot_state WHERE key = ?", [f"{GONE}{where.channel} {where.ts}"]
        )
        return str(rows[0]["value"]) if rows else None

    def continued(self, incident_id: str) -> bool:
        """Whether the incident's thread was lost once and it carries on in a new one."""
        rows = self.store.query(
            "SELECT 1 FROM bot_state WHERE substr(key, 1, ?) = ? AND value = ? LIMIT 1",
            [len(GONE), GONE, incident_id],
        )
        return bool(rows)

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

    def card_at(self, where: MessageRef) -> str | None:
        """The proposal whose card is the message ``where``."""
        rows = self.store.query(
            "SELECT proposal_id FROM bot_cards WHERE channel = ? AND ts = ?",
            [where.channel, where.ts],
        )
        return str(rows[0]["proposal_id"]) if rows else None

    def proposals_at(self, where: MessageRef) -> list[str]:
        """Every proposal the message ``where`` is the card of (a batch: several), oldest
        first."""
        rows = self.store.query(
            "SELECT proposal_id FROM bot_cards WHERE channel = ? AND ts = ? ORDER BY rowid",
            [where.channel, where.ts],
        )
        return [str(r["proposal_id"]) for r in rows]

    def cards_in(self, thread: MessageRef) -> list[str]:
        """The proposals whose cards were posted in ``thread``, oldest first."""
        rows = self.store.query(
            "SELECT proposal_id FROM bot_cards WHERE channel = ? AND thread_ts = ? ORDER BY rowid",
            [thread.channel, thread.ts],
        )
        return [str(r["proposal_id"]) for r in rows]

    def forget_card(self, proposal_id: str) -> None:
        """The card's message is gone from Slack: the card is posted again, not edited."""
        with self.store.immediate() as db:
            db.execute("DELETE FROM bot_cards WHERE proposal_id = ?", [proposal_id])

    # ------------------------------------------------------------------ cards to read again

    # Kept as ``refresh:<proposal id>`` keys of ``bot_state`` (no table of its own needed).

    def refresh_card_at(self, proposal_id: str, due: float) -> None:
        """Render ``proposal_id``'s card again at ``due`` (Unix seconds)."""
        with self.store.immediate() as db:
            db.execute(
                "INSERT OR REPLACE INTO bot_state VALUES (?, ?)",
                [REFRESH + proposal_id, repr(due)],
            )

    def refreshes(self) -> dict[str, float]:
        """Every card waiting to be rendered again, and when."""
        rows = self.store.query(
            "SELECT key, value FROM bot_state WHERE substr(key, 1, ?) = ?",
            [len(REFRESH), REFRESH],
        )
        return {str(r["key"])[len(REFRESH) :]: float(r["value"]) for r in rows}

    def refreshed(self, proposal_id: str) -> None:
        with self.store.immediate() as db:
            db.execute("DELETE FROM bot_state WHERE key = ?", [REFRESH + proposal_id])

    # ------------------------------------------------------------------ a card's chart

    def show_chart(self, proposal_id: str, chart: ChartFile) -> None:
        with self.store.immediate() as db:
            db.execute(
                "INSERT OR REPLACE INTO bot_state VALUES (?, ?)",
                [CHART + proposal_id, json.dumps(asdict(chart))],
            )

    def chart(self, proposal_id: str) -> ChartFile | None:
        rows = self.store.query("SELECT value FROM bot_state WHERE key = ?", [CHART + proposal_id])
        if not rows:
            return None
        try:
            return ChartFile(**json.loads(str(rows[0]["value"])))
        except (ValueError, TypeError):
            return None  # unreadable: drawn and uploaded again

    # ------------------------------------------------------------------ incident summaries

    def link_summary(self, incident_id: str, where: MessageRef) -> None:
        with self.store.immediate() as db:
            db.execute(
                "INSERT OR REPLACE INTO bot_state VALUES (?, ?)",
                [SUMMARY + incident_id, f"{where.channel} {where.ts}"],
            )

    def summary(self, incident_id: str) -> MessageRef | None:
        """The incident's summary message, once posted: edited in place from then on."""
        rows = self.store.query(
            "SELECT value FROM bot_state WHERE key = ?", [SUMMARY + incident_id]
        )
        if not rows:
            return None
        channel, _, ts = str(rows[0]["value"]).partition(" ")
        return MessageRef(channel, ts)

    def forget_summary(self, incident_id: str) -> None:
        """The summary's message is gone from Slack: the next one is posted, not edited."""
        with self.store.immediate() as db:
            db.execute("DELETE FROM bot_state WHERE key = ?", [SUMMARY + incident_id])

    # ------------------------------------------------------------------ the stream cursor

    def cursor(self) -> int | None:
        rows = self.store.query("SELECT value FROM bot_state WHERE key = ?", [CURSOR])
        return int(rows[0]["value"]) if rows else None

    def set_cursor(self, seq: int) -> None:
        with self.store.immediate() as db:
            db.execute("INSERT OR REPLACE INTO bot_state VALUES (?, ?)", [CURSOR, str(seq)])
