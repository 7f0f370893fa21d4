"""The typed, versioned events of proposals, appended in the transaction of each change.

Surfaces render these and nothing else: the CLI prints what happened from the events since its
cursor, and the bot updates a card when an undo was made from the CLI.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from store.db import Store
from store.events import EventStore

STREAM = "proposal"


class EventType(enum.StrEnum):
    PROPOSED = "proposal.proposed"  # created, with its plan and decision
    VOTED = "proposal.voted"  # a vote counted (quorum not met yet, or the deciding one)
    STATE_CHANGED = "proposal.state_changed"
    UNDO_DROPPED = "proposal.undo_dropped"  # its undo entry was taken off the stack


class ProposalEvent(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    type: EventType
    proposal_id: str
    incident_id: str | None = None
    action: str
    target: str
    state: str
    previous_state: str | None = None
    actor: str
    message: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class Envelope:
    """An event with its place in the stream."""

    seq: int
    at: str
    event: ProposalEvent


class ProposalEvents:
    def __init__(self, store: Store) -> None:
        self.rows = EventStore(store)

    def append(self, event: ProposalEvent) -> int:
        return self.rows.append(
            stream=STREAM,
            subject=event.proposal_id,
            type=event.type.value,
            version=event.schema_version,
            payload=event.model_dump(mode="json"),
        )

    def since(
        self, seq: int = 0, *, proposal_id: str | None = None, limit: int = 1000
    ) -> list[Envelope]:
        return [
            Envelope(row.seq, row.at, ProposalEvent.model_validate(row.payload))
            for row in self.rows.since(seq, stream=STREAM, subject=proposal_id, limit=limit)
        ]

    def last_seq(self) -> int:
        return self.rows.last_seq()
