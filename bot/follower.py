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
import json
import logging
import time
from typing import Protocol

from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from agents.llm.postmortem import PostmortemWriter
from agents.telemetry import Telemetry
from agents.telemetry_links import FigureLinks, LinkConfig
from bot import alert_blocks, cards, chat, text, thread_reads
from bot import blocks as b
from bot.card_figures import CardFigures
from bot.chat import GONE
from bot.links import MessageRef
from bot.names import Names
from bot.runtime import Runtime
from bot.summary import summary_blocks
from bot.telemetry import CardChart
from bot.text import card_words, command_words, thread_words
from bot.thread_reads import CardData
from bot.uploads import Uploads, in_thread
from incidents import postmortem, postmortem_text
from incidents.model import AGENT_SOURCE, Incident
from incidents.repository import STREAM as INCIDENTS
from incidents.repository import IncidentEvent, IncidentEventType
from proposals.events import STREAM as PROPOSALS
from proposals.events import EventType, ProposalEvent
from proposals.model import Proposal, ProposalState
from store import handles
from store.events import EventRow, EventStore

log = logging.getLogger("stratus.bot")
P = ProposalState
TERMINAL = {"resolved", "escalated", "cancelled"}
ALERT_EVENTS = (IncidentEventType.ALERT_FIRED, IncidentEventType.ALERT_RESOLVED)
PARENT_REFRESH_SECONDS = 20.0
CHART_RETRY_SECONDS = 3.0  # how long Slack is given to process a chart before it is shown again


class AlertThreadOpener(Protocol):
    async def ensure(self, incident_id: str) -> MessageRef | None: ...


