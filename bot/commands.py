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
from slack_sdk.models.blocks import Block

from bot import blocks as b
from bot import buttons, cards, text
from bot.links import MessageRef
from bot.listener import Listener, Parts
from bot.parking import Threads
from bot.policy_view import policy_blocks
from bot.text import card_words, command_words, error_words, thread_words
from incidents.workflow import closed
from proposals.model import Proposal
from proposals.service import UndoRequest
from store.errors import StratusError
from undo.conflicts import UndoConflict

Ack = Callable[..., Awaitable[None]]
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
INCIDENT_ID = re.compile(r"^inc-[0-9a-f]{10}$")
# A first word that can only have been meant to name an incident (a path, a dotted name, an
# id of another spelling), which is answered as a bad id rather than read as a reason.
MEANT_AS_ID = re.compile(r"^(?:\.|inc\b|inc[-_])|[/\\]", re.IGNORECASE)


@dataclass(frozen=True)
class Invocation:
    user: str
    channel: str
    words: list[str]
    raw: str

    @property
    def rest(self) -> str:
        return self.raw.split(None, 1)[1] if len(self.raw.split(None, 1)) > 1 else ""


def cluster_option(rest: str) -> tuple[str | None, str]:
    """``--cluster NAME`` (or ``--cluster=NAME``) leading the words after the namespace, and
    the question that follows: ('', rest) when it is not there, (None, …) when it names
    nothing. Only a leading option is read, so a question may mention --cluster freely."""
    words = rest.split(None, 2)
    if not words or not (words[0] == "--cluster" or words[0].startswith("--cluster=")):
        return "", rest
    if words[0] == "--cluster":
        if len(words) < 2:
            return None, ""
        return words[1], words[2] if len(words) > 2 else ""
    name = words[0].removeprefix("--cluster=")
    remaining = rest.split(None, 1)
    return (name or None), remaining[1] if len(remaining) > 1 else ""


