"""Incidents in the store, and their typed events in the shared event stream.

An incident changes only by compare-and-set on ``version``; the event describing the change is
appended in the same transaction, so a surface following the stream never sees one without
the other. At most one incident per namespace is open (a unique partial index): a second
``investigate`` of a namespace joins the open one instead of racing it.
"""

from __future__ import annotations

import enum
import logging
import sqlite3
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.incident import Incident, IncidentState
from store.audit import AuditLog
from store.db import Store
from store.errors import Remedy, StratusError
from store.events import EventStore

STREAM = "incident"


log = logging.getLogger("stratus.incidents")


class IncidentError(StratusError):
    code = "incident"


class IncidentNotFound(IncidentError):
    code = "incident_not_found"
    default_remedy = Remedy.FIX_INPUT


class IncidentUnreadable(IncidentError):
    """A stored incident whose body cannot be read (edited outside Stratus, or by a newer
    version): nothing acts on it, and the message says which one."""

    code = "incident_unreadable"
    default_remedy = Remedy.NONE


class StaleIncident(IncidentError):
    code = "stale_incident"
    default_remedy = Remedy.RETRY


class IncidentEventType(enum.StrEnum):
    OPENED = "incident.opened"
    STATE_CHANGED = "incident.state_changed"
    FINDINGS = "incident.findings"  # what the analyzers saw
    DIAGNOSED = "incident.diagnosed"
    PLANNED = "incident.planned"  # ranked candidates
    ATTEMPT = "incident.attempt"  # an attempt started, with the health before
    VERIFIED = "incident.verified"  # health after, the verdict and its parts
    NOTE = "incident.note"  # planner fallbacks, waits, joins
    ALERT_FIRED = "incident.alert_fired"  # Alertmanager: alerts of a group fired (agents.alerts)
    ALERT_RESOLVED = "incident.alert_resolved"  # … and cleared


