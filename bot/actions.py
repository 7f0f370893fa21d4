"""What a click does, once the authorization middleware let it through: Approve once, Always
allow, Reject (a modal for the reason), Other options, Undo, See the whole diff, Revoke.

Each handler acknowledges first and leaves the work to a background task that calls the
proposal service (in a thread) and then lets the workflow move on. The cards are updated by
the follower from the events those calls append — never here.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from agents import telemetry
from bot import buttons, home, modals
from bot.links import MessageRef
from bot.listener import Listener
from bot.text import card_words, command_words, error_words, thread_words
from bot.whisper import whisper
from incidents import plans
from proposals.model import Choice, Proposal, ProposalState
from proposals.service import UndoRequest
from store.errors import StratusError
from undo.conflicts import UndoConflict
from undo.entries import UndoEntry

log = logging.getLogger("stratus.bot")
Ack = Callable[..., Awaitable[None]]
Respond = Callable[..., Awaitable[Any]]
P = ProposalState
MIN_REASON = 3


class Clicks(Listener):
    """The listeners of the cards' buttons and the reject modal."""

    # ------------------------------------------------------------------ answers

    async def approve(self, ack: Ack, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        self._answer(body, context, "approve")

    async def always(self, ack: Ack, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        self._answer(body, context, "always")

    async def plan(self, ack: Ack, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        proposal: Proposal = context["proposal"]
        user = str(body["user"]["id"])
        groups: tuple[str, ...] = context.get("groups", ())
        self.rt.spawn(self._plan(body, proposal, user, groups), name=f"plan {proposal.id}")

    async def _plan(
        self, body: dict[str, Any], proposal: Proposal, user: str, groups: tuple[str, ...]
    ) -> None:
        """Approve plan: the incident decides which later steps the vote binds and whether this
        person may approve each (``incidents.plans``); the bot only gathers their groups."""
        incident = (
            await self.rt.call(self.rt.incidents.get, proposal.incident_id)
            if proposal.incident_id
            else None
        )
        named = plans.approvers_named(incident.current) if incident and incident.current else []
        groups = tuple(sorted({*groups, *await self.gate.voter_groups(user, named)}))
        try:
            saved = await self.rt.call(
                plans.approve_plan,
                self.rt.service,
                incident,
                proposal,
                user=user,
                groups=groups,
                now=self.rt.store.clock.now(),
            )
        except StratusError as error:
            # "U0ALICE may not approve step 2 …": people and groups by handle.
            handles = await self.gate.handles(error_words.refused_error(error))
            await self.ephemeral(body, error_words.refused_error(error, handles))
            return
        self.follower.wake()
        await self.driver.after_answer(saved, actor=user)
        self.follower.wake()

    def _answer(
        self, body: dict[str, Any], context: dict[str, Any], choice: Choice, reason: str = ""
    ) -> None:
        proposal: Proposal = context["proposal"]
        user = str(body["user"]["id"])
        groups: tuple[str, ...] = context.get("groups", ())
        self.rt.spawn(
            self._vote(body, proposal, user, choice, groups, reason), name=f"{choice} {proposal.id}"
        )

    async def _vote(
        self,
        body: dict[str, Any],
        proposal: Proposal,
        user: str,
        choice: Choice,
        groups: tuple[str, ...],
        reason: str,
    ) -> None:
        try:
            saved = await self.rt.call(
                self.rt.service.answer,
                proposal.id,
                user=user,
                choice=choice,
                groups=groups,
                reason=reason,
            )
        except StratusError as error:
            await self.ephemeral(body, error_words.refused_error(error))
            return
        self.follower.wake()
        if saved.state == P.AWAITING_APPROVAL and choice != "reject":
            await self.ephemeral(
                body, error_words.vote_counted(len(saved.approvals()), saved.decision.min_approvals)
            )
            return
        await self.driver.after_answer(saved, actor=user)
        self.follower.wake()
        if await self.rt.call(self.rt.links.card, saved.id) is None:
            # No card shows what came of it (a proposal made at a terminal, answered from the
            # App Home or /stratus status): the person who clicked is told here.
            await self._answered_without_card(body, saved.id, user)
            return
        if choice != "reject" and saved.state == P.APPROVED:
            # The approval was stored but the write did not follow (a cancel of the incident
            # withdrew it, or the plan moved and it was superseded): say so, never nothing.
            settled = await self.gate.outcome(saved.id)
            if settled is not None and settled.state not in (P.EXECUTED, P.APPROVED, P.EXECUTING):
                await self.ephemeral(body, error_words.stale(settled.state.value, settled.reason))

    async def _answered_without_card(
        self, body: dict[str, Any], proposal_id: str, user: str
    ) -> None:
        settled = await self.gate.outcome(proposal_id)
        if settled is not None:
            await self.ephemeral(
                body, command_words.answered_here(settled.id, settled.intent, settled.state.value)
            )
        if (body.get("view") or {}).get("type") == "home":
            await home.publish(self.rt, self.gate, self.client, user)

    async def reject(self, ack: Ack, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        proposal: Proposal = context["proposal"]
        channel = str((body.get("channel") or {}).get("id", ""))
        await self.client.views_open(
            trigger_id=body["trigger_id"], view=modals.reject_view(proposal, channel)
        )

    async def reject_reason(
        self, ack: Ack, body: dict[str, Any], view: dict[str, Any], context: dict[str, Any]
    ) -> None:
        values = view.get("state", {}).get("values", {})
        reason = str((values.get("reason", {}).get("text", {}) or {}).get("value") or "").strip()
        if len(reason) < MIN_REASON:
            await ack(response_action="errors", errors={"reason": card_words.REJECT_TOO_SHORT})
            return
        if len(reason) > modals.REASON_MAX:  # the modal says so too; a forged submission may not
            await ack(response_action="errors", errors={"reason": card_words.REJECT_TOO_LONG})
            return
        await ack()
        channel = str(view.get("private_metadata", "")).partition("|")[2]
        body = {**body, "channel": {"id": channel}}
        self._answer(body, context, "reject", reason)

    async def other(self, ack: Ack, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        proposal: Proposal = context["proposal"]
        chosen = str(body["actions"][0]["selected_option"]["value"]).partition(":")[2]
        user = str(body["user"]["id"])
        groups: tuple[str, ...] = context.get("groups", ())
        self.rt.spawn(
            self._choose(body, proposal, user, chosen, groups), name=f"choose {proposal.id}"
        )

    async def _choose(
        self,
        body: dict[str, Any],
        proposal: Proposal,
        user: str,
        chosen: str,
        groups: tuple[str, ...],
    ) -> None:
        incident_id = proposal.incident_id
        if incident_id is None:
            await self.ephemeral(body, error_words.OPTION_GONE)
            return
        incident = await self.rt.call(self.rt.incidents.get, incident_id)
        options = {buttons.option_id(c): c for c in buttons.untried(incident, proposal)}
        candidate = options.get(chosen)
        if candidate is None:
            await self.ephemeral(body, error_words.OPTION_GONE)
            return
        reason = error_words.choosing(candidate.intent)

        def choose() -> None:
            # The waiting proposal is rejected here, with the user's groups (an approver through
            # a user group is one only if the service is told so); the workflow then records the
            # choice and finds nothing left waiting.
            if self.rt.service.get(proposal.id).state == P.AWAITING_APPROVAL:
                self.rt.service.answer(
                    proposal.id, user=user, choice="reject", groups=groups, reason=reason
                )
            self.rt.workflow.choose(
                incident_id, candidate_key=candidate.key(), actor=user, reason=reason
            )

        try:
            await self.rt.write(choose)
        except StratusError as error:
            await self.ephemeral(body, error_words.refused_error(error))
            return
        await self.driver.advance(incident_id, answered=True)
        self.follower.wake()

    # ------------------------------------------------------------------ undo, diff, revoke

    async def undo(self, ack: Ack, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        proposal: Proposal = context["proposal"]
        user = str(body["user"]["id"])
        self.rt.spawn(self._undo(body, proposal, user), name=f"undo {proposal.id}")

    async def _undo(self, body: dict[str, Any], proposal: Proposal, user: str) -> None:
        try:
            undo = await self.rt.write(
                self.rt.service.propose_undo,
                UndoRequest(entry_id=proposal.undo_id, incident_id=proposal.incident_id),
                requester=user,
            )
        except UndoConflict as conflict:
            assert proposal.undo_id is not None  # the gate let only an undoable card through
            await self.offer_force(
                body, entry_id=proposal.undo_id, original=proposal, conflict=conflict
            )
            return
        except StratusError as error:
            await self.ephemeral(body, error_words.refused_error(error))
            return
        thread = await self.rt.call(self.rt.links.card_thread, proposal.id)
        await self.follower.ensure_card(undo.id, thread)
        await self.driver.after_answer(undo, actor=user)
        self.follower.wake()

    async def force_undo(
        self, ack: Ack, body: dict[str, Any], context: dict[str, Any], respond: Respond
    ) -> None:
        """Force, pressed in the message that showed the conflict (the gate checked who, and
        that the object has not moved since): an undo proposal that overwrites the change."""
        await ack()
        entry: UndoEntry = context["entry"]
        user = str(body["user"]["id"])
        self.rt.spawn(self._force(body, entry, user, respond), name=f"force undo {entry.id}")

    async def _force(
        self, body: dict[str, Any], entry: UndoEntry, user: str, respond: Respond
    ) -> None:
        request = UndoRequest(
            entry_id=entry.id, force=True, incident_id=entry.execution.incident_id
        )
        try:
            undo = await self.rt.write(self.rt.service.propose_undo, request, requester=user)
        except StratusError as error:
            await self.ephemeral(body, error_words.refused_error(error))
            return
        channel = str((body.get("channel") or {}).get("id", ""))
        await self.follower.ensure_card(undo.id, MessageRef(channel, "") if channel else None)
        said = command_words.undo_proposed(undo.id, undo.state.value)
        # The offer is used: its button goes, so nobody presses a spent Force.
        try:
            replaced = await respond(text=said, replace_original=True)
            ok = getattr(replaced, "status_code", 200) == 200
        except (OSError, aiohttp.ClientError) as error:
            log.warning("replacing the Force offer failed: %s", error)
            ok = False
        if not ok:
            await self.ephemeral(body, said)
        await self.driver.after_answer(undo, actor=user)
        self.follower.wake()

    async def diff(self, ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        proposal = await self.gate.proposal(str(action.get("value", "")))
        if proposal is None:
            await self.ephemeral(body, error_words.UNKNOWN_ACTION)
            return
        await self.client.views_open(trigger_id=body["trigger_id"], view=modals.diff_view(proposal))

    async def error_lines(self, ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        proposal = await self.gate.proposal(str(action.get("value", "")))
        if proposal is None:
            await self.ephemeral(body, error_words.UNKNOWN_ACTION)
            return
        reader = self.rt.reader_for(proposal.cluster)
        lines = await self.rt.work(telemetry.error_lines, reader, proposal)
        await self.client.views_open(
            trigger_id=body["trigger_id"], view=modals.error_lines_view(proposal, lines)
        )

    async def revoke(self, ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        grant_id = str(action.get("value", ""))
        user = str(body["user"]["id"])
        grants = {g.id: g for g in await self.rt.call(self.rt.grants.all)}
        grant = grants.get(grant_id)
        if grant is None or not await self.gate.may_revoke(user, grant.created_by):
            await self.ephemeral(body, command_words.REVOKE_REFUSED)
            return
        try:
            await self.rt.call(self.rt.grants.revoke, grant_id, by=user)
        except StratusError as error:
            await self.ephemeral(body, error_words.refused_error(error))
            return
        await self.ephemeral(body, command_words.revoked(grant_id))
        if (body.get("view") or {}).get("type") == "home":
            await home.publish(self.rt, self.gate, self.client, user)

    # ------------------------------------------------------------------ look again

    async def look_again(self, ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        """Anyone in the channel may ask for a fresh look (it writes nothing; every proposal
        it makes still goes through the policy)."""
        await ack()
        incident_id = str(action.get("value", ""))
        user = str(body["user"]["id"])
        self.rt.spawn(self._look_again(body, incident_id, user), name=f"look again {incident_id}")

    async def _look_again(self, body: dict[str, Any], incident_id: str, user: str) -> None:
        try:
            incident = await self.rt.write(self.rt.workflow.reopen, incident_id, actor=user)
        except StratusError as error:
            await self.ephemeral(body, error_words.refused_error(error))
            return
        if incident.state.value != "diagnosing":
            await self.ephemeral(body, thread_words.LOOK_AGAIN_GONE)
            return
        await self.driver.advance(incident_id)
        self.follower.wake()

    # ------------------------------------------------------------------ helpers

    async def ephemeral(self, body: dict[str, Any], message: str) -> None:
        await whisper(self.client, body, message)


def where(body: dict[str, Any]) -> MessageRef | None:
    channel = (body.get("channel") or {}).get("id")
    message = body.get("message") or {}
    if not channel:
        return None
    return MessageRef(str(channel), str(message.get("thread_ts") or message.get("ts") or ""))
