"""``/stratus …``: parsing the words and answering within Slack's three seconds.

Each subcommand acknowledges at once (the acknowledgement is the ephemeral reply) and leaves
the work to a background task. Unknown or malformed arguments get the usage, never silence.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks as b
from bot import text
from bot.authz import Gate
from bot.driver import Driver
from bot.follower import Follower
from bot.links import MessageRef
from bot.parking import Threads
from bot.policy_view import policy_blocks
from bot.runtime import Runtime
from proposals.service import UndoRequest
from store.errors import StratusError

Ack = Callable[..., Awaitable[None]]
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
INCIDENT_ID = re.compile(r"^inc-[0-9a-f]{10}$")


@dataclass(frozen=True)
class Invocation:
    user: str
    channel: str
    words: list[str]
    raw: str

    @property
    def rest(self) -> str:
        return self.raw.split(None, 1)[1] if len(self.raw.split(None, 1)) > 1 else ""


class Commands:
    def __init__(
        self,
        runtime: Runtime,
        client: AsyncWebClient,
        follower: Follower,
        driver: Driver,
        gate: Gate,
        threads: Threads,
    ) -> None:
        self.rt = runtime
        self.client = client
        self.follower = follower
        self.driver = driver
        self.gate = gate
        self.threads = threads
        self.table: dict[str, Callable[[Invocation, Ack], Awaitable[None]]] = {
            "investigate": self.investigate,
            "undo": self.undo,
            "status": self.status,
            "summary": self.summary,
            "policy": self.policy,
            "cancel": self.cancel,
            "pause": self.pause,
            "resume": self.resume,
            "help": self.help,
        }

    async def dispatch(self, command: dict[str, Any], ack: Ack) -> None:
        raw = str(command.get("text") or "").strip()
        words = raw.split()
        call = Invocation(
            user=str(command.get("user_id", "")),
            channel=str(command.get("channel_id", "")),
            words=words,
            raw=raw,
        )
        if not words:
            await ack(text=text.HELP)
            return
        handler = self.table.get(words[0].lower())
        if handler is None:
            await ack(text=text.unknown_command(b.cut(words[0], 40)))
            return
        await handler(call, ack)

    # ------------------------------------------------------------------ subcommands

    async def help(self, call: Invocation, ack: Ack) -> None:
        await ack(text=text.HELP)

    async def investigate(self, call: Invocation, ack: Ack) -> None:
        if len(call.words) < 2:
            await ack(text=text.USAGE["investigate"])
            return
        namespace = call.words[1]
        if not NAMESPACE.fullmatch(namespace):
            await ack(
                text=text.bad_namespace(b.cut(namespace, 80)) + "\n" + text.USAGE["investigate"]
            )
            return
        question = call.rest.split(None, 1)[1] if len(call.rest.split(None, 1)) > 1 else ""
        await ack(text=text.investigating(namespace))
        self.rt.spawn(self._investigate(call, namespace, question), name=f"investigate {namespace}")

    async def _investigate(self, call: Invocation, namespace: str, question: str) -> None:
        try:
            incident, joined = await self.rt.work(
                self.rt.workflow.start,
                namespace,
                requester=call.user,
                question=question,
                source="slack",
            )
        except StratusError as error:
            await self._ephemeral(call, text.failed(text.incident_title(namespace), error.message))
            return
        if joined and not incident.parked:
            await self._ephemeral(call, text.joined(incident.id, namespace))
            return
        # A new incident, or one parked because its thread could not be posted: post the
        # thread here (a retry, for the parked one), or park it and say why.
        refused = await self.threads.open(incident, call.channel, call.user)
        if refused:
            notice = text.parked_notice(incident.id, namespace, refused, self.threads.minutes())
            try:
                await self._ephemeral(call, notice)
            except SlackApiError:  # where we cannot post we may not whisper either: a DM then
                await self.threads.tell(call.user, notice)

    async def undo(self, call: Invocation, ack: Ack) -> None:
        if len(call.words) > 2:
            await ack(text=text.USAGE["undo"])
            return
        target = call.words[1] if len(call.words) == 2 else "last"
        request = UndoRequest(last=True) if target == "last" else UndoRequest(entry_id=target)
        # The entry is resolved once and checked with the Undo button's rule; the proposal
        # then names that entry, so "last" cannot move to another write in between.
        try:
            entry = await self.rt.call(self.rt.service.undo_target, request)
            original = (
                await self.rt.call(self.rt.service.get, entry.execution.proposal_id)
                if entry.execution.proposal_id
                else None
            )
        except StratusError as error:
            await ack(text=text.failed(text.UNDO, error.message))
            return
        why = await self.gate.undo_of(call.user, original)
        if why:
            await ack(text=why)
            return
        await ack()
        self.rt.spawn(
            self._undo(
                call, UndoRequest(entry_id=entry.id, incident_id=entry.execution.incident_id)
            ),
            name="undo",
        )

    async def _undo(self, call: Invocation, request: UndoRequest) -> None:
        try:
            proposal = await self.rt.write(
                self.rt.service.propose_undo, request, requester=call.user
            )
        except StratusError as error:
            await self._ephemeral(call, text.failed(text.UNDO, error.message))
            return
        await self.follower.ensure_card(proposal.id, MessageRef(call.channel, ""))
        await self._ephemeral(call, text.undo_proposed(proposal.id, proposal.state.value))
        await self.driver.after_answer(proposal, actor=call.user)
        self.follower.wake()

    async def status(self, call: Invocation, ack: Ack) -> None:
        if len(call.words) > 1:  # "status please" is not silently taken for "status"
            await ack(text=text.USAGE["status"])
            return

        def gather() -> str:
            switch = self.rt.switch.state()
            now = self.rt.store.clock.now()
            lines = [
                text.STATUS_TITLE
                + " — "
                + (text.STATUS_PAUSED if switch.paused else text.STATUS_RUNNING)
            ]
            open_incidents = self.rt.incidents.recent(limit=20, open_only=True)
            lines += [
                text.status_incident(
                    i.id, i.namespace, i.state.value, text.duration(now - i.created_at)
                )
                for i in open_incidents
            ] or [text.NO_OPEN_INCIDENTS]
            pending = [p for p in self.rt.service.pending() if p.state.value == "awaiting_approval"]
            lines += [
                text.tampered_line(p.id)
                if p.tampered
                else text.status_pending(
                    p.id, p.intent, len(p.approvals()), p.decision.min_approvals
                )
                for p in pending[:20]
            ] or [text.NO_PENDING]
            return "\n".join(lines)

        await ack(text=b.cut(await self.rt.call(gather), b.SECTION_TEXT))

    def _incident_of(self, call: Invocation, *, open_only: bool) -> tuple[str | None, str]:
        """The incident a command names (``inc-…``, which must exist), or the one of this
        channel: the newest for ``summary``; for ``cancel`` only when exactly one is open —
        a slash command carries no thread, and cancelling is not a guess. ``(None, why)``
        otherwise."""
        named = [w for w in call.words[1:] if w.startswith("inc-")]
        if named:
            wanted = named[0]
            if not INCIDENT_ID.fullmatch(wanted):
                return None, text.no_such_incident(wanted)
            try:
                self.rt.incidents.get(wanted)
            except StratusError:
                return None, text.no_such_incident(wanted)
            return wanted, ""
        here = self.rt.links.incident_in(call.channel)
        if not open_only:
            return (here[0], "") if here else (None, text.NO_INCIDENT_HERE)
        still_open = [i for i in here if self.rt.incidents.get(i).is_open]
        if len(still_open) == 1:
            return still_open[0], ""
        if not still_open:
            return None, text.NO_OPEN_INCIDENT_HERE
        return None, text.which_incident(still_open[:5])

    async def summary(self, call: Invocation, ack: Ack) -> None:
        incident_id, why = await self.rt.call(self._incident_of, call, open_only=False)
        if incident_id is None:
            await ack(text=why + "\n" + text.USAGE["summary"])
            return
        await ack(text=text.SUMMARY_POSTED)
        self.rt.spawn(self.follower.post_summary(incident_id), name="summary")

    async def policy(self, call: Invocation, ack: Ack) -> None:
        if len(call.words) > 2 or (len(call.words) == 2 and not NAMESPACE.fullmatch(call.words[1])):
            await ack(text=text.USAGE["policy"])
            return
        namespace = call.words[1] if len(call.words) == 2 else ""
        body = await self.rt.call(policy_blocks, self.rt, namespace)
        await ack(text=text.policy_title(namespace), blocks=b.render(body))

    async def cancel(self, call: Invocation, ack: Ack) -> None:
        incident_id, why = await self.rt.call(self._incident_of, call, open_only=True)
        if incident_id is None:
            await ack(text=why + "\n" + text.USAGE["cancel"])
            return
        refusal = await self.gate.cancel(call.user, incident_id, channel=call.channel)
        if refusal:
            await ack(text=refusal)
            return
        await ack()
        reason = " ".join(w for w in call.words[1:] if w != incident_id)
        self.rt.spawn(self._cancel(call, incident_id, reason), name="cancel")

    async def _cancel(self, call: Invocation, incident_id: str, reason: str) -> None:
        try:
            await self.rt.write(
                self.rt.workflow.cancel, incident_id, actor=call.user, reason=reason
            )
        except StratusError as error:
            await self._ephemeral(call, text.failed(incident_id, error.message))
        self.follower.wake()

    async def pause(self, call: Invocation, ack: Ack) -> None:
        await self._switch(call, ack, paused=True)

    async def resume(self, call: Invocation, ack: Ack) -> None:
        await self._switch(call, ack, paused=False)

    async def _switch(self, call: Invocation, ack: Ack, *, paused: bool) -> None:
        if not await self.gate.admin(call.user):
            await ack(text=text.PAUSE_REFUSED)
            return
        reason = call.rest
        before = await self.rt.call(self.rt.switch.state)
        if before.paused == paused:
            await ack(text=text.ALREADY_PAUSED if paused else text.ALREADY_RUNNING)
            return
        flip = self.rt.switch.pause if paused else self.rt.switch.resume
        state = await self.rt.call(flip, actor=call.user, reason=reason)
        announcement = text.paused(state.actor, reason) if paused else text.resumed(call.user)
        # Acknowledged first, whatever happens to the announcement: the switch has flipped.
        await ack(text=text.switch_flipped(paused))
        self.rt.spawn(self._announce(call, announcement), name="announce the kill switch")
        if not paused:
            await self.driver.resume_open()

    async def _announce(self, call: Invocation, announcement: str) -> None:
        """The switch's announcement in the channel it was flipped from; where the bot may not
        post (not in the channel, rate limited), the admin gets it in a direct message with
        why it is not in the channel."""
        try:
            await self.client.chat_postMessage(channel=call.channel, text=announcement)
        except SlackApiError as error:
            why = str(error.response.get("error") or "refused")
            await self.threads.tell(
                call.user, text.not_announced(call.channel, why) + "\n" + announcement
            )

    async def _ephemeral(self, call: Invocation, message: str) -> None:
        await self.client.chat_postEphemeral(channel=call.channel, user=call.user, text=message)
