"""Authorization of every click, as one middleware: who may answer, undo or revoke — and which
buttons are stale. A refused or stale click is acknowledged, answered with an ephemeral
message and changes nothing (the handler never runs). Double clicks and Slack retries are
dropped here too; the proposal service's compare-and-set makes a second execution impossible
anyway.

The rules themselves are the proposal service's (``ProposalService.refusal``) and
``policies.authority``'s (who may undo, cancel, revoke or pause, who is an admin) — the CLI
asks the same functions; this module only
gathers the facts a click carries (the user, their user groups from ``usergroups.users.list``)
and the proposal's stored state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import buttons, modals, text
from bot.names import Names
from bot.runtime import Runtime
from bot.text import command_words, error_words, undo_words
from bot.whisper import whisper
from policies import approvers, authority
from policies.approvals import ApprovalRequest
from proposals.errors import ProposalNotFound
from proposals.model import Proposal, ProposalState
from proposals.service import UndoRequest
from store.errors import StratusError
from undo.entries import UndoEntry

log = logging.getLogger("stratus.bot")
P = ProposalState
GROUP_TTL = 60.0
SEEN_CLICKS = 2048
# How long a click on an approved proposal waits to say what became of it (run, superseded,
# withdrawn by a cancel) rather than "about to run", which may turn out false.
SETTLE_SECONDS = 20.0


class Groups:
    """A user's Slack user groups among those a policy (or the impersonation mapping) names.

    Memberships are cached for ``ttl`` (``GROUP_TTL``) and refreshed behind the clicks: a
    click on an entry past its TTL is answered from it while one background lookup refreshes
    it, so no click waits for ``usergroups.users.list`` once a group has been seen (``warm``
    looks up the policy's and the impersonation mapping's groups when the bot starts). An
    entry older than twice the TTL is not trusted: that click waits for the fresh answer, so
    a removed member is refused within two minutes.
    """

    def __init__(self, client: AsyncWebClient, ttl: float = GROUP_TTL) -> None:
        self.client = client
        self.ttl = ttl
        self._members: dict[str, tuple[float, frozenset[str]]] = {}
        # One lookup per group at a time: fifty clicks arriving together wait for the first
        # answer instead of asking Slack fifty times (and meeting its rate limit).
        self._loading: dict[str, asyncio.Future[frozenset[str]]] = {}
        self._refreshing: set[asyncio.Task[frozenset[str]]] = set()

    async def warm(self, named: list[str]) -> None:
        """Look up every user group in ``named`` now (at start), not on the first click."""
        groups = sorted({g for g in named if g.startswith("S")})
        await asyncio.gather(*(self.members(g) for g in groups), return_exceptions=True)

    async def members(self, group: str) -> frozenset[str]:
        cached = self._members.get(group)
        age = time.monotonic() - cached[0] if cached is not None else None
        if cached is not None and age is not None and age <= self.ttl:
            return cached[1]
        if cached is not None and age is not None and age <= 2 * self.ttl:
            if group not in self._loading:
                task = asyncio.get_running_loop().create_task(self._load(group))
                self._refreshing.add(task)
                task.add_done_callback(self._refreshed)
            return cached[1]
        loading = self._loading.get(group)
        if loading is not None:
            return await asyncio.shield(loading)
        return await self._load(group)

    def _refreshed(self, task: asyncio.Task[frozenset[str]]) -> None:
        self._refreshing.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("refreshing a user group failed: %s", task.exception())

    async def _load(self, group: str) -> frozenset[str]:
        future: asyncio.Future[frozenset[str]] = asyncio.get_running_loop().create_future()
        self._loading[group] = future
        try:
            try:
                response = await self.client.usergroups_users_list(usergroup=group)
                members = frozenset(str(u) for u in response.get("users") or [])
            except SlackApiError as error:
                log.warning("usergroups.users.list %s: %s", group, error.response.get("error"))
                members = frozenset()
            self._members[group] = (time.monotonic(), members)
            future.set_result(members)
            return members
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: waiters re-raise it, nobody logs it as lost
            raise
        finally:
            del self._loading[group]

    async def of(self, user: str, named: list[str]) -> tuple[str, ...]:
        found = []
        for group in dict.fromkeys(named):
            if group.startswith("S") and user in await self.members(group):
                found.append(group)
        return tuple(found)

    async def allowed(self, user: str, named: list[str]) -> bool:
        return "*" in named or user in named or bool(await self.of(user, named))


NAME_WAIT = 2.0  # seconds a refusal waits for the handles it names


class Gate:
    """The checks, separate from bolt so they read top to bottom."""

    def __init__(self, runtime: Runtime, groups: Groups, names: Names | None = None) -> None:
        self.rt = runtime
        self.groups = groups
        # Handles for the ids a refusal names, from the cache the cards filled (a click never
        # waits on a lookup).
        self.names = names
        self._seen: OrderedDict[tuple[str, str, str], None] = OrderedDict()
        self._reading: dict[str, asyncio.Future[Proposal | None]] = {}

    async def handles(self, sentence: str) -> dict[str, str] | None:
        """Handles for the ids a refusal names ("… S0SRE and also U0CAROL"): the cache, and a
        lookup of what it lacks, bounded (``NAME_WAIT``) so that a slow Slack never holds a
        refusal up — a lookup not done in time leaves the id."""
        ids = text.slack_ids(sentence)
        if self.names is None or not ids:
            return None
        try:
            return await asyncio.wait_for(self.names.warm(ids), NAME_WAIT)
        except TimeoutError:
            return self.names.known()

    def duplicate(self, user: str, action_id: str, action_ts: str) -> bool:
        key = (user, action_id, action_ts)
        if not action_ts:
            return False
        if key in self._seen:
            return True
        self._seen[key] = None
        while len(self._seen) > SEEN_CLICKS:
            self._seen.popitem(last=False)
        return False

    async def proposal(self, proposal_id: str) -> Proposal | None:
        """The proposal a click names. Clicks that arrive together on one card share one read
        (the one in flight, started milliseconds before) instead of fifty; nothing is kept
        after it, since a stale copy could refuse a click that is legitimate now (an Undo
        right after the execution). The proposal service checks everything again, atomically,
        when an answer is stored."""
        loading = self._reading.get(proposal_id)
        if loading is None:
            loading = asyncio.ensure_future(self._read(proposal_id))
            self._reading[proposal_id] = loading
            loading.add_done_callback(lambda _: self._reading.pop(proposal_id, None))
        return await asyncio.shield(loading)

    async def _read(self, proposal_id: str) -> Proposal | None:
        try:
            found: Proposal | None = await self.rt.call(self.rt.service.get, proposal_id)
        except ProposalNotFound:
            found = None
        return found

    async def from_card(self, proposal_id: str, body: dict[str, Any]) -> bool:
        """Whether a click came from the proposal's own card: the channel and message Slack says
        it was clicked on are the ones the bot posted the proposal's card as. A click naming a
        proposal from elsewhere (another channel, a message that is not its card) is not one
        a person made on what they read. A proposal with no card (made at a terminal) is
        answered where the bot lists it: the clicker's App Home, when that view shows this
        proposal's button, or the ``/stratus status`` reply (an ephemeral message)."""
        container = body.get("container") or {}
        card = await self.rt.call(self.rt.links.card, proposal_id)
        if card is None:
            view = body.get("view") or {}
            if view.get("type") == "home":
                return proposal_id in _button_values(view.get("blocks") or [])
            return container.get("type") == "message" and bool(container.get("is_ephemeral"))
        channel = str(container.get("channel_id") or (body.get("channel") or {}).get("id") or "")
        ts = str(container.get("message_ts") or (body.get("message") or {}).get("ts") or "")
        return (card.channel, card.ts) == (channel, ts)

    async def outcome(self, proposal_id: str, *, wait: float = SETTLE_SECONDS) -> Proposal | None:
        """The proposal once it left approved/executing (what it became: executed, superseded,
        cancelled, failed), or as it is after ``wait`` seconds."""
        deadline = time.monotonic() + wait
        while True:
            found = await self._read(proposal_id)
            if found is None or found.state not in (P.APPROVED, P.EXECUTING):
                return found
            if time.monotonic() >= deadline:
                return found
            await asyncio.sleep(0.2)

    async def answer(
        self, user: str, proposal: Proposal, choice: str = "approve"
    ) -> tuple[str | None, tuple[str, ...]]:
        """Why this user may not answer this proposal now with ``choice`` (None: they may), and
        their groups."""
        now = self.rt.store.clock.now()
        if proposal.state != P.AWAITING_APPROVAL:
            return error_words.stale(proposal.state.value, proposal.reason), ()
        if now >= proposal.expires_at:
            return error_words.stale("expired"), ()
        groups = await self.voter_groups(user, approvers.named(proposal.decision.approver_lists))
        why = self.rt.service.refusal(
            proposal, user=user, groups=tuple(groups), now=now, choice=choice
        )
        if why is None:
            return None, groups
        handles = self.names.known() if self.names is not None else None
        refusal = (
            error_words.not_rejecter(why, handles)
            if choice == "reject"
            else error_words.not_approver(why, handles)
        )
        return refusal, groups

    async def voter_groups(self, user: str, named: Sequence[str]) -> tuple[str, ...]:
        """The user groups a vote records: those among ``named`` (the policy's approvers) and
        those the impersonation mapping gives Kubernetes groups for, which the write made as
        this voter carries (``policies.impersonation``) whatever the policy names."""
        return await self.groups.of(user, [*named, *self.rt.mapped_groups()])

    async def undo(self, user: str, proposal: Proposal) -> str | None:
        """Why this user may not press Undo on this card (None: they may)."""
        if proposal.state != P.EXECUTED or not proposal.undo_id:
            return error_words.NOT_UNDOABLE
        return await self.undo_of(user, proposal)

    async def undo_of(self, user: str, original: Proposal | None) -> str | None:
        """Why this user may not undo the write ``original`` made (None when no proposal made
        it): the one rule (``policies.authority``) for the Undo button and ``/stratus undo``."""
        decision = original.decision.policy_decision() if original is not None else None
        admins = self.rt.admins()
        lists = authority.undo_approvers(decision, admins)
        asker = await self.asker(user, approvers.named(lists))
        why = authority.undo_refusal(asker, original=decision, admins=admins)
        return error_words.undo_refused(why, await self.handles(why)) if why else None

    async def force_of(self, user: str, original: Proposal | None) -> str | None:
        """Why this user may not be offered Force for an undo of the write ``original`` made
        (``policies.authority.force_undo_refusal``), or None."""
        decision = original.decision.policy_decision() if original is not None else None
        admins = self.rt.admins()
        lists = authority.undo_approvers(decision, admins)
        asker = await self.asker(user, approvers.named(lists))
        why = authority.force_undo_refusal(asker, original=decision, admins=admins)
        return undo_words.force_refused(why, await self.handles(why)) if why else None

    async def force(
        self, user: str, body: dict[str, Any], value: str
    ) -> tuple[str | None, UndoEntry | None]:
        """Why a Force click does nothing (None: it may go on), and the entry it undoes. Force
        lives only in the message that showed its clicker the conflict, and its value binds it
        to that conflict: a click from anywhere else, by someone who may not undo the write, on
        an entry that left the stack, or after the object moved again is refused."""
        if not (body.get("container") or {}).get("is_ephemeral"):
            return undo_words.FORCE_NOT_OFFERED, None
        entry_id, _, digest = value.partition(":")
        try:
            entry = await self.rt.call(self.rt.service.undo_target, UndoRequest(entry_id=entry_id))
            made_by = entry.execution.proposal_id
            original = await self.rt.call(self.rt.service.get, made_by) if made_by else None
        except StratusError as error:
            return error_words.refused_error(error), None
        why = await self.force_of(user, original)
        if why:
            return why, None
        try:
            conflict = await self.rt.call(self.rt.service.undo_conflict, entry.id)
        except StratusError as error:
            return error_words.refused_error(error), None
        if conflict is None:
            return undo_words.FORCE_NOT_NEEDED, None
        if conflict.digest != digest:
            return undo_words.FORCE_STALE, None
        return None, entry

    async def cancel(self, user: str, incident_id: str, *, channel: str | None) -> str | None:
        """Why this user may not cancel the incident from ``channel`` (None: they may)."""
        facts = await self.rt.call(self._cancel_facts, incident_id)
        admins = self.rt.admins()
        named = [
            *admins,
            *(n for r in facts.waiting for n in approvers.named(r.decision.approvers)),
        ]
        asker = await self.asker(user, named)
        why = authority.cancel_refusal(
            asker, facts, admins=admins, asked_from=channel, now=self.rt.store.clock.now()
        )
        return error_words.cancel_refused(why) if why else None

    def _cancel_facts(self, incident_id: str) -> authority.CancelFacts:
        incident = self.rt.incidents.get(incident_id)
        thread = self.rt.links.thread(incident_id)
        waiting = [
            p for p in self.rt.service.by_incident(incident_id) if p.state == P.AWAITING_APPROVAL
        ]
        return authority.CancelFacts(
            incident_id=incident_id,
            requester=incident.requester,
            channel=thread.channel if thread is not None else None,
            waiting=tuple(approval_request(p) for p in waiting),
        )

    async def asker(self, user: str, named: Sequence[str]) -> authority.Asker:
        return authority.Asker(user=user, groups=await self.groups.of(user, list(named)))

    async def may_revoke(self, user: str, created_by: str) -> bool:
        admins = self.rt.admins()
        asker = await self.asker(user, admins)
        return authority.may_revoke(asker, created_by=created_by, admins=admins)

    async def pause(self, user: str) -> str | None:
        """Why this user may not pause or resume Stratus (None: they may)."""
        admins = self.rt.admins()
        why = authority.pause_refusal(await self.asker(user, admins), admins=admins)
        return command_words.PAUSE_REFUSED if why else None

    async def admin(self, user: str) -> bool:
        admins = self.rt.admins()
        return authority.is_admin(await self.asker(user, admins), admins)


