"""A captured signed request sent again within Slack's five-minute window does nothing the
second time — even after a restart (the bot keeps what it handled in the store). The example
from the field: a ``/stratus resume`` captured earlier, replayed after an emergency pause."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from urllib.parse import urlencode

import aiohttp
import pytest

from lab.slack.client import AsyncPlaygroundClient
from tests.bot.conftest import SRE, BotHandle, wait_for
from tests.proposals.conftest import PolicyBox

pytestmark = pytest.mark.asyncio
FORM = "application/x-www-form-urlencoded"


def command(words: str, user: str, trigger: str) -> bytes:
    return urlencode(
        {
            "command": "/stratus",
            "text": words,
            "user_id": user,
            "channel_id": "C0INCIDENT",
            "team_id": "T0PLAYGRND",
            "trigger_id": trigger,
        }
    ).encode()


def signed_headers(secret: str, body: bytes, stamp: int) -> dict[str, str]:
    base = f"v0:{stamp}:".encode() + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {
        "Content-Type": FORM,
        "X-Slack-Request-Timestamp": str(stamp),
        "X-Slack-Signature": f"v0={digest}",
    }


async def deliver(handle: BotHandle, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    assert handle.bot is not None
    async with (
        aiohttp.ClientSession() as session,
        session.post(handle.bot.url, data=body, headers=headers) as response,
    ):
        return response.status, await response.text()


async def paused(handle: BotHandle) -> bool:
    return bool((await handle.runtime.call(handle.runtime.switch.state)).paused)


async def test_a_replayed_resume_does_not_undo_an_emergency_pause(
    slack: AsyncPlaygroundClient, stratus_bot: BotHandle, policy: PolicyBox
) -> None:
    policy.set(defaults=SRE)
    await slack.command("U0CAROL", "/stratus", "pause first")
    assert await paused(stratus_bot)
    # Carol resumes; an attacker captures the signed request on its way.
    resume = command("resume", "U0CAROL", "1.1.captured")
    captured = signed_headers(stratus_bot.playground.signing_secret, resume, int(time.time()))
    assert (await deliver(stratus_bot, resume, captured))[0] == 200
    await stratus_bot.settle()
    assert not await paused(stratus_bot)
    # An emergency pause; the capture is replayed a minute later, and again after a restart.
    await slack.command("U0ALICE", "/stratus", "pause emergency")
    assert await paused(stratus_bot)
    for restart in (False, True):
        if restart:
            await stratus_bot.stop()
            await stratus_bot.start()
        status, said = await deliver(stratus_bot, resume, captured)
        assert status == 200 and "resumed" not in said.lower()
        await stratus_bot.settle()
        assert await paused(stratus_bot), f"replayed (restart={restart})"
    # A new request (a new signature) from Carol still works.
    fresh = command("resume", "U0CAROL", "1.2.fresh")
    headers = signed_headers(stratus_bot.playground.signing_secret, fresh, int(time.time()))
    assert (await deliver(stratus_bot, fresh, headers))[0] == 200
    await stratus_bot.settle()
    assert not await paused(stratus_bot)


async def test_a_replayed_event_is_acknowledged_and_does_nothing(
    slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    secret = stratus_bot.playground.signing_secret
    event = json.dumps(
        {
            "type": "event_callback",
            "event_id": "Ev1",
            "event": {"type": "app_home_opened", "user": "U0ALICE", "tab": "home"},
        }
    ).encode()
    headers = {
        **signed_headers(secret, event, int(time.time())),
        "Content-Type": "application/json",
    }

    async def published() -> int:
        return len((await slack.calls("views.publish"))["calls"])

    assert (await deliver(stratus_bot, event, headers))[0] == 200
    await wait_for(published)  # the listener runs after the acknowledgement
    assert await published() == 1
    assert (await deliver(stratus_bot, event, headers))[0] == 200
    await asyncio.sleep(1.0)  # as long as the first one could take, and more
    await stratus_bot.settle()
    assert await published() == 1