class Commands(Listener):
    def __init__(self, parts: Parts, threads: Threads) -> None:
        super().__init__(parts)
        self.threads = threads
        self.table: dict[str, Callable[[Invocation, Ack], Awaitable[None]]] = {
            "investigate": self.investigate,
            "undo": self.undo,
            "status": self.status,
            "summary": self.summary,
            "postmortem": self.postmortem,
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
            await ack(text=command_words.HELP)
            return
        handler = self.table.get(words[0].lower())
        if handler is None:
            await ack(text=command_words.unknown_command(b.cut(words[0], 40)))
            return
        await handler(call, ack)

    # ------------------------------------------------------------------ subcommands

    async def help(self, call: Invocation, ack: Ack) -> None:
        await ack(text=command_words.HELP)

    async def investigate(self, call: Invocation, ack: Ack) -> None:
        if len(call.words) < 2:
            await ack(text=command_words.USAGE["investigate"])
            return
        namespace = call.words[1]
        if not NAMESPACE.fullmatch(namespace):
            await ack(
                text=command_words.bad_namespace(b.cut(namespace, 80))
                + "\n"
                + command_words.USAGE["investigate"]
            )
            return
        question = call.rest.split(None, 1)[1] if len(call.rest.split(None, 1)) > 1 else ""
        cluster, question = cluster_option(question)
        if cluster is None:
            await ack(text=command_words.missing_cluster())
            return
        try:
            # A name the fleet does not hold is answered now, before anything opens (a lookup
            # in memory: the acknowledgement stays quick).
            self.rt.workflow.cluster_named(cluster)
        except StratusError as error:
            await ack(text=error_words.failed_error(thread_words.incident_title(namespace), error))
            return
        await ack(text=command_words.investigating(namespace))
        self.rt.spawn(
            self._investigate(call, namespace, question, cluster), name=f"investigate {namespace}"
        )

    async def _investigate(
        self, call: Invocation, namespace: str, question: str, cluster: str = ""
    ) -> None:
        try:
            incident, joined = await self.rt.work(
                self.rt.workflow.start,
                namespace,
                requester=call.user,
                question=question,
                source="slack",
                cluster=cluster,
            )
        except StratusError as error:
            await self._ephemeral(
                call, error_words.failed_error(thread_words.incident_title(namespace), error)
            )
            return
        if joined and not incident.parked:
            if incident.reopened and incident.state.value == "diagnosing":
                # The namespace's escalated incident was re-opened: it carries on in its
                # thread (posted anew first if Slack lost it), and nobody else advances it.
                await self.follower.refresh_parent(incident.id)
                await self._ephemeral(call, thread_words.looking_again(incident.id, namespace))
                await self.driver.advance(incident.id)
                self.follower.wake()
                return
            await self._ephemeral(call, command_words.joined(incident.id, namespace))
            await self.driver.carry_on_joined(incident.id)
            return
        # A new incident, or one parked because its thread could not be posted: post the
        # thread here (a retry, for the parked one), or park it and say why.
        refused = await self.threads.open(incident, call.channel, call.user)
        if refused:
            notice = thread_words.parked_notice(
                incident.id, namespace, refused, self.threads.minutes()
            )
            try:
                await self._ephemeral(call, notice)
            except SlackApiError:  # where we cannot post we may not whisper either: a DM then
                await self.threads.tell(call.user, notice)

    async def undo(self, call: Invocation, ack: Ack) -> None:
        if len(call.words) > 2:
            await ack(text=command_words.USAGE["undo"])
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
            await ack(text=error_words.failed_error(card_words.UNDO, error))
            return
        why = await self.gate.undo_of(call.user, original)
        if why:
            await ack(text=why)
            return
        await ack(text=thread_words.undo_asked(entry.id))
        self.rt.spawn(
            self._undo(
                call,
                UndoRequest(entry_id=entry.id, incident_id=entry.execution.incident_id),
                original,
            ),
            name="undo",
        )

    async def _undo(
        self, call: Invocation, request: UndoRequest, original: Proposal | None
    ) -> None:
        try:
            proposal = await self.rt.write(
                self.rt.service.propose_undo, request, requester=call.user
            )
        except UndoConflict as conflict:
            assert request.entry_id is not None
            body = {"user": {"id": call.user}, "channel": {"id": call.channel}}
            await self.offer_force(
                body, entry_id=request.entry_id, original=original, conflict=conflict
            )
            return
        except StratusError as error:
            await self._ephemeral(call, error_words.failed_error(card_words.UNDO, error))
            return
        await self.follower.ensure_card(proposal.id, MessageRef(call.channel, ""))
        await self._ephemeral(call, command_words.undo_proposed(proposal.id, proposal.state.value))
        await self.driver.after_answer(proposal, actor=call.user)
        self.follower.wake()

    async def status(self, call: Invocation, ack: Ack) -> None:
        if len(call.words) > 1:  # "status please" is not silently taken for "status"
            await ack(text=command_words.USAGE["status"])
            return

        def gather() -> tuple[str, list[Proposal]]:
            switch = self.rt.switch.state()
            now = self.rt.store.clock.now()
            lines = [
                command_words.STATUS_TITLE
                + " — "
                + (command_words.STATUS_PAUSED if switch.paused else command_words.STATUS_RUNNING)
            ]
            open_incidents = self.rt.incidents.recent(limit=20, open_only=True)
            lines += [
                command_words.status_incident(
                    i.id, i.namespace, i.state.value, text.duration(now - i.created_at)
                )
                + (command_words.in_cluster(i.cluster) if i.cluster else "")
                for i in open_incidents
            ] or [command_words.NO_OPEN_INCIDENTS]
            pending = [p for p in self.rt.service.pending() if p.state.value == "awaiting_approval"]
            lines += [
                card_words.tampered_line(p.id)
                if p.tampered
                else command_words.status_pending(
                    p.id, cards.title(p), len(p.approvals()), p.decision.min_approvals
                )
                for p in pending[:20]
            ] or [command_words.NO_PENDING]
            # A proposal with no card to click (made at a terminal, or its card never posted)
            # gets its buttons here; its line says who asked, from its requester.
            cardless = [
                p for p in pending[:20] if not p.tampered and self.rt.links.card(p.id) is None
            ]
            return "\n".join(lines), cardless

        said, cardless = await self.rt.call(gather)
        reply = b.cut(said, b.SECTION_TEXT)
        if not cardless:
            await ack(text=reply)
            return
        rows: list[Block] = [b.section(reply)]
        for proposal in cardless:
            rows += [
                b.section(
                    command_words.status_terminal_pending(
                        proposal.id, cards.title(proposal), proposal.requester
                    )
                ),
                *buttons.answer_row(proposal),
            ]
        await ack(text=reply, blocks=b.render(rows))

    def _incident_of(self, call: Invocation, *, open_only: bool) -> tuple[str | None, str]:
        """The incident a command names (``inc-…``, which must exist), or the one of this
        channel: the newest for ``summary``; for ``cancel`` only when exactly one is open —
        a slash command carries no thread, and cancelling is not a guess. ``(None, why)``
        otherwise."""
        named = [w for w in call.words[1:] if w.startswith("inc-")]
        if named:
            wanted = named[0]
            if not INCIDENT_ID.fullmatch(wanted):
                return None, command_words.no_such_incident(wanted)
            try:
                found = self.rt.incidents.get(wanted)
            except StratusError:
                return None, command_words.no_such_incident(wanted)
            if open_only and not found.is_open:
                return None, error_words.refused_error(closed(found))
            return wanted, ""
        if len(call.words) > 1 and MEANT_AS_ID.search(call.words[1]):
            return None, command_words.not_an_incident_id(call.words[1])
        here = self.rt.links.incident_in(call.channel)
        if not open_only:
            return (here[0], "") if here else (None, command_words.NO_INCIDENT_HERE)
        still_open = [i for i in here if self.rt.incidents.get(i).is_open]
        if len(still_open) == 1:
            return still_open[0], ""
        if not still_open:
            return None, command_words.NO_OPEN_INCIDENT_HERE
        return None, command_words.which_incident(still_open[:5])

    async def summary(self, call: Invocation, ack: Ack) -> None:
        incident_id, why = await self.rt.call(self._incident_of, call, open_only=False)
        if incident_id is None:
            await ack(text=why + "\n" + command_words.USAGE["summary"])
            return
        await ack(text=command_words.SUMMARY_POSTED)
        self.rt.spawn(self.follower.post_summary(incident_id), name="summary")

    async def postmortem(self, call: Invocation, ack: Ack) -> None:
        incident_id, why = await self.rt.call(self._incident_of, call, open_only=False)
        if incident_id is None:
            await ack(text=why + "\n" + command_words.USAGE["postmortem"])
            return
        await ack(text=command_words.POSTMORTEM_POSTED)
        self.rt.spawn(self.follower.post_postmortem(incident_id), name="postmortem")

    async def policy(self, call: Invocation, ack: Ack) -> None:
        if len(call.words) > 2 or (len(call.words) == 2 and not NAMESPACE.fullmatch(call.words[1])):
            await ack(text=command_words.USAGE["policy"])
            return
        namespace = call.words[1] if len(call.words) == 2 else ""
        body = await self.rt.call(policy_blocks, self.rt, namespace)
        await ack(text=command_words.policy_title(namespace), blocks=b.render(body))

    async def cancel(self, call: Invocation, ack: Ack) -> None:
        incident_id, why = await self.rt.call(self._incident_of, call, open_only=True)
        if incident_id is None:
            await ack(text=why + "\n" + command_words.USAGE["cancel"])
            return
        refusal = await self.gate.cancel(call.user, incident_id, channel=call.channel)
        if refusal:
            await ack(text=refusal)
            return
        await ack(text=thread_words.cancelling(incident_id))
        reason = " ".join(w for w in call.words[1:] if w != incident_id)
        self.rt.spawn(self._cancel(call, incident_id, reason), name="cancel")

    async def _cancel(self, call: Invocation, incident_id: str, reason: str) -> None:
        try:
            await self.rt.write(
                self.rt.workflow.cancel, incident_id, actor=call.user, reason=reason
            )
        except StratusError as error:
            await self._ephemeral(call, error_words.failed_error(incident_id, error))
        self.follower.wake()

    async def pause(self, call: Invocation, ack: Ack) -> None:
        await self._switch(call, ack, paused=True)

    async def resume(self, call: Invocation, ack: Ack) -> None:
        await self._switch(call, ack, paused=False)

    async def _switch(self, call: Invocation, ack: Ack, *, paused: bool) -> None:
        refused = await self.gate.pause(call.user)
        if refused:
            await ack(text=refused)
            return
        reason = call.rest
        before = await self.rt.call(self.rt.switch.state)
        if before.paused == paused:
            await ack(
                text=command_words.ALREADY_PAUSED if paused else command_words.ALREADY_RUNNING
            )
            return
        flip = self.rt.switch.pause if paused else self.rt.switch.resume
        state = await self.rt.call(flip, actor=call.user, reason=reason)
        announcement = (
            command_words.paused(state.actor, reason)
            if paused
            else command_words.resumed(call.user)
        )
        # Acknowledged first, whatever happens to the announcement: the switch has flipped.
        await ack(text=command_words.switch_flipped(paused))
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
                call.user, command_words.not_announced(call.channel, why) + "\n" + announcement
            )

    async def _ephemeral(self, call: Invocation, message: str) -> None:
        await self.client.chat_postEphemeral(channel=call.channel, user=call.user, text=message)
