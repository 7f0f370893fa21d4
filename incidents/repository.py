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
from typing import Any

from pydantic import ValidationError

from incidents.model import Incident, IncidentState
from store import events, versioned
from store.audit import AuditLog
from store.db import Store
from store.errors import NotFound, Remedy, Stale, StratusError, Tampered

STREAM = "incident"


log = logging.getLogger("stratus.incidents")


class IncidentError(StratusError, code="incident"):
    """Anything the incident store or workflow refuses."""


class IncidentNotFound(NotFound, IncidentError):
    """No stored incident has the id."""


class IncidentUnreadable(Tampered, IncidentError, remedy=Remedy.NONE):
    """A stored incident whose body cannot be read (edited outside Stratus, or by a newer
    version): nothing acts on it, and the message says which one."""


class IncidentClosed(IncidentError, code="incident_closed"):
    """The incident has ended (``details``: its ``state`` and ``reason``): there is nothing
    to resume or cancel. An escalated one can be looked at again (``details["reopenable"]``)."""


class NamespaceTaken(IncidentError, code="incident_open_elsewhere"):
    """Another incident (``details["open"]``) is open in the namespace: at most one is."""


class StaleIncident(Stale, IncidentError):
    """Someone else moved the incident first (compare-and-set lost)."""


class IncidentEventType(enum.StrEnum):
    OPENED = "incident.opened"
    STATE_CHANGED = "incident.state_changed"
    FINDINGS = "incident.findings"  # what the analyzers saw
    DIAGNOSED = "incident.diagnosed"
    PLANNED = "incident.planned"  # ranked candidates
    ATTEMPT = "incident.attempt"  # an attempt started, with the health before
    VERIFIED = "incident.verified"  # health after, the verdict and its parts
    NOTE = "incident.note"  # planner fallbacks, waits, joins
    ALERT_FIRED = "incident.alert_fired"  # Alertmanager: alerts of a group fired (incidents.alerts)
    ALERT_RESOLVED = "incident.alert_resolved"  # … and cleared


class IncidentEvent(events.EventBody):
    type: IncidentEventType
    incident_id: str
    namespace: str


IncidentEnvelope = events.Envelope[IncidentEvent]


TABLE = versioned.Table(
    "incidents", "incident", ("state", "body", "version", "updated_at", "open"), stale=StaleIncident
)


class IncidentRepository:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.stream = events.TypedStream(store, stream=STREAM, model=IncidentEvent)
        self.audit = AuditLog(store)

    # ------------------------------------------------------------------ writes

    def insert(self, incident: Incident) -> Incident | None:
        """Store a new incident; returns the open incident of its namespace instead when there
        is one (the caller joins it)."""
        with self.store.immediate() as db:
            existing = self.open_for(incident.namespace, cluster=incident.cluster)
            if existing is not None:
                return existing
            try:
                db.table("incidents").insert(self._columns(incident))
            except sqlite3.IntegrityError:
                return self.open_for(incident.namespace, cluster=incident.cluster)
            self._append(incident, IncidentEventType.OPENED, None, incident.requester, "")
            self._audit(incident, incident.requester, {"state": incident.state.value})
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
            TABLE.save(db, self._columns(saved), expected=expected_version)
            if previous is not None and previous != saved.state:
                self._append(saved, IncidentEventType.STATE_CHANGED, previous, actor, message)
                moved = {"from": previous.value, "to": saved.state.value, "message": message}
                self._audit(saved, actor, moved)
                log.info(
                    "incident %s in %s: %s -> %s",
                    saved.id,
                    saved.namespace,
                    previous.value,
                    saved.state.value,
                    extra={"incident_id": saved.id},
                )
        return saved

    def _audit(self, incident: Incident, actor: str, payload: dict[str, Any]) -> None:
        """The audit row of an incident's change, in the caller's transaction."""
        where = f"namespace/{incident.namespace}"
        named = {"cluster": incident.cluster} if incident.cluster else {}
        self.audit.append(
            actor=actor,
            event="incident",
            subject=where,
            payload={"incident": incident.id, **named, **payload},
        )

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
        return self.stream.append(event, subject=incident.id)

    # ------------------------------------------------------------------ reads

    def get(self, incident_id: str) -> Incident:
        rows = self.store.query(
            "SELECT body FROM incidents WHERE id = ? AND body IS NOT NULL", [incident_id]
        )
        if not rows:
            # An empty id names nothing: "no incident " would say nothing after it.
            said = (
                f"no incident {incident_id}" if incident_id.strip() else "the incident id is empty"
            )
            raise IncidentNotFound(said, subject=incident_id, details={"record": "incident"})
        return _read(incident_id, rows[0]["body"])

    def open_for(self, namespace: str, *, cluster: str = "") -> Incident | None:
        """The open incident of ``namespace`` in ``cluster`` (one per namespace of a cluster)."""
        rows = self.store.query(
            "SELECT id, body FROM incidents WHERE namespace = ? AND cluster = ? AND open = 1 "
            "AND body IS NOT NULL",
            [namespace, cluster],
        )
        # An open incident that cannot be read still holds its namespace: refusing to start
        # another beside it is safer than guessing it is gone.
        return _read(rows[0]["id"], rows[0]["body"]) if rows else None

    def latest_for(self, namespace: str, *, cluster: str = "") -> Incident | None:
        """The namespace's newest incident, open or not (None when it has none readable)."""
        rows = self.store.query(
            "SELECT id, body FROM incidents WHERE namespace = ? AND cluster = ? "
            "AND body IS NOT NULL ORDER BY created_at DESC, id LIMIT 1",
            [namespace, cluster],
        )
        if not rows:
            return None
        try:
            return _read(rows[0]["id"], rows[0]["body"])
        except IncidentUnreadable:
            return None

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
        return self.stream.since(seq, subject=incident_id, limit=limit)

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
            "cluster": incident.cluster,
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
            details={"record": "incident", "problems": [str(first.get("msg", "invalid"))]},
        ) from error
