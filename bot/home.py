"""The App Home: the incidents this user asked for whose thread could not be posted (with
Retry), the proposals waiting for their approval (with a link to each card) and the active
grants they created, with Revoke."""

from __future__ import annotations

from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks as b
from bot import buttons, cards, parking
from bot.authz import Gate
from bot.policy_view import grant_blocks, listed_grants
from bot.runtime import Runtime
from bot.text import card_words, command_words, thread_words


async def publish(runtime: Runtime, gate: Gate, client: AsyncWebClient, user: str) -> None:
    pending = await runtime.call(runtime.service.pending)
    mine = []
    for proposal in pending:
        why, _ = await gate.answer(user, proposal)
        if why is None:
            mine.append(proposal)
    lines = []
    answerable: list[Block] = []  # proposals with no card (made at a terminal): buttons here
    for proposal in mine[:30]:
        card = await runtime.call(runtime.links.card, proposal.id)
        link = None
        if card is not None:
            try:
                found = await client.chat_getPermalink(channel=card.channel, message_ts=card.ts)
                link = str(found.get("permalink") or "") or None
            except SlackApiError:
                link = None
        if proposal.tampered:
            lines.append(card_words.tampered_line(proposal.id))
        elif card is None:
            answerable += [
                b.section(
                    command_words.home_terminal_pending(
                        proposal.id, cards.title(proposal), proposal.requester
                    )
                ),
                *buttons.answer_row(proposal),
            ]
        else:
            lines.append(command_words.home_pending(proposal.id, cards.title(proposal), link))
    now = runtime.store.clock.now()
    grants = [
        g for g in await runtime.call(listed_grants, runtime, now) if g.grant.created_by == user
    ]
    body: list[Block] = [
        b.header(command_words.HOME_TITLE),
        *await _parked(runtime, gate, user),
        b.section(command_words.HOME_PENDING),
        *(b.sections("\n".join(lines)) if lines else []),
        *answerable,
        *([] if lines or answerable else [b.context(command_words.HOME_NONE_PENDING)]),
        b.divider(),
        b.section(command_words.HOME_GRANTS),
        *(grant_blocks(grants[:30]) or [b.context(command_words.HOME_NO_GRANTS)]),
    ]
    await client.views_publish(
        user_id=user, view={"type": "home", "blocks": b.render(body, limit=b.VIEW_BLOCKS)}
    )


async def _parked(runtime: Runtime, gate: Gate, user: str) -> list[Block]:
    """The incidents whose thread could not be posted, for their requester (all of them for
    an admin — an alert's incident has no other), each with Retry (``bot.parking``); nothing
    when there are none."""
    everyone = await gate.admin(user)
    found = [
        i
        for i in await runtime.call(runtime.incidents.recent, limit=200, open_only=True)
        if i.parked and (everyone or i.requester == user)
    ]
    if not found:
        return []
    now = runtime.store.clock.now()
    bound = runtime.workflow.config.park_seconds
    rows: list[Block] = [b.section(thread_words.HOME_PARKED)]
    for incident in found[:10]:
        since = (now - incident.parked_at).total_seconds() if incident.parked_at else 0.0
        left = max(0, round((bound - since) / 60))
        rows.append(
            b.section(
                thread_words.home_parked(incident.id, incident.namespace, incident.parked, left),
                accessory=b.button(thread_words.RETRY, parking.RETRY, incident.id, style="primary"),
            )
        )
    return [*rows, b.divider()]
