"""Fixtures for the Slack playground: a playground on a free port, and a tiny slack-bolt
AsyncApp served over HTTP (bolt's own aiohttp server) on another free port."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from lab.slack.client import AsyncPlaygroundClient, PlaygroundClient
from lab.slack.server import PlaygroundServer
from lab.slack.workspace import PlaygroundConfig


@pytest.fixture
def playground() -> Iterator[PlaygroundServer]:
    config = PlaygroundConfig(event_retry_delays=(0.0, 0.3))
    server = PlaygroundServer(config).start()
    yield server
    server.stop()


@pytest.fixture
def control(playground: PlaygroundServer) -> PlaygroundClient:
    return PlaygroundClient(playground.url)


@pytest.fixture
def acontrol(playground: PlaygroundServer) -> AsyncPlaygroundClient:
    return AsyncPlaygroundClient(playground.url)


@dataclass
class BoltApp:
    """A slack-bolt AsyncApp served on a free port, and what its handlers saw."""

    app: AsyncApp
    url: str = ""
    seen: list[dict[str, Any]] = field(default_factory=list)


def make_app(playground: PlaygroundServer, **kwargs: Any) -> AsyncApp:
    """An AsyncApp pointed at the playground, as the bot points at it with
    STRATUS_SLACK_API_URL."""
    client = AsyncWebClient(token=playground.bot_token, base_url=playground.api_url)
    return AsyncApp(
        client=client,
        signing_secret=playground.signing_secret,
        **kwargs,
    )


async def serve(app: AsyncApp) -> tuple[str, web.AppRunner]:
    runner = web.AppRunner(app.web_app(path="/slack/events"), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return f"http://127.0.0.1:{port}/slack/events", runner


@pytest_asyncio.fixture
async def bolt_http(
    playground: PlaygroundServer, acontrol: AsyncPlaygroundClient
) -> AsyncIterator[Callable[[AsyncApp], Any]]:
    """Serve an AsyncApp over HTTP and point the playground's request URL at it."""
    runners: list[web.AppRunner] = []

    async def start(app: AsyncApp) -> str:
        url, runner = await serve(app)
        runners.append(runner)
        await acontrol.configure(request_url=url)
        return url

    yield start
    for runner in runners:
        await runner.cleanup()
    await asyncio.sleep(0)
