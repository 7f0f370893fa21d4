"""The two Web API calls the follower makes to draw a thread, ``chat.postMessage`` and
``chat.update``: the message posted or edited, or Slack's reason it was not.

A failure is returned, never raised: the follower decides what a reason means (``GONE``: the
message or thread is no longer there, so it is posted again rather than edited into nothing),
and one card that cannot be drawn must not stop the stream.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import Block
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks as b
from bot.links import MessageRef

log = logging.getLogger("stratus.bot")
# What Slack answers for a message or thread that is no longer there (its parent deleted, a
# playground restarted empty, the channel deleted): the link is forgotten and the thing posted
# again, never edited into nothing.
GONE = frozenset({"thread_not_found", "message_not_found", "channel_not_found"})


async def post(
    client: AsyncWebClient, where: MessageRef, body: list[Block], fallback: str
) -> tuple[MessageRef | None, str]:
    """Post in ``where``'s thread (in the channel when ``where.ts`` is empty): the message, or
    None and Slack's error (or the network's)."""
    kwargs: dict[str, Any] = {"thread_ts": where.ts} if where.ts else {}
    try:
        response = await client.chat_postMessage(
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


async def update(
    client: AsyncWebClient, where: MessageRef, body: list[Block], fallback: str
) -> str:
    """Edit a message in place; Slack's error when it failed ("" when it did not)."""
    try:
        await client.chat_update(
            channel=where.channel, ts=where.ts, text=b.fallback(fallback), blocks=b.render(body)
        )
    except SlackApiError as error:
        why = str(error.response.get("error") or "error")
        log.error("chat.update failed: %s", why)
        return why
    return ""
