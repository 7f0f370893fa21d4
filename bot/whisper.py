"""A word to whoever clicked or typed, beside what they did: an ephemeral message in the
channel (in the thread when there is one), and where the bot may not whisper (a click in the
App Home, a channel the bot is not in) a direct message instead, so that a refusal or a revoke
is never done in silence. The middleware's refusals and the handlers' answers both use it."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("stratus.bot")


async def whisper(
    client: AsyncWebClient,
    body: dict[str, Any],
    message: str,
    *,
    blocks: list[dict[str, Any]] | None = None,
) -> None:
    """``blocks``: buttons that only this person is offered (Force undo); ``message`` is their
    fallback text, and what a direct message says when no ephemeral can be posted."""
    user = str((body.get("user") or {}).get("id", ""))
    channel = str((body.get("channel") or {}).get("id", ""))
    thread = (body.get("message") or {}).get("thread_ts")
    if channel:
        try:
            await client.chat_postEphemeral(
                channel=channel,
                user=user,
                text=message,
                blocks=blocks,
                **({"thread_ts": thread} if thread else {}),
            )
            return
        except SlackApiError as error:
            log.warning("chat.postEphemeral failed: %s", error.response.get("error"))
    try:
        await client.chat_postMessage(channel=user, text=message)
    except SlackApiError as error:
        log.warning("telling %s failed: %s", user, error.response.get("error"))
