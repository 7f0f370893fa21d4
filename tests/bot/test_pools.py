"""A write a human approved is not queued behind investigations waiting on a slow model: the
pool that plans (and may wait a minute on the model) is not the pool that carries out what
a person asked for. End to end over HTTP: the playground, the bot, the lab, and the fake
OpenAI server answering every request late."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from collections.abc import Iterator

import pytest

from bot.runtime import WORK_THREADS
from lab.llm import FakeChatServer
from lab.slack.client import AsyncPlaygroundClient
from proposals.model import ProposalState
from tests.bot.conftest import BotHandle, inject, wait_for
from tests.bot.test_e2e import SCENARIO, first_card, proposal_id, replicas
from tests.conftest import Lab
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
MODEL_DELAY = 8.0


@pytest.fixture
def slow_model() -> Iterator[FakeChatServer]:
    server = FakeChatServer(mode="timeout", timeout_delay=MODEL_DELAY).start()
    yield server
    server.stop()


def planning_round(base_url: str) -> None:
    """What an investigation's planner does on a worker thread: ask the model, and wait."""
    request = urllib.request.Request(
        base_url + "/chat/completions",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "plan"}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


async def test_an_approved_write_runs_while_investigations_wait_on_a_slow_model(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    slow_model: FakeChatServer,
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    # More investigations than the planning pool has threads, each waiting on the model.
    waiting = [
        rt.spawn(rt.work(planning_round, slow_model.url), name=f"planning {n}")
        for n in range(WORK_THREADS + 2)
    ]

    async def model_busy() -> bool:
        return len(slow_model.requests) >= WORK_THREADS

    await wait_for(model_busy, timeout=10)
    clicked = time.monotonic()
    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def executed() -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.EXECUTED

    await wait_for(executed, timeout=3 * MODEL_DELAY)
    took = time.monotonic() - clicked
    assert took < MODEL_DELAY / 2, f"the approved write waited {took:.1f} s behind the model"
    assert replicas(kube, "recommendation") == 1
    assert not all(task.done() for task in waiting)  # the model was still busy meanwhile
    await asyncio.gather(*waiting)