def approval_request(proposal: Proposal) -> ApprovalRequest:
    return ApprovalRequest(
        proposal_id=proposal.id,
        facts=proposal.facts.policy_facts(),
        decision=proposal.decision.policy_decision(),
        digest=proposal.plan.digest,
        created_at=proposal.created_at,
    )


def _refusal_sender(
    client: AsyncWebClient, body: dict[str, Any]
) -> Callable[[str], Coroutine[Any, Any, None]]:
    async def send(message: str) -> None:
        await whisper(client, body, message)

    return send


Ack = Callable[..., Awaitable[BoltResponse]]


def middleware(gate: Gate) -> Callable[..., Awaitable[BoltResponse | None]]:
    """The bolt middleware: runs before every listener. When it answers a request itself
    (a refusal, a duplicate, a retry) it returns the acknowledgement — bolt answers 404 to a
    middleware that neither calls ``next`` nor returns a response."""

    async def authorize(
        body: dict[str, Any],
        context: dict[str, Any],
        client: AsyncWebClient,
        next: Callable[[], Awaitable[None]],
        ack: Ack,
        req: Any,
    ) -> BoltResponse | None:
        kind = body.get("type")
        if kind == "event_callback" and req.headers.get("x-slack-retry-num"):
            return await ack()  # handled on the first delivery; a retry must not answer twice
        if kind == "block_actions":
            return await _click(gate, body, context, client, next, ack)
        if (
            kind == "view_submission"
            and (body.get("view") or {}).get("callback_id") == modals.REJECT_VIEW
        ):
            user = str(body["user"]["id"])
            proposal_id = str(body["view"].get("private_metadata", "")).split("|")[0]
            proposal = await gate.proposal(proposal_id)
            why, groups = (
                await gate.answer(user, proposal, "reject")
                if proposal
                else (error_words.UNKNOWN_ACTION, ())
            )
            if why:
                return await ack(response_action="errors", errors={"reason": why[:150]})
            context["proposal"], context["groups"] = proposal, groups
        await next()
        return None

    return authorize


