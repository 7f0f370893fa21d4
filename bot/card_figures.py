"""The telemetry a proposal's card shows: read once for each moment of the proposal, and read
again once the write has had time to show in the figures.

A moment is the proposal's state, whether it was verified, and whether its write has settled
(``agents.telemetry.settled_at``): the summary is read before execution, after it, and once
more after a rate window, when the "after" figures can show the write. A card whose figures
were read too soon is noted with the time to read them again, written through to the store
(``Links.refresh_card_at``) so that a restarted bot reads them again too.
"""

from __future__ import annotations

import time
from datetime import datetime

from agents.telemetry import Telemetry, settled_at, summarize
from bot import cards
from bot.runtime import Runtime
from bot.thread_reads import CardData


class CardFigures:
    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        # Per proposal: the moment the summary was read for, and the summary.
        self.telemetry: dict[str, tuple[str, Telemetry]] = {}
        # Executed proposals whose card shows "after" figures read too soon: when (Unix
        # seconds) to read them again.
        self.settling: dict[str, float] = {}

    async def load(self) -> None:
        """The cards a previous run left to be read again."""
        self.settling.update(await self.rt.call(self.rt.links.refreshes))

    def due(self, now: float) -> list[str]:
        """The proposals whose figures can be read again now."""
        return [p for p, due in self.settling.items() if due <= now]

    def forget(self, proposal_id: str) -> None:
        """Read the proposal's figures again next time, whatever was cached."""
        self.settling.pop(proposal_id, None)
        self.telemetry.pop(proposal_id, None)

    async def read(self, proposal_id: str, data: CardData) -> Telemetry:
        found = cards.verdict_for(data.proposal, data.incident)
        verified = cards.verified_at(data.proposal, data.incident)
        settles = (
            settled_at(data.proposal, verified_at=verified) if self.rt.workflow.prometheus else None
        )
        settled = settles is not None and time.time() >= settles
        moment = f"{data.proposal.state.value}:{bool(found and found[0])}:{settled}"
        cached = self.telemetry.get(proposal_id)
        if cached is not None and cached[0] == moment:
            return cached[1]
        telemetry = await self.rt.work(self._summarize, data, verified)
        self.telemetry[proposal_id] = (moment, telemetry)
        metrics = telemetry.metrics
        if settles is not None and metrics is not None and metrics.pending:
            self.settling[proposal_id] = settles
            await self.rt.call(self.rt.links.refresh_card_at, proposal_id, settles)
        elif self.settling.pop(proposal_id, None) is not None:
            await self.rt.call(self.rt.links.refreshed, proposal_id)
        return telemetry

    def _summarize(self, data: CardData, verified: datetime | None) -> Telemetry:
        return summarize(
            self.rt.reader_for(data.proposal.cluster),
            data.proposal,
            prometheus=self.rt.workflow.prometheus,
            verified_at=verified,
        )
