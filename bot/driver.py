"""Moving the work on after a command or a click: advance the incident's workflow, or execute
a proposal that belongs to no running incident (an undo asked for from Slack). Runs in
background tasks; every call into the workflow or the service runs in a worker thread.

The workflow is a persisted state machine; this module never decides a move. It only makes
sure that an answered proposal is not left waiting because the click landed while another
``advance`` still held the incident's lease.
"""

from __future__ import annotations

import asyncio
import logging

from agents.incident import Incident, IncidentState
from bot.runtime import Runtime
from proposals.model import Proposal, ProposalState
from store.errors import StratusError

log = logging.getLogger("stratus.bot")
P = ProposalState
St = IncidentState
RETRIES = 50


class Driver:
    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime

    async def advance(self, incident_id: str, *, answered: bool = False) -> Incident:
        """Move the incident on; ``answered``: a human just answered it, so the move (which
        executes what they approved) runs in the pool no investigation can fill."""
        run = self.rt.write if answered else self.rt.work
        incident = await run(self.rt.workflow.advance, incident_id)
        for _ in range(RETRIES):
            if not await self.rt.call(self._answered_but_waiting, incident):
                break
            await asyncio.sleep(0.1)  # another advance held the lease; it has let go now
            incident = await run(self.rt.workflow.advance, incident_id)
        return incident

    def _answered_but_waiting(self, incident: Incident) -> bool:
        if incident.state != St.AWAITING_APPROVAL or incident.current is None:
            return False
        attempt = incident.current
        ids = attempt.undo_proposals[-1:] or [p for p in attempt.proposals[-1:] if p]
        return any(self.rt.service.get(i).state != P.AWAITING_APPROVAL for i in ids)

    async def after_answer(self, proposal: Proposal, *, actor: str) -> None:
        """An answer was stored: let the incident move on, or run a standalone proposal."""
        running: bool = await self.rt.call(self._in_open_attempt, proposal)
        if running and proposal.incident_id:
            await self.advance(proposal.incident_id, answered=True)
        elif proposal.state == P.APPROVED:
            await self.execute(proposal.id, actor=actor)

    def _in_open_attempt(self, proposal: Proposal) -> bool:
        if proposal.incident_id is None:
            return False
        incident = self.rt.incidents.get(proposal.incident_id)
        attempt = incident.current
        return (
            incident.is_open
            and attempt is not None
            and proposal.id in (*attempt.proposals, *attempt.undo_proposals)
        )

    async def execute(self, proposal_id: str, *, actor: str) -> Proposal | None:
        try:
            return await self.rt.write(self.rt.service.execute, proposal_id, actor=actor)
        except StratusError as error:
            log.info("executing %s: %s", proposal_id, error.message)
            return None

    async def resume_open(self) -> None:
        """After a restart: carry on with every open incident the bot has a thread for."""
        for incident in await self.rt.call(self.rt.incidents.recent, limit=200, open_only=True):
            if await self.rt.call(self.rt.links.thread, incident.id) is not None:
                self.rt.spawn(self.advance(incident.id), name=f"resume {incident.id}")
