"""Incident memory: what past incidents on the same resources or mechanisms learned.

Each finished attempt of an earlier incident is an outcome: its mechanism, the candidate it
tried, and whether it fixed the namespace, was undone, or was refused by a person. Planners rank
with these (an action that worked before ranks higher; one that was undone, lower), and the
diagnosis shows them to people as short lines naming who approved what.
"""

from __future__ import annotations

from incidents.model import Attempt, Incident
from incidents.repository import IncidentRepository

LOOKBACK = 200  # recent incidents searched
LINES = 5  # history lines shown with a diagnosis

Outcome = tuple[str, str, str]  # (mechanism, Candidate.key(), "fixed" | "undone" | "rejected")


def taught(attempt: Attempt) -> str | None:
    """What an earlier attempt teaches, from its outcome word (``Attempt.result``, which reads
    incidents stored before the word too): a fix kept after a step was refused is a fix, and
    a fix TNR kept against a too-early verdict teaches nothing either way."""
    outcome = attempt.result
    if outcome in ("fixed", "improved"):
        return "fixed"
    if outcome == "fix kept":
        return None
    if outcome in ("undone", "cancelled") or attempt.verdict in ("worse", "same"):
        return "undone"
    if outcome in ("denied", "rejected"):
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
            kind = taught(attempt)
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
