"""Parking: an incident that could not reach the surface it was asked from.

When its Slack thread cannot be posted, the incident stays where it is, visibly parked with
a reason, until a retry succeeds (``set_parked`` with no reason) or ``config.park_seconds``
pass — then it is escalated (``release_parked``), so that its namespace is free for a new
investigation. Functions over the attempts' ``Deps``; ``IncidentWorkflow`` is the facade the
surfaces call (``park``, ``unpark``, ``release_parked``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from incidents import moves
from incidents.model import Incident, IncidentState
from incidents.moves import AGENT, Deps
from incidents.repository import IncidentEventType, StaleIncident

St = IncidentState


def set_parked(d: Deps, incident_id: str, *, reason: str, actor: str) -> Incident:
    """Park the incident with ``reason`` ('' carries it on); the time it was first parked is
    kept while it stays parked, since the bound counts from then."""
    for _ in range(8):
        incident = d.incidents.get(incident_id)
        if not incident.is_open or incident.parked == reason:
            return incident
        now = d.clock.now()
        updates: dict[str, object] = {"parked": reason, "updated_at": now}
        if not reason:
            updates["parked_at"] = None
        elif incident.parked_at is None:
            updates["parked_at"] = now
        try:
            saved = d.incidents.save(
                incident.model_copy(update=updates),
                expected_version=incident.version,
                actor=actor,
            )
        except StaleIncident:
            continue
        d.incidents.note(
            saved,
            IncidentEventType.NOTE,
            actor=actor,
            message=f"parked: {reason}" if reason else "its thread was posted; carrying on",
        )
        return saved
    return d.incidents.get(incident_id)


def release_parked(d: Deps) -> list[Incident]:
    """End every incident parked for longer than ``config.park_seconds``: escalated (a
    person asked and was never answered), its namespace free for a new investigation."""
    now = d.clock.now()
    ended = []
    for incident in d.incidents.recent(limit=500, open_only=True):
        if parked_too_long(incident, now, d.config.park_seconds):
            released = end_parked(d, incident)
            if released is not None:
                ended.append(released)
    return ended


def release_parked_in(d: Deps, namespace: str, *, cluster: str = "") -> None:
    """End the namespace's open incident if it was parked past the bound, so that a new
    investigation (a command's, an alert's) opens its own instead of joining it."""
    existing = d.incidents.open_for(namespace, cluster=cluster)
    if existing is not None and parked_too_long(existing, d.clock.now(), d.config.park_seconds):
        end_parked(d, existing)


def end_parked(d: Deps, incident: Incident) -> Incident | None:
    """Escalate a parked incident, its open proposals withdrawn first; None when someone
    retried or moved it meanwhile."""
    minutes = max(1, round(d.config.park_seconds / 60))
    moves.withdraw_open(
        d,
        incident,
        actor=AGENT,
        why=f"incident {incident.id} ended: its thread was never posted",
    )
    try:
        return moves.move(
            d,
            incident,
            St.ESCALATED,
            message=f"parked for {minutes} min without reaching its thread "
            f"({incident.parked}); ended so that the namespace can be investigated again",
            reason="unreachable",
        )
    except StaleIncident:
        return None  # someone retried or moved it meanwhile: judged next time


def parked_too_long(incident: Incident, now: datetime, bound: float) -> bool:
    """Whether an open incident has been parked for ``bound`` seconds or more."""
    return (
        incident.is_open
        and bool(incident.parked)
        and incident.parked_at is not None
        and now - incident.parked_at >= timedelta(seconds=bound)
    )
