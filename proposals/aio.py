"""The async facade of the proposal service, for the bot's event loop.

The core is synchronous (SQLite and the Kubernetes client are); every call here runs it in a
worker thread so a slow API server never blocks the loop that must acknowledge Slack within
three seconds. Same methods, same errors.
"""

from __future__ import annotations

import asyncio
from typing import Any

from proposals.events import Envelope
from proposals.model import Choice, Proposal
from proposals.service import ProposalService, UndoRequest
from store.records import UndoEntry


class AsyncProposalService:
    def __init__(self, service: ProposalService) -> None:
        self.service = service

    async def propose(self, **kwargs: Any) -> Proposal:
        return await asyncio.to_thread(lambda: self.service.propose(**kwargs))

    async def propose_undo(self, request: UndoRequest, *, requester: str) -> Proposal:
        return await asyncio.to_thread(self.service.propose_undo, request, requester=requester)

    async def answer(
        self,
        proposal_id: str,
        *,
        user: str,
        choice: Choice,
        groups: tuple[str, ...] = (),
        reason: str = "",
    ) -> Proposal:
        return await asyncio.to_thread(
            lambda: self.service.answer(
                proposal_id, user=user, choice=choice, groups=groups, reason=reason
            )
        )

    async def execute(self, proposal_id: str, *, actor: str) -> Proposal:
        return await asyncio.to_thread(self.service.execute, proposal_id, actor=actor)

    async def cancel(self, proposal_id: str, *, actor: str, reason: str = "") -> Proposal:
        return await asyncio.to_thread(self.service.cancel, proposal_id, actor=actor, reason=reason)

    async def reconcile(self) -> list[str]:
        return await asyncio.to_thread(self.service.reconcile)

    async def expire(self) -> list[Proposal]:
        return await asyncio.to_thread(self.service.expire)

    async def get(self, proposal_id: str) -> Proposal:
        return await asyncio.to_thread(self.service.get, proposal_id)

    async def pending(self) -> list[Proposal]:
        return await asyncio.to_thread(self.service.pending)

    async def by_incident(self, incident_id: str) -> list[Proposal]:
        return await asyncio.to_thread(self.service.by_incident, incident_id)

    async def undo_entries(self) -> list[UndoEntry]:
        return await asyncio.to_thread(self.service.undo_entries)

    async def events_since(self, seq: int, *, limit: int = 1000) -> list[Envelope]:
        return await asyncio.to_thread(self.service.events.since, seq, limit=limit)