class IncidentEvent(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    type: IncidentEventType
    incident_id: str
    namespace: str
    state: str
    previous_state: str | None = None
    actor: str
    message: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class IncidentEnvelope:
    seq: int
    at: str
    event: IncidentEvent


class IncidentRepository:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.rows = EventStore(store)
        self.audit = AuditLog(store)

    # ------------------------------------------------------------------ writes

    def insert(self, incident: Incident) -> Incident | None:
        """Store a new incident; returns the open incident of its namespace instead when there
        is one (the caller joins it)."""
        with self.store.immediate() as db:
            existing = self.open_for(incident.namespace)
            if existing is not None:
                return existing
            try:
                db.table("incidents").insert(self._columns(incident))
            except sqlite3.IntegrityError:
                return self.open_for(incident.namespace)
            self._append(incident, IncidentEventType.OPENED, None, incident.requester, "")
            self.audit.append(
                actor=incident.requester,
                event="incident",
                subject=f"namespace/{incident.namespace}",
                payload={"incident": incident.id, "state": incident.state.value},
            )
        return None

    def save(
        self,
        incident: Incident,
        *,
        expected_version: int,
        actor: str,
        message: str = "",
        previous: IncidentState | None = None,
    ) -> Incident:
        """Store the next version (compare-and-set) with a state-change event when it moved."""
        saved = incident.model_copy(update={"version": expected_version + 1})
        with self.store.immediate() as db:
            cursor = db.execute(
                "UPDATE incidents SET state = ?, body = ?, version = ?, updated_at = ?, open = ? "
                "WHERE id = ? AND version = ?",
                [
                    saved.state.value,
                    saved.body(),
                    saved.version,
                    saved.updated_at.isoformat(),
                    1 if saved.is_open else 0,
                    saved.id,
                    expected_version,
                ],
            )
            if not cursor.rowcount:
                raise StaleIncident(
                    f"incident {incident.id} was changed by someone else first",
                    subject=incident.id,
                )
            if previous is not None and previous != saved.state:
                self._append(saved, IncidentEventType.STATE_CHANGED, previous, actor, message)
                self.audit.append(
                    actor=actor,
                    event="incident",
                    subject=f"namespace/{saved.namespace}",
                    payload={
                        "incident": saved.id,
                        "from": previous.value,
                        "to": saved.state.value,
                        "message": message,
                    },
                )
        return saved

    def note(
        self,
        incident: Incident,
        type: IncidentEventType,
        *,
        actor: str,
        message: str = "",
        data: dict[str, Any] | None = None,
    ) -> int:
        """An event without a state change (findings, a plan, a verdict, a fallback)."""
        return self._append(incident, type, None, actor, message, data)

    def _append(
        self,
        incident: Incident,
        type: IncidentEventType,
        previous: IncidentState | None,
        actor: str,
        message: str,
        data: dict[str, Any] | None = None,
    ) -> int:
        event = IncidentEvent(
            type=type,
            incident_id=incident.id,
            namespace=incident.namespace,
            state=incident.state.value,
            previous_state=previous.value if previous else None,
            actor=actor,
            message=message,
            data=data or {},
        )
        return self.rows.append(
            stream=STREAM,
            subject=incident.id,
            type=type.value,
            version=event.schema_version,
            payload=event.model_dump(mode="json"),
        )

    # ------------------------------------------------------------------ reads

    def get(self, incident_id: str) -> Incident:
        rows = self.store.query(
            "SELECT body FROM incidents WHERE id = ? AND body IS NOT NULL", [incident_id]
        )
        if not rows:
            raise IncidentNotFound(f"no incident {incident_id}", subject=incident_id)
        return _read(incident_id, rows[0]["body"])

    def open_for(self, namespace: str) -> Incident | None:
        rows = self.store.query(
            "SELECT id, body FROM incidents WHERE namespace = ? AND open = 1 AND body IS NOT NULL",
            [namespace],
        )
        # An open incident that cannot be read still holds its namespace: refusing to start
        # another beside it is safer than guessing it is gone.
        return _read(rows[0]["id"], rows[0]["body"]) if rows else None

    def recent(self, *, limit: int = 50, open_only: bool = False) -> list[Incident]:
        """The newest incidents; one whose body cannot be read is left out (and logged), so
        that one edited row cannot stop every listing."""
        sql = "SELECT id, body FROM incidents WHERE body IS NOT NULL"
        if open_only:
            sql += " AND open = 1"
        sql += " ORDER BY created_at DESC, id LIMIT ?"
        found = []
        for row in self.store.query(sql, [limit]):
            try:
                found.append(_read(row["id"], row["body"]))
            except IncidentUnreadable as unreadable:
                log.warning("%s", unreadable.message)
        return found

    def events(
        self, seq: int = 0, *, incident_id: str | None = None, limit: int = 1000
    ) -> list[IncidentEnvelope]:
        return [
            IncidentEnvelope(row.seq, row.at, IncidentEvent.model_validate(row.payload))
            for row in self.rows.since(seq, stream=STREAM, subject=incident_id, limit=limit)
        ]

    @staticmethod
    def _columns(incident: Incident) -> dict[str, Any]:
        return {
            "id": incident.id,
            "namespace": incident.namespace,
            "state": incident.state.value,
            "requested_by": incident.requester,
            "created_at": incident.created_at.isoformat(),
            "updated_at": incident.updated_at.isoformat(),
            "data": None,
            "version": incident.version,
            "body": incident.body(),
            "open": 1 if incident.is_open else 0,
        }


def _read(incident_id: str, body: str) -> Incident:
    try:
        return Incident.model_validate_json(body)
    except ValidationError as error:
        first = error.errors()[0] if error.errors() else {"msg": str(error)}
        raise IncidentUnreadable(
            f"incident {incident_id} cannot be read (its stored record was changed outside "
            f"Stratus, or by a newer version: {first.get('msg', 'invalid')}); nothing acts on it",
            subject=incident_id,
        ) from error
