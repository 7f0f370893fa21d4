"""Recovery while the bot runs: a write whose answer was lost is recorded when its object says
what happened, not at the next restart.

``stratus serve`` recovers once when it starts. After that, a write the bot sent whose answer
was lost (a gateway's 504, a dropped connection) stays pending until the object shows it or
its grace period ends and recovery fences it (``tools.fences``) — and in a long-running bot
nothing else would look again until another write to the same object came. So the bot runs
the proposal service's ``reconcile`` on a bounded interval (``STRATUS_RECONCILE_SECONDS``) in
a worker thread: a late-landing write gets its undo entry, its proposal follows it, and the
follower renders the card from the events that move, exactly as for any other change.

Each pass then carries on *parked work* (``incidents.continuation.parked_work``): an
approved proposal nothing is executing, an incident stuck executing with nothing running —
left by a process that lost the lease, crashed between two moves, or found the object's lock
held — once it has stood still for the grace a live writer needs. A process that does not
lead (``Runtime.acting``) makes no pass: recovery and carrying on are the leader's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from bot.driver import Driver
from bot.follower import Follower
from bot.runtime import Runtime
from incidents import continuation

log = logging.getLogger("stratus.bot")


class Reconciler:
    def __init__(
        self,
        runtime: Runtime,
        follower: Follower,
        driver: Driver,
        *,
        interval: float,
        grace: float = continuation.PARKED_GRACE_SECONDS,
    ) -> None:
        self.rt = runtime
        self.follower = follower
        self.driver = driver
        self.interval = interval
        self.grace = grace
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="recovery")

    async def carry_on(self) -> int:
        """Carry on the parked work (at takeover, and after each pass); how much there was."""
        if not self.rt.acting():
            return 0
        carried = await self.driver.resume_parked(grace=self.grace)
        if carried:
            self.follower.wake()
        return carried

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def once(self) -> list[str]:
        """One pass: what recovery settled (and what it cannot tell yet), in words; then the
        parked work is carried on."""
        if not self.rt.acting():
            return []
        lines: list[str] = await self.rt.work(self.rt.service.reconcile)
        settled = [line for line in lines if ": cannot tell yet" not in line]
        for line in settled:
            log.info("recovered an interrupted write: %s", line)
        if settled:
            self.follower.wake()  # render the cards those moves changed now
        await self.carry_on()
        return lines

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.once()
            except asyncio.CancelledError:
                raise
            except Exception:
                # The next pass tries again; a failing store or cluster is not the bot's end.
                log.exception("recovery failed; trying again in %.0f s", self.interval)
