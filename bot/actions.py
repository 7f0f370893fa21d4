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

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import cards, home, text
from bot.authz import Gate
from bot.driver import Driver
from bot.follower import Follower
from bot.links import MessageRef
from bot.runtime import Runtime
from proposals.model import Choice, Proposal, ProposalState
from proposals.service import UndoRequest
from store.errors import StratusError

log = logging.getLogger("stratus.bot")
Ack = Callable[..., Awaitable[None]]
P = ProposalState
MIN_REASON = 3


class Clicks:
    def __init__(
        self,
        runtime: Runtime,
        client: AsyncWebClient,
        follower: Follower,
        driver: Driver,
        gate: Gate,
    ) -> None:
        self.rt = runtime
        self.client = client
        self.follower = follower
        self.driver = driver
        self.gate = gate

    # ------------------------------------------------------------------ answers

    async def approve(self, ack: Ack, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        self._answer(body, context, "approve")

    async def always(self, ack: Ack, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        self._answer(body, context, "always")

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
            await self.ephemeral(body, text.refused(error.message))
            return
        self.follower.wake()
        if saved.state == P.AWAITING_APPROVAL and choice != "reject":
            await self.ephemeral(
                body, text.vote_counted(len(saved.approvals()), saved.decision.min_approvals)
            )
            return
        await self.driver.after_answer(saved, actor=user)
        self.follower.wake()
        if choice != "reject" and saved.state == P.APPROVED:
            # The approval was stored but the write did not follow (a cancel of the incident
            # withdrew it, or the plan moved and it was superseded): say so, never nothing.
            settled = await self.gate.outcome(saved.id)
            if settled is not None and settled.state not in (P.EXECUTED, P.APPROVED, P.EXECUTING):
                await self.ephemeral(body, text.stale(settled.state.value, settled.reason))

    async def reject(self, ack: Ack, body: dict[str, Any], context: dict[str, Any]) -> None:
        await ack()
        proposal: Proposal = context["proposal"]
        channel = str((body.get("channel") or {}).get("id", ""))
        await self.client.views_open(
            trigger_id=body["trigger_id"], view=cards.reject_view(proposal, channel)
        )

    async def reject_reason(
        self, ack: Ack, body: dict[str, Any], view: dict[str, Any], context: dict[str, Any]
    ) -> None:
        values = view.get("state", {}).get("values", {})
        reason = str((values.get("reason", {}).get("text", {}) or {}).get("value") or "").strip()
        if len(reason) < MIN_REASON:
            await ack(response_action="errors", errors={"reason": text.REJECT_TOO_SHORT})
            return
        if len(reason) > cards.REASON_MAX:  # the modal says so too; a forged submission may not
            await ack(response_action="errors", errors={"reason": text.REJECT_TOO_LONG})
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
            await self.ephemeral(body, text.OPTION_GONE)
            return
        incident = await self.rt.call(self.rt.incidents.get, incident_id)
        options = {cards.option_id(c): c for c in cards.untried(incident, proposal)}
        candidate = options.get(chosen)
        if candidate is None:
            await self.ephemeral(body, text.OPTION_GONE)
            return
        reason = text.choosing(candidate.intent)

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
            await self.ephemeral(body, text.refused(error.message))
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
        except StratusError as error:
            await self.ephemeral(body, text.refused(error.message))
            return
        thread = await self.rt.call(self.rt.links.card_thread, proposal.id)
        await self.follower.ensure_card(undo.id, thread)
        if undo.state == P.APPROVED:
            await self.driver.execute(undo.id, actor=user)
        self.follower.wake()

    async def diff(self, ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        proposal = await self.gate.proposal(str(action.get("value", "")))
        if proposal is None:
            await self.ephemeral(body, text.UNKNOWN_ACTION)
            return
        await self.client.views_open(trigger_id=body["trigger_id"], view=cards.diff_view(proposal))

    async def revoke(self, ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        grant_id = str(action.get("value", ""))
        user = str(body["user"]["id"])
        grants = {g.id: g for g in await self.rt.call(self.rt.grants.all)}
        grant = grants.get(grant_id)
        if grant is None or not await self.gate.may_revoke(user, grant.created_by):
            await self.ephemeral(body, text.REVOKE_REFUSED)
            return
        try:
            await self.rt.call(self.rt.grants.revoke, grant_id, by=user)
        except StratusError as error:
            await self.ephemeral(body, text.refused(error.message))
            return
        await self.ephemeral(body, text.revoked(grant_id))
        if (body.get("view") or {}).get("type") == "home":
            await home.publish(self.rt, self.gate, self.client, user)

    # ------------------------------------------------------------------ helpers

    async def ephemeral(self, body: dict[str, Any], message: str) -> None:
        """A word to whoever clicked, beside what they clicked; where the bot may not whisper
        (a click in the App Home, a channel the bot is not in) a direct message instead, so a
        revoke or a refusal is never done in silence."""
        user = str((body.get("user") or {}).get("id", ""))
        channel = str((body.get("channel") or {}).get("id", ""))
        thread = (body.get("message") or {}).get("thread_ts")
        if channel:
            try:
                await self.client.chat_postEphemeral(
                    channel=channel,
                    user=user,
                    text=message,
                    **({"thread_ts": thread} if thread else {}),
                )
                return
            except SlackApiError as error:
                log.warning("chat.postEphemeral failed: %s", error.response.get("error"))
        try:
            await self.client.chat_postMessage(channel=user, text=message)
        except SlackApiError as error:
            log.warning("telling %s failed: %s", user, error.response.get("error"))


def where(body: dict[str, Any]) -> MessageRef | None:
    channel = (body.get("channel") or {}).get("id")
    message = body.get("message") or {}
    if not channel:
        return None
    return MessageRef(str(channel), str(message.get("thread_ts") or message.get("ts") or ""))