async def _click(
    gate: Gate,
    body: dict[str, Any],
    context: dict[str, Any],
    client: AsyncWebClient,
    next: Callable[[], Awaitable[None]],
    ack: Ack,
) -> BoltResponse | None:
    action = (body.get("actions") or [{}])[0]
    action_id = str(action.get("action_id", ""))
    user = str((body.get("user") or {}).get("id", ""))
    refuse = _refusal_sender(client, body)
    if gate.duplicate(user, action_id, str(action.get("action_ts", ""))):
        return await ack()
    if action_id == buttons.FORCE_UNDO:
        why, entry = await gate.force(user, body, str(action.get("value") or ""))
        if why:
            gate.rt.spawn(refuse(why), name="refuse")
            return await ack()
        context["entry"] = entry
        await next()
        return None
    if action_id not in (*buttons.DECISIONS, buttons.UNDO):
        await next()
        return None
    value = str(action.get("value") or (action.get("selected_option") or {}).get("value") or "")
    proposal = await gate.proposal(value.split(":", maxsplit=1)[0])
    if proposal is None:
        gate.rt.spawn(refuse(error_words.UNKNOWN_ACTION), name="refuse")
        return await ack()
    if not await gate.from_card(proposal.id, body):
        log.warning("a click on %s that does not come from its card; refused", proposal.id)
        gate.rt.spawn(refuse(error_words.NOT_ITS_CARD), name="refuse")
        return await ack()
    if action_id == buttons.UNDO:
        why = await gate.undo(user, proposal)
        groups: tuple[str, ...] = ()
    else:
        choice = "reject" if action_id == buttons.REJECT else "approve"
        why, groups = await gate.answer(user, proposal, choice)
    if why and proposal.state in (P.APPROVED, P.EXECUTING):
        gate.rt.spawn(_refuse_settled(gate, refuse, proposal.id), name="refuse")
        return await ack()
    if why:
        gate.rt.spawn(refuse(why), name="refuse")
        return await ack()
    context["proposal"], context["groups"] = proposal, groups
    await next()
    return None


def _button_values(blocks: list[Any]) -> set[str]:
    return {
        str(element.get("value", ""))
        for block in blocks
        if isinstance(block, dict)
        for element in block.get("elements") or []
        if isinstance(element, dict)
    }


async def _refuse_settled(
    gate: Gate, refuse: Callable[[str], Coroutine[Any, Any, None]], proposal_id: str
) -> None:
    """A click on a proposal already approved: say what it became once it settled."""
    settled = await gate.outcome(proposal_id)
    if settled is None:
        await refuse(error_words.UNKNOWN_ACTION)
        return
    await refuse(error_words.stale(settled.state.value, settled.reason))
