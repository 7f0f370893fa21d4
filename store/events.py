"""The event stream: an append-only, ordered log of state changes, read with a cursor.

Each event is appended inside the transaction of the change it describes, so a reader never
sees a change without its event or an event without its change. ``since(seq)`` returns what
came after a cursor; surfaces keep the last ``seq`` they rendered.

One envelope for every aggregate: an event says who (``actor``) moved what (``state``, from
``previous_state``), in a sentence of facts (``message``) with structured ``data``; each
aggregate's model (``proposals.events.ProposalEvent``, the incident's ``IncidentEvent``) adds
only its own id fields and its ``type`` enum to ``EventBody``, and reads and writes through a
``TypedStream``, which hands back ``Envelope``s: the event with its place (``seq``) and time.

Surfaces render events ("approved by cli:bob"), so an event someone inserted or edited in the
file would put words in Stratus's mouth. Each row carries a ``seal`` (``store.integrity``: an
HMAC under ``STRATUS_AUDIT_KEY``) over its place in the stream (``seq``) and everything it
says. ``since`` returns only events whose seal holds — a copied, replayed or edited event is
never rendered — and ``forged`` lists the others for ``stratus audit verify``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from store import integrity
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


def event_seal(
    *, seq: int, at: str, stream: str, subject: str, type: str, version: int, payload: str
) -> str:
    """What an event's seal binds: its place in the stream and all it says."""
    return integrity.digest(
        {
            "record": "event",
            "seq": seq,
            "at": at,
            "stream": stream,
            "subject": subject,
            "type": type,
            "version": version,
            "payload": payload,
        }
    )


def _problem(row: dict[str, Any]) -> str | None:
    """Why a stored event row is not one Stratus wrote (None: its seal holds)."""
    seal = row.get("seal")
    if not seal:
        return "it carries no seal (stored before events were sealed, or inserted)"
    try:
        expected = event_seal(
            seq=int(row["seq"]),
            at=str(row["at"]),
            stream=str(row["stream"]),
            subject=str(row["subject"]),
            type=str(row["type"]),
            version=int(row["version"]),
            payload=str(row["payload"]),
        )
    except (TypeError, ValueError):
        return "its columns are not an event's"
    if not integrity.matches_digest(expected, str(seal)):
        return "it was inserted, copied or edited outside Stratus (its seal does not match)"
    try:
        payload = json.loads(row["payload"])
    except ValueError:
        return "its payload is not JSON"
    return None if isinstance(payload, dict) else "its payload is not an object"


class EventStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    def append(
        self, *, stream: str, subject: str, type: str, version: int, payload: dict[str, Any]
    ) -> int:
        """Append one event, sealed; joins the caller's transaction when there is one."""
        body = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
        with self.store.immediate() as db:
            # The seal binds the row's seq, so the seq is chosen here (under the write lock)
            # as AUTOINCREMENT would choose it: never one used before, even if since deleted.
            seq = int(
                db.execute(
                    "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'),"
                    " 0), COALESCE((SELECT MAX(seq) FROM events), 0)) + 1"
                ).fetchone()[0]
            )
            at = self.store.now()
            seal = event_seal(
                seq=seq,
                at=at,
                stream=stream,
                subject=subject,
                type=type,
                version=version,
                payload=body,
            )
            db.execute(
                "INSERT INTO events (seq, at, stream, subject, type, version, payload, seal) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [seq, at, stream, subject, type, version, body, seal],
            )
            return seq

    def since(
        self,
        seq: int = 0,
        *,
        stream: str | None = None,
        subject: str | None = None,
        limit: int = 1000,
    ) -> list[EventRow]:
        """Events after ``seq`` whose seal holds, oldest first, at most ``limit``. Rows that
        fail their seal are skipped (read past, so a run of them cannot stall a reader)."""
        found: list[EventRow] = []
        cursor = seq
        while len(found) < limit:
            batch = self._rows(cursor, stream=stream, subject=subject, limit=limit)
            for r in batch:
                if _problem(r) is None:
                    found.append(
                        EventRow(
                            r["seq"],
                            r["at"],
                            r["stream"],
                            r["subject"],
                            r["type"],
                            r["version"],
                            json.loads(r["payload"]),
                        )
                    )
            if len(batch) < limit:
                break
            cursor = int(batch[-1]["seq"])
        return found[:limit]

    def _rows(
        self, seq: int, *, stream: str | None, subject: str | None, limit: int
    ) -> list[dict[str, Any]]:
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
        return self.store.query(sql, params)

    def forged(self) -> tuple[list[str], int]:
        """Every stored event checked: one line per event Stratus did not write as it reads
        now (surfaces never show these), and how many carry no seal at all (events stored
        before they were sealed are among them)."""
        found: list[str] = []
        unsealed = 0
        cursor = 0
        while True:
            batch = self._rows(cursor, stream=None, subject=None, limit=5000)
            for r in batch:
                problem = _problem(r)
                if problem is None:
                    continue
                if not r.get("seal"):
                    unsealed += 1
                    continue
                found.append(f"event {r['seq']} ({r['type']} about {r['subject']}): {problem}")
            if len(batch) < 5000:
                return found, unsealed
            cursor = int(batch[-1]["seq"])

    def last_seq(self) -> int:
        return int(self.store.query("SELECT COALESCE(MAX(seq), 0) AS n FROM events")[0]["n"])


class EventBody(BaseModel):
    """What every typed event says; an aggregate's model adds its ids and its ``type``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    type: str
    state: str
    previous_state: str | None = None
    actor: str
    message: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


E = TypeVar("E", bound=EventBody)


@dataclass(frozen=True)
class Envelope(Generic[E]):
    """A typed event with its place in the stream and the time it was stored."""

    seq: int
    at: str
    event: E


class TypedStream(Generic[E]):
    """One aggregate's stream (``stream``) of ``model`` events, each about one ``subject``
    (the aggregate's id)."""

    def __init__(self, store: Store, *, stream: str, model: type[E]) -> None:
        self.rows = EventStore(store)
        self.stream = stream
        self.model = model

    def append(self, event: E, *, subject: str) -> int:
        return self.rows.append(
            stream=self.stream,
            subject=subject,
            type=str(event.type),
            version=event.schema_version,
            payload=event.model_dump(mode="json"),
        )

    def since(
        self, seq: int = 0, *, subject: str | None = None, limit: int = 1000
    ) -> list[Envelope[E]]:
        rows = self.rows.since(seq, stream=self.stream, subject=subject, limit=limit)
        return [self.envelope(row) for row in rows]

    def envelope(self, row: EventRow) -> Envelope[E]:
        """A row of this stream (read with ``EventStore.since`` across streams, as a surface
        following every aggregate does) as its typed event."""
        return Envelope(row.seq, row.at, self.model.model_validate(row.payload))

    def last_seq(self) -> int:
        return self.rows.last_seq()
