"""Asks sent at once, as an outside tester sent them: ten parallel sessions got ten proposals
past a limit of three, and eight identical calls at once made eight proposals. A client's
asks are now decided one after another (``proposals.intake``), over every session it opens."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.bot.test_e2e import replicas
from tests.conftest import Lab
from tests.gateway.conftest import TOKENS, Clients, body, connect, error
from tests.gateway.test_http_refusals import propose, scale
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio


async def _at_once(url: str, asks: list[dict[str, Any]]) -> list[Any]:
    """Each ask on a session of its own, all sessions open before any ask is sent."""
    ready = asyncio.Barrier(len(asks))

    async def one(arguments: dict[str, Any]) -> Any:
        async with connect(url, TOKENS["claude"]) as mcp:
            await ready.wait()
            return await propose(mcp, arguments)

    return list(await asyncio.gather(*(one(a) for a in asks)))


async def test_parallel_asks_never_pass_the_open_limit(
    lab: Lab, kube: KubeClient, mcp_url: str, clients: Clients
) -> None:
    clients.default(proposals_per_minute=100, open_proposals=3)
    results = await _at_once(mcp_url, [scale(n) for n in range(2, 10)])
    made = {body(r)["id"] for r in results if not r.is_error}
    refused = [error(r) for r in results if r.is_error]
    assert len(made) == 3, results
    assert len(refused) == 5 and all("[limit_reached]" in said for said in refused), refused
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        assert len(body(await mcp.call_tool("my_proposals", {}))) == 3
    assert replicas(kube, "geo") == 1  # nothing was written


async def test_the_same_change_asked_at_once_is_one_proposal(
    lab: Lab, kube: KubeClient, mcp_url: str, clients: Clients
) -> None:
    clients.default(proposals_per_minute=100, open_proposals=10)
    results = await _at_once(mcp_url, [scale(4) for _ in range(6)])
    answers = [body(r) for r in results]
    assert len({a["id"] for a in answers}) == 1, answers
    assert sum("repeated" not in a for a in answers) == 1  # one made it, five were told so
    assert replicas(kube, "geo") == 1
