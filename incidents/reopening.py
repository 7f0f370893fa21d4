"""What undoing an ended incident's write means for the incident: re-opened, or left closed
and why. A pure rule over the incident, beside the one function that stores the outcome.

Why a rule of its own: an undo made after an incident ended (the Undo button on its card,
``/stratus undo``) used to leave the incident saying "resolved" over a namespace put back as
it was broken, and the next alert opened a second thread. The rule: undoing the fix that
resolved an incident re-opens it — the same incident, the same thread, which a later alert or
investigation of the namespace joins and carries on. Stratus does not look again by itself
right away: a person just chose to put the object back, and re-proposing (or, under an allow
rule, re-applying) the fix at once would fight them. Anything else is noted and left closed:
the write was not what resolved it, the incident had been escalated to people or cancelled,
or another incident is open on the namespace now.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from incidents.model import AGENT_SOURCE, FixUndone, Incident, IncidentState
from incidents.repository import IncidentEventType, IncidentRepository, StaleIncident
from proposals.model import ProposalState
from proposals.service import ProposalService

St = IncidentState
FIXES = ("fixed", "improved")  # the outcomes of an attempt whose change resolved an incident


@dataclass(frozen=True)
class Undone:
    """The facts: which write of the incident was undone, by which undo, who and when."""

    proposal_id: str
    undo_id: str
    by: str
    at: datetime


def decide(incident: Incident, undone: Undone, *, other_open: str | None) -> FixUndone | None:
    """What undoing ``undone`` does to ``incident`` (``other_open``: the id of another incident
    open on its namespace now). None: nothing to say — the incident is still open (its running
    attempts own their undos), or the write was none of its attempts'."""
    if incident.is_open:
        return None
    attempt = next((a for a in incident.attempts if undone.proposal_id in a.proposals), None)
    if attempt is None:
        return None

    def closed(why: str) -> FixUndone:
        return FixUndone(
            proposal_id=undone.proposal_id,
            undo_id=undone.undo_id,
            by=undone.by,
            at=undone.at,
            reopened=False,
            why=why,
        )

    if incident.state == St.CANCELLED:
        return closed("it had been cancelled")
    if incident.state == St.ESCALATED:
        return closed("it had been escalated to people, who own it")
    if incident.source == AGENT_SOURCE:
        return closed(f"it was opened by {incident.requester}'s proposal, whose client decides")
    if attempt.result not in FIXES:
        return closed(f"that write was not the fix that resolved it (attempt {attempt.number})")
    if other_open is not None:
        return closed(f"incident {other_open} is open on {incident.namespace} and takes it over")
    return FixUndone(
        proposal_id=undone.proposal_id,
        undo_id=undone.undo_id,
        by=undone.by,
        at=undone.at,
        reopened=True,
    )


def sentence(note: FixUndone) -> str:
    """The note as one neutral line for the timeline and logs (surfaces word their own)."""
    said = f"fix undone by {note.by} at {note.at:%H:%M} UTC; "
    return said + ("incident re-opened" if note.reopened else f"left closed because {note.why}")


def record(
    incidents: IncidentRepository, incident: Incident, note: FixUndone, *, now: datetime
) -> Incident:
    """Store the note on the incident (compare-and-set), re-opened into detecting when the rule
    says so, with a note event in the same transaction as the save."""
    update: dict[str, object] = {"fix_undone": note, "updated_at": now}
    if note.reopened:
        # The fix undone may be proposed again once a signal carries the incident on.
        undone = {a.candidate.key() for a in incident.attempts if note.proposal_id in a.proposals}
        tried = [key for key in incident.tried if key not in undone]
        # The health last measured was the fix's; it is not what the namespace shows now.
        update.update(state=St.DETECTING, mitigated_at=None, reason="", tried=tried, health_now={})
    changed = incident.model_copy(update=update)
    with incidents.store.immediate():
        saved = incidents.save(
            changed,
            expected_version=incident.version,
            actor=note.by,
            message=sentence(note),
            previous=incident.state,
        )
        incidents.note(saved, IncidentEventType.NOTE, actor=note.by, message=sentence(note))
    return saved


def after_undo(
    incidents: IncidentRepository, service: ProposalService, undo_id: str
) -> Incident | None:
    """An undo proposal was executed (from a card, ``/stratus undo`` or a terminal): what it
    means for the incident whose write it undid, decided by ``decide`` and stored on it. None:
    nothing to say (not an executed undo, no incident, the incident still open, or noted
    already)."""
    undo = service.get(undo_id)
    if undo.state != ProposalState.EXECUTED or undo.undo_entry is None:
        return None
    if undo.incident_id is None:
        return None
    written = service.by_incident(undo.incident_id)
    undone = next((p for p in written if p.undone_by == undo.id), None)
    if undone is None:
        return None
    facts = Undone(proposal_id=undone.id, undo_id=undo.id, by=undo.requester, at=undo.updated_at)
    for _ in range(8):
        incident = incidents.get(undo.incident_id)
        if incident.fix_undone is not None and incident.fix_undone.undo_id == undo.id:
            return None  # noted already (a retry, another process)
        with incidents.store.immediate():
            other = incidents.open_for(incident.namespace, cluster=incident.cluster)
            other_open = other.id if other is not None and other.id != incident.id else None
            note = decide(incident, facts, other_open=other_open)
            if note is None:
                return None
            try:
                return record(incidents, incident, note, now=incidents.store.clock.now())
            except StaleIncident:
                continue
    return None


def waits_for_a_signal(incident: Incident) -> bool:
    """A re-opened incident waits, untouched, for the next alert or investigation of its
    namespace, which carries it on (``decide`` says why it does not look again at once)."""
    return (
        incident.state == St.DETECTING
        and incident.fix_undone is not None
        and incident.fix_undone.reopened
    )
