"""Asks sent at once, as an outside tester sent them: ten parallel sessions got ten proposals
past a limit of three, and eight identical calls at once made eight proposals. A client's
asks are now decided one after another (``proposals.intake``), over every session it opens;
while one is decided at most one more waits, and the others are refused at once, retryable
(``one_at_a_time``): asked again, they are decided like the first."""

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


ONE_AT_A_TIME = "other proposals are still being planned"


async def _until_decided(url: str, asks: list[dict[str, Any]]) -> list[Any]:
    """Send the asks at once, then again at once those refused as one at a time (retryable),
    until each was decided: made, a repeat, or refused for good."""
    results: list[Any] = [None] * len(asks)
    todo = list(range(len(asks)))
    for _ in range(len(asks) + 1):
        answers = await _at_once(url, [asks[i] for i in todo])
        for i, answer in zip(todo, answers, strict=True):
            results[i] = answer
        todo = [i for i in todo if results[i].is_error and ONE_AT_A_TIME in error(results[i])]
        if not todo:
            return results
    raise AssertionError(f"never decided: {todo}")


async def test_parallel_asks_never_pass_the_open_limit(
    lab: Lab, kube: KubeClient, mcp_url: str, clients: Clients
) -> None:
    clients.default(proposals_per_minute=100, open_proposals=3)
    at_once = await _at_once(mcp_url, [scale(n) for n in range(2, 10)])
    assert sum(not r.is_error for r in at_once) <= 3
    assert all("[limit_reached]" in error(r) for r in at_once if r.is_error)
    results = await _until_decided(mcp_url, [scale(n) for n in range(10, 18)])
    made = {body(r)["id"] for r in [*at_once, *results] if not r.is_error}
    refused = [error(r) for r in results if r.is_error]
    assert len(made) == 3, results
    assert refused and all("still open" in said for said in refused), refused
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        assert len(body(await mcp.call_tool("my_proposals", {}))) == 3
    assert replicas(kube, "geo") == 1  # nothing was written


async def test_the_same_change_asked_at_once_is_one_proposal(
    lab: Lab, kube: KubeClient, mcp_url: str, clients: Clients
) -> None:
    clients.default(proposals_per_minute=100, open_proposals=10)
    results = await _until_decided(mcp_url, [scale(4) for _ in range(6)])
    answers = [body(r) for r in results]
    assert len({a["id"] for a in answers}) == 1, answers
    assert sum("repeated" not in a for a in answers) == 1  # one made it, five were told so
    assert replicas(kube, "geo") == 1
