"""Opening an incident's thread — and what happens when Slack will not take it.

An investigation lives in its thread: every step, card and button is posted there. When the
thread itself cannot be posted (``not_in_channel``, ``channel_not_found``, the rate limit after
the client's retries, Slack unreachable), the incident is *parked* instead of left open with
nobody driving it: nothing runs, the person is told why, the incident says so in
``stratus incidents list/show`` and in the App Home with a **Retry** button, and after the
workflow's ``park_seconds`` it ends (``IncidentWorkflow.release_parked``) so its namespace can
be investigated again. A retry — the button, or ``/stratus investigate`` of the namespace
again — posts the thread (in the channel of the retry, for a new command) and carries on.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError

from bot import alert_blocks, cards
from bot.authz import Gate
from bot.driver import Driver
from bot.follower import Follower
from bot.links import MessageRef
from bot.runtime import Runtime
from bot.text import thread_words
from incidents.model import Incident
from incidents.repository import IncidentEventType, IncidentNotFound

log = logging.getLogger("stratus.bot")
RETRY = "stratus.retry_thread"


class Threads:
    def __init__(self, runtime: Runtime, follower: Follower, driver: Driver, gate: Gate) -> None:
        self.rt = runtime
        self.follower = follower
        self.driver = driver
        self.gate = gate

    async def open(self, incident: Incident, channel: str, user: str) -> str:
        """Post the incident's parent message in ``channel`` and advance the incident; or
        park it. Returns Slack's error ("" when the thread was posted)."""
        parent, error = await self.post_thread(incident, channel, user)
        if parent is None:
            return error
        await self.driver.advance(incident.id)
        self.follower.wake()
        return ""

    async def post_thread(
        self, incident: Incident, channel: str, user: str
    ) -> tuple[MessageRef | None, str]:
        """Post the incident's parent message in ``channel`` (nothing is advanced): the thread
        and "", or — parked, with Slack's error — None and that error. ``user`` is who asked
        (an alert's incident: its ``alert:NAME`` requester, which no Slack user can be)."""
        now = self.rt.store.clock.now()
        parent, error = await self.follower.post_checked(
            MessageRef(channel, ""),
            cards.incident_parent(incident, now),
            thread_words.incident_fallback(incident.namespace, incident.state.value),
        )
        if parent is None:
            await self.rt.call(self.rt.links.park, incident.id, channel, user)
            await self.rt.call(
                self.rt.workflow.park,
                incident.id,
                reason=thread_words.parked_reason(channel, error),
                actor=user,
            )
            return None, error
        await self.rt.call(self.rt.links.link_thread, incident.id, parent, user)
        await self.rt.call(self.rt.links.unpark, incident.id)
        if incident.parked:
            await self.rt.call(self.rt.workflow.unpark, incident.id, actor=user)
            await self._replay_alerts(incident.id, parent)
        return parent, ""

    async def _replay_alerts(self, incident_id: str, thread: MessageRef) -> None:
        """The alerts that fired (and cleared) while the thread could not be posted: the
        follower passed them by with nowhere to show them."""
        events = await self.rt.call(self.rt.incidents.events, incident_id=incident_id, limit=500)
        for envelope in events:
            event = envelope.event
            if envelope.seq in self.follower.shown_alerts:
                continue
            if event.type in (IncidentEventType.ALERT_FIRED, IncidentEventType.ALERT_RESOLVED):
                self.follower.shown_alerts.add(envelope.seq)
            if event.type == IncidentEventType.ALERT_FIRED:
                await self.follower.post(thread, alert_blocks.fired(event.data), event.message)
            elif event.type == IncidentEventType.ALERT_RESOLVED:
                await self.follower.post(thread, alert_blocks.resolved(event.data), event.message)

    def minutes(self) -> int:
        return max(1, round(self.rt.workflow.config.park_seconds / 60))

    # ------------------------------------------------------------------ the Retry button

    async def retry_click(self, ack: Any, body: dict[str, Any]) -> None:
        await ack()
        user = str((body.get("user") or {}).get("id", ""))
        incident_id = str(((body.get("actions") or [{}])[0]).get("value") or "")
        self.rt.spawn(self._retry(user, incident_id), name=f"retry {incident_id}")

    async def _retry(self, user: str, incident_id: str) -> None:
        place = await self.rt.call(self.rt.links.parked_in, incident_id)
        incident = await self.rt.call(self._parked, incident_id)
        if place is None or incident is None:
            await self.tell(user, thread_words.RETRY_GONE)
            return
        channel, requester = place
        # An alert's incident has no person behind it (requester ``alert:NAME``): an admin —
        # a default approver, user groups resolved — retries it.
        if user not in (requester, incident.requester) and not await self.gate.admin(user):
            await self.tell(user, thread_words.RETRY_REFUSED)
            return
        error = await self.open(incident, channel, user)
        if error:
            await self.tell(
                user,
                thread_words.parked_notice(incident.id, incident.namespace, error, self.minutes()),
            )

    def _parked(self, incident_id: str) -> Incident | None:
        try:
            incident = self.rt.incidents.get(incident_id)
        except IncidentNotFound:
            return None
        return incident if incident.is_open and incident.parked else None

    async def tell(self, user: str, message: str) -> None:
        """A word to the user in a direct message (a click in the App Home has no channel)."""
        try:
            await self.follower.client.chat_postMessage(channel=user, text=message)
        except SlackApiError as error:
            log.warning("telling %s failed: %s", user, error.response.get("error"))
