"""The typed, versioned events of proposals, appended in the transaction of each change.

Surfaces render these and nothing else: the CLI prints what happened from the events since its
cursor, and the bot updates a card when an undo was made from the CLI. The envelope and the
stream are the store's (``store.events``), shared with incidents.
"""

from __future__ import annotations

import enum

from store import events
from store.db import Store

STREAM = "proposal"


class EventType(enum.StrEnum):
    PROPOSED = "proposal.proposed"  # created, with its plan and decision
    VOTED = "proposal.voted"  # a vote counted (quorum not met yet, or the deciding one)
    STATE_CHANGED = "proposal.state_changed"
    UNDO_DROPPED = "proposal.undo_dropped"  # its undo entry was taken off the stack


class ProposalEvent(events.EventBody):
    type: EventType
    proposal_id: str
    incident_id: str | None = None
    action: str
    target: str


Envelope = events.Envelope[ProposalEvent]


class ProposalEvents:
    def __init__(self, store: Store) -> None:
        self.stream = events.TypedStream(store, stream=STREAM, model=ProposalEvent)

    def append(self, event: ProposalEvent) -> int:
        return self.stream.append(event, subject=event.proposal_id)

    def since(
        self, seq: int = 0, *, proposal_id: str | None = None, limit: int = 1000
    ) -> list[Envelope]:
        return self.stream.since(seq, subject=proposal_id, limit=limit)

    def last_seq(self) -> int:
        return self.stream.last_seq()