class Follower:
    def __init__(
        self,
        runtime: Runtime,
        client: AsyncWebClient,
        *,
        interval: float,
        links: LinkConfig | None = None,
    ) -> None:
        self.rt = runtime
        self.client = client
        self.uploads = Uploads(runtime, client, links)
        self.interval = interval
        self.rows = EventStore(runtime.store)
        self.figures = CardFigures(runtime)  # each card's telemetry, read again as it settles
        self._posting: dict[str, asyncio.Lock] = {}
        # One pass over the stream at a time: the loop's and one asked for (a stop, a caller
        # waiting for the work to show) would both read from the same cursor and post the same
        # events twice, and the second could return while the first still draws its cards.
        self._polling = asyncio.Lock()
        # Alert events (their sequence numbers) already shown in a thread: a parked incident's
        # retry replays the alerts the follower passed by, and the follower must not post the
        # one that led to the retry a second time when it reaches it.
        self.shown_alerts: set[int] = set()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._since_refresh = 0.0
        # Set when alerts are on: an alert's incident gets its thread on its first alert.
        self.alert_threads: AlertThreadOpener | None = None
        self.names = Names(client)
        self._kept: dict[str, str] = {}  # the handles written to the database (store.handles)

    # ------------------------------------------------------------------ the loop

    async def start(self) -> None:
        cursor = await self.rt.call(self.rt.links.cursor)
        if cursor is None:  # first start: the past is not news
            await self.rt.call(self.rt.links.set_cursor, self.rows.last_seq())
        await self.figures.load()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="stratus-follower")
        # The threads of open incidents may be gone (a restart against an emptied Slack): the
        # parents are drawn again now, and a lost thread is posted anew with its cards, so a
        # card still waiting for an answer can be answered.
        self.rt.spawn(self._refresh_open_parents(), name="check the threads of open incidents")

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
        """Render every event after the cursor, and the cards and parent messages they touch;
        returns how many were read. A call while another pass runs waits for it, then renders
        what is left: when it returns, everything stored before the call is shown."""
        async with self._polling:
            return await self._poll()

    async def _poll(self) -> int:
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
        if thread is None and self.alert_threads and await self._opens_thread(event):
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
            # Whose words the attempt's description is: the model's, or the rules'.
            incident = await self.rt.call(self.rt.incidents.get, event.incident_id)
            body = cards.attempt(event.data, event.message, text.planner_source(incident.planner))
        elif event.type == IncidentEventType.VERIFIED:
            body = cards.verified(event.data)
            incident = await self.rt.call(self.rt.incidents.get, event.incident_id)
            for attempt in incident.attempts:
                dirty.update(attempt.proposals)
        elif event.type == IncidentEventType.ALERT_FIRED:
            body = alert_blocks.fired(event.data)
        elif event.type == IncidentEventType.ALERT_RESOLVED:
            body = alert_blocks.resolved(event.data)
            if event.data.get("incident_clear"):
                await self.post(thread, body, text.inert(event.message))
                # A summary already posted now says the alerts cleared, whatever state the
                # incident was read in when the clear was noted (it may have ended meanwhile).
                await self.show_summary(event.incident_id, only_shown=event.state not in TERMINAL)
                return
        elif event.type == IncidentEventType.NOTE and event.message:
            body = [
                b.context(thread_words.state_note(event.message, await self._named(event.message)))
            ]
        elif event.type == IncidentEventType.STATE_CHANGED and event.state in TERMINAL:
            if event.message:
                note = thread_words.state_note(event.message, await self._named(event.message))
                await self.post(thread, [b.context(note)], text.inert(event.message))
            await self.show_summary(event.incident_id)
            return
        if body:
            await self.post(thread, body, text.inert(event.message or event.type.value))

    async def _opens_thread(self, event: IncidentEvent) -> bool:
        """Whether an incident with no thread gets one at this event: an alert's at its first
        alert; one an MCP client's proposal opened as soon as it is opened, so that the
        proposal's card (the next event) is posted in it."""
        if event.type == IncidentEventType.ALERT_FIRED:
            return True
        if event.type != IncidentEventType.OPENED:
            return False
        incident = await self.rt.call(self.rt.incidents.get, event.incident_id)
        return incident.source == AGENT_SOURCE

    async def show_summary(self, incident_id: str, *, only_shown: bool = False) -> None:
        """The incident's one summary: posted in its thread when the incident ends, and from
        then on edited in place (alerts clearing later) — a thread never holds two that
        disagree. Built from the store when it is drawn, so it says what has been saved.
        ``only_shown``: edit it if it was posted, post nothing otherwise (an undo while the
        incident is still open: its summary comes when it ends)."""
        lock = self._posting.setdefault("summary:" + incident_id, asyncio.Lock())
        async with lock:
            thread = await self.rt.call(self.rt.links.thread, incident_id)
            if thread is None:
                return
            body = await self._summary_body(incident_id)
            shown = await self.rt.call(self.rt.links.summary, incident_id)
            if shown is not None:
                why = await chat.update(self.client, shown, body, thread_words.SUMMARY_TITLE)
                if why not in GONE:
                    return
                await self.rt.call(self.rt.links.forget_summary, incident_id)
                thread = await self.rt.call(self.rt.links.thread, incident_id) or thread
            elif only_shown:
                return
            posted = await self.post(thread, body, thread_words.SUMMARY_TITLE)
            if posted is not None:
                await self.rt.call(self.rt.links.link_summary, incident_id, posted)

    async def post_summary(self, incident_id: str, where: MessageRef | None = None) -> None:
        """A summary someone asked for (``/stratus summary``, "summarize" in the thread): a
        reply where they asked, as it stands now."""
        thread = where or await self.rt.call(self.rt.links.thread, incident_id)
        if thread is None:
            return
        body = await self._summary_body(incident_id)
        await self.post(thread, body, thread_words.SUMMARY_TITLE)

    async def post_postmortem(self, incident_id: str, where: MessageRef | None = None) -> None:
        """The postmortem draft (``incidents.postmortem``) as a Markdown file in the thread."""
        thread = where or await self.rt.call(self.rt.links.thread, incident_id)
        if thread is None:
            return
        draft = await self.rt.call(
            postmortem.of_incident, self.rt.incidents, self.rt.service, incident_id
        )
        people = sorted({str(e.fields.get("actor", "")) for e in draft.entries()})
        known = await self.names.warm(people)
        model = self.rt.answerer  # the thread's model words the narrative too, when there is one
        writer = (
            PostmortemWriter(model.client_factory, model=model.model) if model is not None else None
        )
        _, why = await self.uploads.post_document(
            thread,
            content=await postmortem_text.compose(draft, writer, handles=known),
            filename=command_words.postmortem_filename(incident_id),
            title=command_words.POSTMORTEM_TITLE,
            comment=command_words.postmortem_comment(incident_id),
        )
        if why:
            message = command_words.postmortem_failed(why)
            await self.post(thread, [b.section(message)], message)

    async def _summary_body(self, incident_id: str) -> list[Block]:
        """The summary with the ids its words name ("requires 1 approval from S0SRE", "fix
        undone by U0BOB") as handles: drawn once to find them, looked up (cached by
        ``bot.names``; a failed lookup leaves the id), drawn again when one is known."""
        incident, proposals, events = await self.rt.call(
            thread_reads.summary_parts, self.rt, incident_id
        )
        body = summary_blocks(incident, proposals, events)
        ids = text.slack_ids(json.dumps(b.render(body)))
        known = await self.names.warm(ids) if ids else {}
        handles = {i: known[i] for i in ids if i in known}
        return summary_blocks(incident, proposals, events, handles) if handles else body

    async def refresh_parent(self, incident_id: str) -> None:
        thread = await self.rt.call(self.rt.links.thread, incident_id)
        if thread is None:
            return
        incident = await self.rt.call(self.rt.incidents.get, incident_id)
        why = await chat.update(
            self.client,
            thread,
            await self._parent_blocks(incident),
            thread_words.incident_fallback(incident.namespace, incident.state.value),
        )
        if why in GONE:
            await self.relink(incident_id, thread)

    async def _parent_blocks(self, incident: Incident, *, continued: bool = False) -> list[Block]:
        """The parent message; one that replaced a lost thread says which incident it
        continues, every time it is drawn."""
        now = self.rt.store.clock.now()
        body = cards.incident_parent(incident, now)
        if continued or await self.rt.call(self.rt.links.continued, incident.id):
            body.append(b.context(thread_words.thread_continued(incident.id)))
        return body

    async def relink(self, incident_id: str, gone: MessageRef) -> MessageRef | None:
        """Slack says the incident's thread ``gone`` is no longer there: post a new parent
        (saying which incident it continues), link it, and post again the cards that were in
        the old thread. The new thread, or None when not even that could be posted (the link
        is forgotten then, so nothing is aimed at a dead thread again)."""
        async with self._posting.setdefault("thread:" + incident_id, asyncio.Lock()):
            current = await self.rt.call(self.rt.links.thread, incident_id)
            if current != gone:
                return current  # moved already (another post found it gone first), or unlinked
            incident = await self.rt.call(self.rt.incidents.get, incident_id)
            posted, why = await chat.post(
                self.client,
                MessageRef(gone.channel, ""),
                await self._parent_blocks(incident, continued=True),
                thread_words.incident_fallback(incident.namespace, incident.state.value),
            )
            if posted is None:
                log.error("incident %s lost its thread and a new one failed: %s", incident_id, why)
                await self.rt.call(self.rt.links.forget_thread, incident_id, gone)
                return None
            log.warning(
                "incident %s lost its thread %s; it carries on in %s",
                incident_id,
                gone.ts,
                posted.ts,
            )
            await self.rt.call(self.rt.links.relink_thread, incident_id, gone, posted)
            moved = await self.rt.call(self.rt.links.cards_in, gone)
        for proposal_id in moved:
            await self.rt.call(self.rt.links.forget_card, proposal_id)
        for proposal_id in moved:
            await self.ensure_card(proposal_id)
        return posted

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
            message = thread_words.undone_notice(
                proposal.intent, undo.requester if undo else event.actor, proposal.undone_by or ""
            )
            await self.post(thread, [b.section(message)], message)
            if proposal.incident_id:  # its summary, if posted, says so too
                await self.show_summary(proposal.incident_id, only_shown=True)
        elif event.state == P.SUPERSEDED:
            proposal = await self.rt.call(self.rt.service.get, event.proposal_id)
            message = thread_words.superseded_notice(
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
            data = await self.rt.call(thread_reads.card_data, self.rt, proposal_id)
            where = await self.rt.call(thread_reads.card_place, self.rt, data.proposal)
            where = where or fallback
            if where is None:
                return None
            joined = await self.rt.call(thread_reads.batch_card, self.rt, data.proposal)
            if joined is not None:
                # Approval fatigue: the same people are not pinged again; the card they were
                # asked on gathers it, with its own buttons (``proposals.intake.batch_head``).
                await self.rt.call(
                    self.rt.links.link_card,
                    proposal_id,
                    data.proposal.incident_id,
                    joined,
                    where.ts,
                )
                await self.refresh_card(proposal_id)
                return joined
            telemetry = await self.figures.read(proposal_id, data)
            # The card goes first, the chart a moment later: drawing and uploading it must
            # not delay the question people are asked (a second or more under load).
            chart = self.uploads.pending_chart(telemetry)
            links = self.uploads.figure_links(data.proposal, data.incident, telemetry)
            handles = await self._handles(data.proposal)

            def card(shown: CardChart) -> list[Block]:
                return cards.proposal_card(
                    data.proposal,
                    incident=data.incident,
                    telemetry=telemetry,
                    undo=data.undo,
                    ran_at=data.ran_at,
                    handles=handles,
                    chart=shown,
                    links=links,
                )

            fallback_text = card_words.card_fallback(
                cards.title(data.proposal), data.proposal.state.value
            )
            posted, _ = await self.post_checked(where, card(chart), fallback_text)
            if posted is None:
                return None
            await self.rt.call(
                self.rt.links.link_card, proposal_id, data.proposal.incident_id, posted, where.ts
            )
            if chart.drawing:
                self.rt.spawn(self.refresh_card(proposal_id), name="draw the card's chart")
            return posted

    async def refresh_card(self, proposal_id: str, *, later: bool = False) -> None:
        card = await self.rt.call(self.rt.links.card, proposal_id)
        if card is None:
            return
        members = await self.rt.call(self.rt.links.proposals_at, card) or [proposal_id]
        rendered: list[tuple[CardData, Telemetry, CardChart, FigureLinks | None, dict[str, str]]]
        rendered = []
        for member in members:
            data = await self.rt.call(thread_reads.card_data, self.rt, member)
            telemetry = await self.figures.read(member, data)
            thread = await self.rt.call(self.rt.links.card_thread, member)
            rendered.append(
                (
                    data,
                    telemetry,
                    await self.uploads.card_chart(data.proposal, telemetry, thread),
                    self.uploads.figure_links(data.proposal, data.incident, telemetry),
                    await self._handles(data.proposal),
                )
            )
        first = await self.rt.call(thread_reads.card_data, self.rt, members[0])
        fallback_text = card_words.card_fallback(
            cards.title(first.proposal), first.proposal.state.value
        )

        def whole(with_images: bool) -> list[Block]:
            parts = [
                cards.proposal_card(
                    data.proposal,
                    incident=data.incident,
                    telemetry=telemetry,
                    undo=data.undo,
                    ran_at=data.ran_at,
                    handles=handles,
                    chart=chart if with_images else in_thread(chart),
                    links=links,
                )
                for data, telemetry, chart, links, handles in rendered
            ]
            return parts[0] if len(parts) == 1 else cards.batch_card(first.proposal, parts)

        why = await chat.update(self.client, card, whole(True), fallback_text)
        if why == "invalid_blocks" and any(chart.file_id for _, _, chart, _, _ in rendered):
            # Slack may not have processed a file uploaded a moment ago: the card without it
            # now (the chart is in the thread), with it shortly.
            why = await chat.update(self.client, card, whole(False), fallback_text)
            if not why and not later:
                self.rt.spawn(self._show_chart_later(proposal_id), name="show the chart")
        if why in GONE:  # its message is gone: posted again where it belongs
            await self.rt.call(self.rt.links.forget_card, proposal_id)
            await self.ensure_card(proposal_id)

    async def _show_chart_later(self, proposal_id: str) -> None:
        """Render the card again once Slack has had time to process its chart's file."""
        await asyncio.sleep(CHART_RETRY_SECONDS)
        await self.refresh_card(proposal_id, later=True)

    async def _named(self, sentence: str) -> dict[str, str]:
        """Handles for the ids a note names ("U0DAVE asked to look again")."""
        ids = text.slack_ids(sentence)
        return await self.names.warm(ids) if ids else {}

    async def _handles(self, proposal: Proposal) -> dict[str, str]:
        """Handles for the ids the card's policy reason names (cached by ``bot.names``), kept
        in the database too when new (``store.handles``: a terminal's dry run names them)."""
        named = [i for names in proposal.decision.approvers for i in names]
        known = await self.names.warm(named)
        fresh = {i: known[i] for i in named if i in known and self._kept.get(i) != known[i]}
        if fresh:
            await self.rt.call(handles.remember, self.rt.store, fresh)
            self._kept.update(fresh)
        return known

    async def _refresh_settled(self) -> None:
        """Render once more the cards whose "after" figures were read before the write could
        show in them, now that it can."""
        for proposal_id in self.figures.due(time.time()):
            self.figures.forget(proposal_id)
            await self.refresh_card(proposal_id)
            if proposal_id not in self.figures.settling:
                await self.rt.call(self.rt.links.refreshed, proposal_id)

    # ------------------------------------------------------------------ Web API

    async def post(self, where: MessageRef, body: list[Block], fallback: str) -> MessageRef | None:
        """Post in ``where``'s thread (or in the channel when ``where.ts`` is empty)."""
        posted, _ = await self.post_checked(where, body, fallback)
        return posted

    async def post_checked(
        self, where: MessageRef, body: list[Block], fallback: str
    ) -> tuple[MessageRef | None, str]:
        """``post``, and Slack's error when it failed (``not_in_channel``, ``ratelimited`` once
        the retries are spent, or the network's). A post into an incident's thread that Slack
        says is gone goes to the incident's new thread (``relink``)."""
        posted, why = await chat.post(self.client, where, body, fallback)
        if posted is None and where.ts and why in GONE:
            moved = await self._moved(where)
            if moved is not None:
                posted, why = await chat.post(self.client, moved, body, fallback)
        return posted, why

    async def _moved(self, gone: MessageRef) -> MessageRef | None:
        """Where an incident's thread ``gone`` carries on (posted now if need be)."""
        incident_id = await self.rt.call(
            self.rt.links.incident_at, gone.channel, gone.ts
        ) or await self.rt.call(self.rt.links.gone_thread, gone)
        if incident_id is None:
            return None  # not an incident's thread (a reply where someone asked)
        return await self.relink(incident_id, gone)
