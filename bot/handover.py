"""The door: a Stratus that no longer leads takes no request from Slack.

With leader election (docs/operations.md) a leader that lost the Lease stops its listener —
but a request already in its socket (the process was frozen while Slack delivered a click) is
read when it thaws, before the renewal that would tell it another leads has even been sent.
Acting on it would store an answer that only the new leader may carry out, and strand it.
So every request is checked here first, against ``Runtime.acting`` (the Lease held and renewed
within the renew deadline, measured now), and a request that fails it changes nothing:

- a click or a slash command, which a person is looking at and which Slack never delivers
  twice, is acknowledged with "Stratus is handing over …; try again in a few seconds": the
  person knows what happened and what to do, where an unacknowledged one would show only
  Slack's "didn't respond" warning, with nothing for the next instance to pick up anyway;
- the reject modal's submission keeps the modal open with that sentence as its error;
- anything else (an Events API event) is left unacknowledged (503): Slack delivers it again,
  to whoever answers then.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.runtime import Runtime
from bot.text import command_words
from bot.whisper import whisper

log = logging.getLogger("stratus.bot")
Ack = Callable[..., Awaitable[BoltResponse]]


def middleware(rt: Runtime) -> Callable[..., Awaitable[BoltResponse | None]]:
    """The bolt middleware that runs before every other one."""

    async def door(
        body: dict[str, Any],
        client: AsyncWebClient,
        next: Callable[[], Awaitable[None]],
        ack: Ack,
    ) -> BoltResponse | None:
        if rt.acting():
            await next()
            return None
        kind = str(body.get("type") or ("slash_command" if body.get("command") else ""))
        log.warning("a Slack request (%s) reached a Stratus that does not lead; refused", kind)
        if kind == "slash_command":
            return await ack(text=command_words.HANDING_OVER)
        if kind == "block_actions":
            rt.spawn(whisper(client, body, command_words.HANDING_OVER), name="handing over")
            return await ack()
        if kind == "view_submission":
            return await ack(
                response_action="errors", errors={"reason": command_words.HANDING_OVER}
            )
        return BoltResponse(status=503, body="this Stratus is handing over to another instance")

    return door
