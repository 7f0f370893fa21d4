"""A client's turn over real HTTP, with the API server's answer to its ask held by a fault
proxy (a real stalled dependency): an outside tester saw one client's stalled ask delay another
client's read by 57 s — every ask waiting for the turn held a worker thread, and the pool ran
out. Waits now hold no thread and at most one ask per client waits; the turn's lease is
renewed while the ask runs and checked in the transaction that stores the proposal."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from lab.slack.server import PlaygroundServer
from proposals.intake import TurnConfig
from tests.bot.conftest import BotHandle, wait_for
from tests.conftest import Lab
from tests.faultproxy import FaultProxy, Rule, fault_proxy
from tests.gateway.conftest import TOKENS, Clients, body, connect, error, gateway_on
from tests.gateway.test_http_refusals import propose, scale
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
GEO = r"/deployments/geo"


@pytest_asyncio.fixture
async def proxied(
    lab: Lab, playground: PlaygroundServer, db_path: Path, policy: PolicyBox, tmp_path: Path
) -> AsyncIterator[tuple[FaultProxy, BotHandle]]:
    """The bot (and the gateway on it) talking to the lab through a fault proxy."""
    with fault_proxy(lab.url, tmp_path / "proxied-kubeconfig") as proxy:
        kube = KubeClient(kubeconfig=str(proxy.kubeconfig))
        handle = BotHandle(playground, kube, db_path, policy)
        await handle.start()
        try:
            yield proxy, handle
        finally:
            proxy.release()
            await handle.stop()
            kube.close()


async def _stalled(proxy: FaultProxy, rule: Rule, call: Any) -> asyncio.Task[Any]:
    task: asyncio.Task[Any] = asyncio.create_task(call)

    async def held() -> bool:
        return rule.hits >= 1  # its dry-run is held now

    await wait_for(held, timeout=30)
    return task


async def test_a_stalled_ask_delays_no_other_clients_read_and_extra_asks_are_refused(
    proxied: tuple[FaultProxy, BotHandle], clients: Clients
) -> None:
    proxy, bot = proxied
    clients.default(proposals_per_minute=100, open_proposals=3)
    held = proxy.delay("*", GEO, 120.0, dry_run=True, times=1)
    async with (
        gateway_on(bot, clients) as url,
        connect(url, TOKENS["claude"]) as claude,
        connect(url, TOKENS["other"]) as other,
    ):
        first = await _stalled(proxy, held, propose(claude, scale(4)))
        # More asks of the same client than the gateway has worker threads (40).
        extra = [asyncio.create_task(propose(claude, scale(n))) for n in range(5, 50)]
        await asyncio.sleep(0.5)
        started = time.monotonic()
        read = await asyncio.wait_for(other.call_tool("list_namespaces", {}), timeout=10)
        assert "hotel" in body(read) and time.monotonic() - started < 5
        done, waiting = await asyncio.wait(extra, timeout=5)
        assert len(waiting) == 1, "one ask waits for the turn, without a thread"
        refusals = [error(t.result()) for t in done]
        assert len(refusals) == 44
        assert all("[limit_reached]" in r and "try again" in r for r in refusals), refusals[:3]
        assert not first.done()
        proxy.open(held)
        made = body(await first)
        assert made["state"] == "awaiting_approval"
        later = body(await asyncio.wait_for(waiting.pop(), timeout=30))
        assert later["id"] != made["id"]  # the waiting ask had its turn after the first


async def test_an_ask_that_outlived_its_turn_stores_no_copy(
    proxied: tuple[FaultProxy, BotHandle], clients: Clients
) -> None:
    """A lease of 1 s whose heartbeat comes too late (every 30 s): the stalled ask's lease
    runs out, the same client's next ask takes the turn and proposes the same change; the
    stalled one, when its answer comes, is refused instead of storing a second card."""
    proxy, bot = proxied
    held = proxy.delay("*", GEO, 4.0, dry_run=True, times=1)
    late_heartbeat = TurnConfig(ttl=1.0, heartbeat=30.0)
    async with (
        gateway_on(bot, clients, late_heartbeat) as url,
        connect(url, TOKENS["claude"]) as one,
        connect(url, TOKENS["claude"]) as two,
    ):
        first = await _stalled(proxy, held, propose(one, scale(4)))
        await asyncio.sleep(1.5)  # the first ask's lease ran out
        second = body(await propose(two, scale(4)))
        assert "repeated" not in second
        lost = error(await first)
        assert "[turn_lost]" in lost and "nothing was stored" in lost, lost
        mine = body(await two.call_tool("my_proposals", {}))
        assert [p["id"] for p in mine if not p["settled"]] == [second["id"]]


async def test_the_heartbeat_keeps_a_long_asks_turn(
    proxied: tuple[FaultProxy, BotHandle], clients: Clients
) -> None:
    """The same stall with a heartbeat every 0.2 s: the lease of 1 s never runs out, the
    second ask waits for its turn and finds the first's proposal (a repeat)."""
    proxy, bot = proxied
    held = proxy.delay("*", GEO, 3.0, dry_run=True, times=1)
    renewed = TurnConfig(ttl=1.0, heartbeat=0.2)
    async with (
        gateway_on(bot, clients, renewed) as url,
        connect(url, TOKENS["claude"]) as one,
        connect(url, TOKENS["claude"]) as two,
    ):
        first = await _stalled(proxy, held, propose(one, scale(4)))
        await asyncio.sleep(1.5)
        second = body(await propose(two, scale(4)))
        made = body(await first)
        assert second["id"] == made["id"] and "repeated" in second
        mine = body(await two.call_tool("my_proposals", {}))
        assert [p["id"] for p in mine if not p["settled"]] == [made["id"]]
