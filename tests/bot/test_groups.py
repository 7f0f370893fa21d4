"""User-group memberships behind the click authorization, over the playground's Web API:
looked up once when the bot starts, refreshed behind the clicks, and never trusted when old."""

from __future__ import annotations

import asyncio

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.authz import Groups
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer

pytestmark = pytest.mark.asyncio
TTL = 0.3


async def lookups(slack: AsyncPlaygroundClient) -> int:
    return len((await slack.calls("usergroups.users.list"))["calls"])


def groups_for(playground: PlaygroundServer) -> Groups:
    client = AsyncWebClient(token=playground.bot_token, base_url=playground.api_url)
    return Groups(client, ttl=TTL)


async def test_warm_looks_up_each_named_group_once_and_clicks_then_ask_nobody(
    playground: PlaygroundServer, slack: AsyncPlaygroundClient
) -> None:
    groups = groups_for(playground)
    await groups.warm(["S0SRE", "U0ALICE", "*", "S0SRE"])
    assert await lookups(slack) == 1
    answers = await asyncio.gather(*(groups.of("U0BOB", ["S0SRE"]) for _ in range(50)))
    assert answers == [("S0SRE",)] * 50
    assert await lookups(slack) == 1


async def test_an_expired_entry_answers_at_once_and_refreshes_behind(
    playground: PlaygroundServer, slack: AsyncPlaygroundClient
) -> None:
    groups = groups_for(playground)
    await groups.warm(["S0SRE"])
    await slack.set_group_members("S0SRE", ["U0ALICE"])  # Bob leaves the team
    await asyncio.sleep(TTL * 1.2)
    # Past the TTL but not twice it: answered from the cache, one refresh starts.
    assert await groups.of("U0BOB", ["S0SRE"]) == ("S0SRE",)
    for _ in range(50):
        if await lookups(slack) == 2 and await groups.of("U0BOB", ["S0SRE"]) == ():
            break
        await asyncio.sleep(0.02)
    assert await lookups(slack) == 2
    assert await groups.of("U0BOB", ["S0SRE"]) == ()


async def test_an_entry_older_than_twice_the_ttl_is_not_trusted(
    playground: PlaygroundServer, slack: AsyncPlaygroundClient
) -> None:
    groups = groups_for(playground)
    await groups.warm(["S0SRE"])
    await slack.set_group_members("S0SRE", ["U0ALICE"])
    await asyncio.sleep(TTL * 2.2)
    # The removed member is refused on this very click: it waited for the fresh answer.
    assert await groups.of("U0BOB", ["S0SRE"]) == ()
    assert await groups.allowed("U0ALICE", ["S0SRE"])


async def test_an_unknown_group_is_nobody(playground: PlaygroundServer) -> None:
    groups = groups_for(playground)
    assert await groups.members("S0NOPE") == frozenset()
    assert not await groups.allowed("U0ALICE", ["S0NOPE"])
