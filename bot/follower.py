"""Follows the event stream with a cursor and renders it in Slack: one thread per incident,
one message per step, one card per proposal, updated in place as its state moves.

Whatever made the change — a click, ``stratus undo`` in a terminal, an automatic TNR undo, a
second bot — shows up here the same way, because the follower renders the stored state the
events point at. The cursor and the message ↔ proposal/incident links are kept in the store
(``bot.links``), so a restarted bot carries on where it stopped and updates the same cards.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from agents.incident import Incident
from agents.incident_store import STREAM as INCIDENTS
from agents.incident_store import IncidentEvent, IncidentEventType
from agents.telemetry import Telemetry, settled_at, summarize
from bot import alert_blocks, cards, text
from bot import blocks as b
from bot.links import MessageRef
from bot.runtime import Runtime
from bot.summary import summary_blocks
from proposals.events import STREAM as PROPOSALS
from proposals.events import EventType, ProposalEvent
from proposals.model import Proposal, ProposalState
from store.events import EventRow, EventStore

log = logging.getLogger("stratus.bot")
P = ProposalState
TERMINAL = {"resolved", "escalated", "cancelled"}
ALERT_EVENTS = (IncidentEventType.ALERT_FIRED, IncidentEventType.ALERT_RESOLVED)
PARENT_REFRESH_SECONDS = 20.0


class AlertThreadOpener(Protocol):
    async def ensure(self, incident_id: str) -> MessageRef | None: ...


@dataclass
class CardData:
    proposal: Proposal
    incident: Incident | None
    undo: Proposal | None


class Follower:
    def __init__(self, runtime: Runtime, client: AsyncWebClient, *, interval: float) -> None:
        self.rt = runtime
        self.client = client
        self.interval = interval
        self.rows = EventStore(runtime.store)
        # Per proposal: the moment the summary was read for (its state, whether it was
        # verified, whether its write has settled) and the summary; read again when that moves
        # (before → after execution → after a rate window, once the figures show the write).
        self.telemetry: dict[str, tuple[str, Telemetry]] = {}
        # Executed proposals whose card shows "after" figures read too soon: when (Unix
        # seconds) to read them again.
        self.settling: dict[str, float] = {}
        self._posting: dict[str, asyncio.Lock] = {}
        # Alert events (their sequence numbers) already shown in a thread: a parked incident's
        # retry replays the alerts the follower passed by, and the follower must not post the
        # one that led to the retry a second time when it reaches it.
        self.shown_alerts: set[int] = set()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._since_refresh = 0.0
        # Set when alerts are on: an alert's incident gets its thread on its first alert.
        self.alert_threads: AlertThreadOpener | None = None

    # ------------------------------------------------------------------ the loop

    async def start(self) -> None:
        cursor = await self.rt.call(self.rt.links.cursor)
        if cursor is None:  # first start: the past is not news
            await self.rt.call(self.rt.links.set_cursor, self.rows.last_seq())
        self._task = asyncio.get_running_loop().create_task(self._run(), name="stratus-follower")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.poll()  # render what the last work did

    def wake(self) -> None:
        self._wake.set()

    async def _run(self) -> None:
        while True:
            try:
                await self.poll()
                await self._refresh_settled()
                self._since_refresh += self.interval
                if self._since_refresh >= PARENT_REFRESH_SECONDS:
                    self._since_refresh = 0.0
                    await self._refresh_open_parents()
                    # Incidents whose thread could never be posted free their namespace.
                    await self.rt.work(self.rt.workflow.release_parked)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("rendering the event stream failed; trying again")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval)
            self._wake.clear()

    async def poll(self) -> int:
        """Render every event after the cursor; returns how many were read."""
        cursor = await self.rt.call(self.rt.links.cursor) or 0
        rows = await self.rt.call(self.rows.since, cursor, limit=500)
        parents: set[str] = set()
        dirty: set[str] = set()
        for row in rows:
            await self._render(row, parents, dirty)
            await self.rt.call(self.rt.links.set_cursor, row.seq)
        for proposal_id in dirty:
            await self.refresh_card(proposal_id)
        for incident_id in parents:
            await self.refresh_parent(incident_id)
        return len(rows)

    async def _render(self, row: EventRow, parents: set[str], dirty: set[str]) -> None:
        if row.stream == INCIDENTS:
            await self._incident_event(
                IncidentEvent.model_validate(row.payload), parents, dirty, seq=row.seq
            )
        elif row.stream == PROPOSALS:
            await self._proposal_event(ProposalEvent.model_validate(row.payload), dirty)

    # ------------------------------------------------------------------ incidents

    async def _incident_event(
        self, event: IncidentEvent, parents: set[str], dirty: set[str], *, seq: int = 0
    ) -> None:
        thread = await self.rt.call(self.rt.links.thread, event.incident_id)
        if thread is None and event.type == IncidentEventType.ALERT_FIRED and self.alert_threads:
            thread = await self.alert_threads.ensure(event.incident_id)
        if thread is None:
            return
        if event.type in ALERT_EVENTS:
            if seq in self.shown_alerts:
                return  # a retry's replay showed it already
            self.shown_alerts.add(seq)
        parents.add(event.incident_id)
        body: list[Block] = []
        if event.type == IncidentEventType.FINDINGS:
            body = cards.findings(event.data, event.message)
        elif event.type == IncidentEventType.DIAGNOSED:
            body = cards.diagnosis(event.data)
        elif event.type == IncidentEventType.ATTEMPT:
            number = event.data.get("attempt", "?")
            intent = (event.data.get("candidate") or {}).get("intent", event.message)
            # Whose words the attempt's description is: the model's, or the rules'.
            incident = await self.rt.call(self.rt.incidents.get, event.incident_id)
            source = text.planner_source(incident.planner)
            body = [b.section(text.attempt_started(int(number), str(intent), source))]
        elif event.type == IncidentEventType.VERIFIED:
            body = [
                b.section(
                    text.verified(
                        int(event.data.get("attempt", 0)),
                        str(event.data.get("verdict", "")),
                        (event.data.get("before") or {}).get("total"),
                        (event.data.get("after") or {}).get("total"),
                    )
                )
            ]
            incident = await self.rt.call(self.rt.incidents.get, event.incident_id)
            for attempt in incident.attempts:
                dirty.update(p for p in attempt.proposals if p)
        elif event.type == IncidentEventType.ALERT_FIRED:
            body = alert_blocks.fired(event.data)
        elif event.type == IncidentEventType.ALERT_RESOLVED:
            body = alert_blocks.resolved(event.data)
            if event.data.get("incident_clear") and event.state in TERMINAL:
                await self.post(thread, body, text.inert(event.message))
                await self.post_summary(event.incident_id)  # now saying the alerts cleared
                return
        elif event.type == IncidentEventType.NOTE and event.message:
            body = [b.context(text.state_note(event.message))]
        elif event.type == IncidentEventType.STATE_CHANGED and event.state in TERMINAL:
            if event.message:
                await self.post(
                    thread, [b.context(text.state_note(event.message))], text.inert(event.message)
                )
            await self.post_summary(event.incident_id)
            return
        if body:
            await self.post(thread, body, text.inert(event.message or event.type.value))

    async def post_summary(self, incident_id: str, where: MessageRef | None = None) -> None:
        thread = where or await self.rt.call(self.rt.links.thread, incident_id)
        if thread is None:
            return

        def gather() -> list[Block]:
            incident = self.rt.incidents.get(incident_id)
            proposals = self.rt.service.by_incident(incident_id)
            events = self.rt.incidents.events(incident_id=incident_id, limit=2000)
            return summary_blocks(incident, sorted(proposals, key=lambda p: p.created_at), events)

        await self.post(thread, await self.rt.call(gather), text.SUMMARY_TITLE)

    async def refresh_parent(self, incident_id: str) -> None:
        thread = await self.rt.call(self.rt.links.thread, incident_id)
        if thread is None:
            return
        incident = await self.rt.call(self.rt.incidents.get, incident_id)
        now = self.rt.store.clock.now()
        await self._update(
            thread,
            cards.incident_parent(incident, now),
            text.incident_fallback(incident.namespace, incident.state.value),
        )

    async def _refresh_open_parents(self) -> None:
        for incident in await self.rt.call(self.rt.incidents.recent, limit=50, open_only=True):
            await self.refresh_parent(incident.id)

    # ------------------------------------------------------------------ proposals

    async def _proposal_event(self, event: ProposalEvent, dirty: set[str]) -> None:
        if event.type == EventType.PROPOSED:
            await self.ensure_card(event.proposal_id)
            return
        card = await self.rt.call(self.rt.links.card, event.proposal_id)
        if card is None:
            return
        dirty.add(event.proposal_id)
        if event.type != EventType.STATE_CHANGED:
            return
        thread = await self.rt.call(self.rt.links.card_thread, event.proposal_id)
        if thread is None:
            return
        if event.state == P.UNDONE:
            proposal = await self.rt.call(self.rt.service.get, event.proposal_id)
            undo = (
                await self.rt.call(self.rt.service.get, proposal.undone_by)
                if proposal.undone_by
                else None
            )
            message = text.undone_notice(
                proposal.intent, undo.requester if undo else event.actor, proposal.undone_by or ""
            )
            await self.post(thread, [b.section(message)], message)
        elif event.state == P.SUPERSEDED:
            proposal = await self.rt.call(self.rt.service.get, event.proposal_id)
            message = text.superseded_notice(
                proposal.id, proposal.superseded_by, proposal.reason or event.message
            )
            await self.post(thread, [b.section(message)], message)

    async def ensure_card(
        self, proposal_id: str, fallback: MessageRef | None = None
    ) -> MessageRef | None:
        """Post the proposal's card once: in its incident's thread, in the thread of the card
        it undoes, or at ``fallback`` (a channel, or a thread)."""
        lock = self._posting.setdefault(proposal_id, asyncio.Lock())
        async with lock:
            existing = await self.rt.call(self.rt.links.card, proposal_id)
            if existing is not None:
                return existing
            data = await self.rt.call(self._card_data, proposal_id)
            where = await self.rt.call(self._card_place, data.proposal)
            where = where or fallback
            if where is None:
                return None
            telemetry = await self._summary(proposal_id, data)
            blocks = cards.proposal_card(
                data.proposal, incident=data.incident, telemetry=telemetry, undo=data.undo
            )
            posted = await self.post(
                where, blocks, text.card_fallback(data.proposal.intent, data.proposal.state.value)
            )
            if posted is None:
                return None
            await self.rt.call(
                self.rt.links.link_card, proposal_id, data.proposal.incident_id, posted, where.ts
            )
            return posted

    async def refresh_card(self, proposal_id: str) -> None:
        card = await self.rt.call(self.rt.links.card, proposal_id)
        if card is None:
            return
        data = await self.rt.call(self._card_data, proposal_id)
        telemetry = await self._summary(proposal_id, data)
        blocks = cards.proposal_card(
            data.proposal, incident=data.incident, telemetry=telemetry, undo=data.undo
        )
        await self._update(
            card, blocks, text.card_fallback(data.proposal.intent, data.proposal.state.value)
        )

    async def _refresh_settled(self) -> None:
        """Render once more the cards whose "after" figures were read before the write could
        show in them, now that it can."""
        now = time.time()
        for proposal_id in [p for p, due in self.settling.items() if due <= now]:
            self.settling.pop(proposal_id, None)
            await self.refresh_card(proposal_id)

    def _card_data(self, proposal_id: str) -> CardData:
        proposal = self.rt.service.get(proposal_id)
        incident = self.rt.incidents.get(proposal.incident_id) if proposal.incident_id else None
        undo = self.rt.service.get(proposal.undone_by) if proposal.undone_by else None
        return CardData(proposal, incident, undo)

    def _card_place(self, proposal: Proposal) -> MessageRef | None:
        if proposal.undo_entry is not None:
            entry = self.rt.service.stack.entries.get(proposal.undo_entry)
            original = entry.execution.proposal_id if entry else None
            if original:
                place = self.rt.links.card_thread(original)
                if place is not None:
                    return place
        if proposal.incident_id:
            return self.rt.links.thread(proposal.incident_id)
        return None

    async def _summary(self, proposal_id: str, data: CardData) -> Telemetry:
        found = cards.verdict_for(data.proposal, data.incident)
        settles = settled_at(data.proposal) if self.rt.workflow.prometheus else None
        settled = settles is not None and time.time() >= settles
        moment = f"{data.proposal.state.value}:{bool(found and found[0])}:{settled}"
        cached = self.telemetry.get(proposal_id)
        if cached is not None and cached[0] == moment:
            return cached[1]
        telemetry = await self.rt.work(self._telemetry, data)
        self.telemetry[proposal_id] = (moment, telemetry)
        if settles is not None and not settled:
            self.settling[proposal_id] = settles
        else:
            self.settling.pop(proposal_id, None)
        return telemetry

    def _telemetry(self, data: CardData) -> Telemetry:
        details = data.incident.health_now.get("details") if data.incident else None
        return summarize(
            self.rt.reader,
            data.proposal,
            prometheus=self.rt.workflow.prometheus,
            health_details=details,
        )

    # ------------------------------------------------------------------ Web API

    async def post(self, where: MessageRef, body: list[Block], fallback: str) -> MessageRef | None:
        """Post in ``where``'s thread (or in the channel when ``where.ts`` is empty)."""
        posted, _ = await self.post_checked(where, body, fallback)
        return posted

    async def post_checked(
        self, where: MessageRef, body: list[Block], fallback: str
    ) -> tuple[MessageRef | None, str]:
        """``post``, and Slack's error when it failed (``not_in_channel``, ``ratelimited`` once
        the retries are spent, or the network's)."""
        kwargs: dict[str, Any] = {"thread_ts": where.ts} if where.ts else {}
        try:
            response = await self.client.chat_postMessage(
                channel=where.channel, text=b.fallback(fallback), blocks=b.render(body), **kwargs
            )
        except SlackApiError as error:
            why = str(error.response.get("error") or "error")
            log.error("chat.postMessage failed: %s", why)
            return None, why
        except (aiohttp.ClientError, TimeoutError) as error:
            why = f"Slack could not be reached ({type(error).__name__})"
            log.error("chat.postMessage failed: %s", why)
            return None, why
        return MessageRef(str(response["channel"]), str(response["ts"])), ""

    async def _update(self, where: MessageRef, body: list[Block], fallback: str) -> None:
        try:
            await self.client.chat_update(
                channel=where.channel, ts=where.ts, text=b.fallback(fallback), blocks=b.render(body)
            )
        except SlackApiError as error:
            log.error("chat.update failed: %s", error.response.get("error"))
