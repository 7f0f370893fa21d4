"""What the follower reads from the store to draw a thread: a card's proposal with its
incident, its undo and when its write ran; the earlier card a proposal joins; where a card
is posted; the parts of an incident's summary.

Plain synchronous reads over the runtime (the follower runs them in its worker thread with
``Runtime.call``), kept apart from the follower so that it only decides what to post and
where, and these say what is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.links import MessageRef
from bot.runtime import Runtime
from incidents.model import Incident
from incidents.repository import IncidentEnvelope
from proposals import intake
from proposals.model import Proposal


@dataclass
class CardData:
    proposal: Proposal
    incident: Incident | None
    undo: Proposal | None
    ran_at: datetime | None = None  # when its write was applied (its undo entry's time)


def card_data(rt: Runtime, proposal_id: str) -> CardData:
    proposal = rt.service.get(proposal_id)
    incident = rt.incidents.get(proposal.incident_id) if proposal.incident_id else None
    undo = rt.service.get(proposal.undone_by) if proposal.undone_by else None
    entry = rt.service.stack.entries.get(proposal.undo_id) if proposal.undo_id else None
    ran_at = datetime.fromisoformat(entry.created_at) if entry else None
    return CardData(proposal, incident, undo, ran_at)


def batch_card(rt: Runtime, proposal: Proposal) -> MessageRef | None:
    """The card of an earlier proposal this one joins (``proposals.intake.batch_head``)."""
    if not proposal.requester.startswith("mcp:"):
        return None
    others = rt.service.repo.find(requester=proposal.requester, states=intake.WAITING, limit=50)
    on_cards: dict[str, int] = {}
    for other in others:
        card = rt.links.card(other.id)
        if card is not None:
            on_cards[other.id] = len(rt.links.proposals_at(card))
    head = intake.batch_head(proposal, others, on_cards)
    return rt.links.card(head) if head is not None else None


def card_place(rt: Runtime, proposal: Proposal) -> MessageRef | None:
    """Where a card is posted: an undo's in the thread of the card it undoes, any other in its
    incident's thread; None when it has neither (a terminal's proposal)."""
    if proposal.undo_entry is not None:
        entry = rt.service.stack.entries.get(proposal.undo_entry)
        original = entry.execution.proposal_id if entry else None
        if original:
            place = rt.links.card_thread(original)
            if place is not None:
                return place
    if proposal.incident_id:
        return rt.links.thread(proposal.incident_id)
    return None


def summary_parts(
    rt: Runtime, incident_id: str
) -> tuple[Incident, list[Proposal], list[IncidentEnvelope]]:
    """The incident, its proposals oldest first and its events: what its summary is drawn from."""
    incident = rt.incidents.get(incident_id)
    proposals = rt.service.by_incident(incident_id)
    events = rt.incidents.events(incident_id=incident_id, limit=2000)
    return incident, sorted(proposals, key=lambda p: p.created_at), events
