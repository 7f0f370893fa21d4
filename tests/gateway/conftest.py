"""Fixtures for the MCP gateway: a clients file with hashed tokens, the gateway's streamable
HTTP listener served on the bot's own proposal service (as ``stratus serve`` serves it), and
the SDK's own client connected over real HTTP."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio
import yaml
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from gateway.http import HttpGateway
from gateway.server import Gateway
from lab.slack.client import AsyncPlaygroundClient
from policies.clients import Registry, hash_token
from proposals.intake import TURNS, TurnConfig
from tests.bot.conftest import (  # noqa: F401 - the bot's fixtures, shared
    BotHandle,
    db_path,
    playground,
    policy,
    slack,
    stratus_bot,
    wait_for,
)

TOKENS = {"claude": "tok-claude-0123456789", "other": "tok-other-0123456789"}
READER_TOKEN = "tok-reader-0123456789"


@dataclass
class Clients:
    path: Path
    tokens: dict[str, str]

    def write(self, entries: list[dict[str, Any]]) -> None:
        self.path.write_text(yaml.safe_dump({"clients": entries}))

    def default(self, **limits: int) -> None:
        entries: list[dict[str, Any]] = [
            {"name": name, "token_sha256": hash_token(token), "limits": dict(limits)}
            for name, token in TOKENS.items()
        ]
        entries.append(
            {"name": "reader", "token_sha256": hash_token(READER_TOKEN), "tools": "read"}
        )
        self.write(entries)

    def revoke(self, name: str) -> None:
        loaded = yaml.safe_load(self.path.read_text())
        self.write([c for c in loaded["clients"] if c["name"] != name])


@pytest.fixture
def clients(tmp_path: Path) -> Clients:
    found = Clients(tmp_path / "mcp-clients.yaml", dict(TOKENS))
    found.default()
    return found


@contextlib.asynccontextmanager
async def gateway_on(
    bot: BotHandle, clients: Clients, turns: TurnConfig = TURNS
) -> AsyncIterator[str]:
    """The gateway's HTTP listener on the running bot's own service and workflow (``turns``:
    how a client's turn is held, e.g. a short lease)."""
    rt = bot.runtime
    gateway = Gateway(
        service=rt.service,
        kube=bot.kube,
        registry=Registry(clients.path),
        workflow=rt.workflow,
        turns=turns,
    )
    listener = HttpGateway(gateway)
    url = await listener.start()
    try:
        yield url
    finally:
        await listener.stop()


@pytest_asyncio.fixture
async def mcp_url(stratus_bot: BotHandle, clients: Clients) -> AsyncIterator[str]:  # noqa: F811
    async with gateway_on(stratus_bot, clients) as url:
        yield url


AGENT_CHANNEL = "C0INCIDENT"


@pytest_asyncio.fixture
async def agent_thread_url(
    stratus_bot: BotHandle,  # noqa: F811
    clients: Clients,
) -> AsyncIterator[str]:
    """The gateway on a bot that posts the thread of an incident an MCP client's proposal
    opened in ``AGENT_CHANNEL`` (``STRATUS_MCP_CHANNEL``)."""
    await stratus_bot.stop()
    stratus_bot.settings["mcp_channel"] = AGENT_CHANNEL
    await stratus_bot.start()
    async with gateway_on(stratus_bot, clients) as url:
        yield url


@contextlib.asynccontextmanager
async def connect(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def body(result: Any) -> Any:
    """A tool result's JSON (structured when the tool returns data, else its text)."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        found = result.structured_content
        return found["result"] if set(found) == {"result"} else found
    return result.content[0].text


def error(result: Any) -> str:
    assert result.is_error, result
    return str(result.content[0].text)


async def approve_in_slack(chat: AsyncPlaygroundClient, user: str, proposal_id: str) -> None:
    """A person answers a card-less proposal where the bot lists it: ``/stratus status``."""

    async def listed() -> bool:
        said = json.dumps(await chat.command(user, "/stratus", "status"))
        return proposal_id in said

    await wait_for(listed, timeout=30)
    await chat.click(user, "stratus.approve", value=proposal_id, ephemeral=True)


Progress = list[tuple[float, float | None, str | None]]


def progress_log() -> tuple[Progress, Callable[[float, float | None, str | None], Awaitable[None]]]:
    seen: Progress = []

    async def record(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    return seen, record
