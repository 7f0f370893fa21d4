"""Moving the work on after a command or a click, as ``incidents.continuation`` decides:
advance the incident's workflow, or execute a proposal that belongs to no running incident (an
undo asked for from Slack). Runs in background tasks; every call into the workflow or the
service runs in a worker thread.

This module decides nothing: it runs the continuation's answer on the bot's pools, and asks it
again while an answered proposal is left waiting because the click landed while another
``advance`` still held the incident's lease.
"""

from __future__ import annotations

import asyncio
import logging

from bot.runtime import Runtime
from incidents import continuation, reopening
from incidents.model import Incident
from proposals.model import Proposal
from store.errors import StratusError

log = logging.getLogger("stratus.bot")
RETRIES = 50
RESUMER = "stratus-reconciler"  # who carries on parked work (the audit's actor)


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
        states = continuation.states_of(incident, self.rt.service.get)
        return continuation.answered_but_waiting(incident, states)

    async def after_answer(self, proposal: Proposal, *, actor: str) -> None:
        """An answer was stored (or a proposal made): carry on as the continuation decides —
        the incident moves on, or a standalone approved proposal runs."""
        step = await self.rt.call(continuation.next_after, proposal, self.rt.incidents)
        if step in (continuation.Next.ADVANCE, continuation.Next.QUEUED) and proposal.incident_id:
            # Queued: an agent's change waits for its turn as the incident's next attempt;
            # the advance starts it when nothing else is in flight there.
            await self.advance(proposal.incident_id, answered=True)
        elif step == continuation.Next.EXECUTE:
            await self.execute(proposal.id, actor=actor)

    async def execute(self, proposal_id: str, *, actor: str) -> Proposal | None:
        try:
            done: Proposal = await self.rt.write(self.rt.service.execute, proposal_id, actor=actor)
        except StratusError as error:
            log.info("executing %s: %s", proposal_id, error.message)
            return None
        if done.undo_entry is not None:
            await self.fix_undone(done.id)
        return done

    async def fix_undone(self, undo_id: str) -> None:
        """An undo ran on its own: its incident notes it, re-opened or left closed as
        ``incidents.reopening`` decides (the thread and the parent message follow the
        events)."""
        try:
            await self.rt.write(self.rt.workflow.fix_undone, undo_id)
        except StratusError as error:
            log.warning("noting undo %s on its incident: %s", undo_id, error.message)

    async def carry_on_joined(self, incident_id: str) -> None:
        """An alert or an investigation joined the incident: a re-opened incident waiting
        for such a signal (``incidents.reopening.waits_for_a_signal``) carries on now."""
        incident = await self.rt.call(self.rt.incidents.get, incident_id)
        if reopening.waits_for_a_signal(incident):
            await self.advance(incident_id)

    async def resume_parked(self, *, grace: float = continuation.PARKED_GRACE_SECONDS) -> int:
        """Carry on the work nobody is carrying on (``continuation.parked_work``): an
        incident stuck executing is advanced, an approved standalone proposal executed —
        each as an answer's would be. How many were carried on."""
        now = self.rt.store.clock.now()
        pending = await self.rt.call(self.rt.service.pending)
        work = await self.rt.call(
            continuation.parked_work,
            self.rt.incidents,
            pending=pending,
            get=self.rt.service.get,
            now=now,
            grace=grace,
        )
        for parked in work:
            if parked.step == continuation.Next.ADVANCE and parked.incident_id:
                log.info("carrying on incident %s: nothing was moving it", parked.incident_id)
                await self.advance(parked.incident_id, answered=True)
            elif parked.step == continuation.Next.EXECUTE and parked.proposal_id:
                log.info("executing %s: approved, and nothing was running it", parked.proposal_id)
                await self.execute(parked.proposal_id, actor=RESUMER)
        return len(work)

    async def resume_open(self) -> None:
        """After a restart: carry on with every open incident the bot has a thread for."""
        for incident in await self.rt.call(self.rt.incidents.recent, limit=200, open_only=True):
            if reopening.waits_for_a_signal(incident):
                continue  # re-opened by an undo: the next alert or investigation carries it on
            if await self.rt.call(self.rt.links.thread, incident.id) is not None:
                self.rt.spawn(self.advance(incident.id), name=f"resume {incident.id}")
