"""Incident memory: what past incidents on the same resources or mechanisms learned.

Each finished attempt of an earlier incident is an outcome: its mechanism, the candidate it
tried, and whether it fixed the namespace, was undone, or was refused by a person. Planners rank
with these (an action that worked before ranks higher; one that was undone, lower), and the
diagnosis shows them to people as short lines naming who approved what.
"""

from __future__ import annotations

from agents.incident import Attempt, Incident
from agents.incident_store import IncidentRepository

LOOKBACK = 200  # recent incidents searched
LINES = 5  # history lines shown with a diagnosis

Outcome = tuple[str, str, str]  # (mechanism, Candidate.key(), "fixed" | "undone" | "rejected")


def _kind(attempt: Attempt) -> str | None:
    outcome = attempt.outcome
    if outcome in ("fixed", "improved"):
        return "fixed"
    if outcome in ("undone", "cancelled") or attempt.verdict in ("worse", "same"):
        return "undone"
    if outcome.startswith(("denied", "rejected")) or " rejected" in outcome:
        return "rejected"
    return None


def past_outcomes(
    incidents: IncidentRepository, current: Incident
) -> tuple[list[Outcome], list[str]]:
    """Outcomes of earlier incidents (not this one), and history lines for people."""
    outcomes: list[Outcome] = []
    lines: list[str] = []
    for incident in incidents.recent(limit=LOOKBACK):
        if incident.id == current.id:
            continue
        for attempt in incident.attempts:
            kind = _kind(attempt)
            if kind is None:
                continue
            mechanism = attempt.candidate.mechanism or (
                incident.diagnosis.mechanism if incident.diagnosis else ""
            )
            outcomes.append((mechanism, attempt.candidate.key(), kind))
            if len(lines) < LINES and incident.namespace == current.namespace:
                when = incident.created_at.strftime("%Y-%m-%d %H:%M")
                lines.append(
                    f"{incident.id} ({when}): {mechanism or 'unknown'} — "
                    f"{attempt.candidate.intent} → {kind}"
                )
    return outcomes, lines
