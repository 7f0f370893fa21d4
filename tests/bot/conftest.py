"""Fixtures for the bot: the Slack playground on a free port, the lab cluster, the real
proposal service and incident workflow (offline planner), and the bot itself served over HTTP
on another free port — the playground delivers signed requests to it exactly as Slack does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agents.llm.questions import QuestionAnswerer
from agents.planner.offline import OfflinePlanner
from bot.app import StratusBot
from bot.config import BotConfig
from bot.runtime import Runtime
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from lab.slack.workspace import PlaygroundConfig
from policies.clients import Registry
from policies.model import Defaults, Rule
from proposals.service import ProposalService
from store.db import Store
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient

ASK = Rule(name="ask-everything", decision="ask")
ALLOW = Rule(name="allow-everything", decision="allow", allow_irreversible=True)
SRE = Defaults(approvers=["S0SRE"])


@pytest.fixture
def playground() -> Iterator[PlaygroundServer]:
    server = PlaygroundServer(
        PlaygroundConfig(
            event_retry_delays=(0.0,),
            rate_limits={"chat.postMessage": 10_000, "chat.update": 10_000},
        )
    ).start()
    yield server
    server.stop()


@pytest.fixture
def slack(playground: PlaygroundServer) -> AsyncPlaygroundClient:
    return AsyncPlaygroundClient(playground.url)


@pytest.fixture
def policy() -> PolicyBox:
    box = PolicyBox()
    box.set(ASK, defaults=SRE)
    return box


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "bot.db"


def make_runtime(
    kube: KubeClient,
    path: Path,
    policy: PolicyBox,
    answerer: QuestionAnswerer | None = None,
    prometheus: PrometheusClient | None = None,
    clients: Registry | None = None,
) -> Runtime:
    store = Store(path)
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=policy, clients=clients
    )
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=OfflinePlanner(),
        config=WorkflowConfig(settle_timeout=8, poll_interval=0.1),
        prometheus=prometheus,
    )
    return Runtime(service=service, workflow=flow, policy=policy, answerer=answerer)


class BotHandle:
    """A running bot and a way to restart it on the same store."""

    def __init__(
        self, playground: PlaygroundServer, kube: KubeClient, path: Path, policy: PolicyBox
    ) -> None:
        self.playground = playground
        self.kube = kube
        self.path = path
        self.policy = policy
        self.bot: StratusBot | None = None
        self.answerer: QuestionAnswerer | None = None  # a model for thread questions
        self.prometheus: PrometheusClient | None = None  # the metrics source (none by default)
        self.settings: dict[str, Any] = {}  # more BotConfig fields (set before a restart)
        self.reconcile_interval = 10.0  # how often the bot's recovery looks (``bot.recovery``)
        self.clients: Registry | None = None  # its MCP clients file (``STRATUS_MCP_CLIENTS``)

    @property
    def runtime(self) -> Runtime:
        assert self.bot is not None
        return self.bot.rt

    async def start(self) -> StratusBot:
        config = BotConfig(
            mode="http",
            bot_token=self.playground.bot_token,
            signing_secret=self.playground.signing_secret,
            api_url=self.playground.api_url,
            port=0,
            follow_interval=0.1,
            **self.settings,
            reconcile_interval=self.reconcile_interval,
        )
        self.bot = StratusBot(
            make_runtime(
                self.kube, self.path, self.policy, self.answerer, self.prometheus, self.clients
            ),
            config,
        )
        await self.bot.start()
        await AsyncPlaygroundClient(self.playground.url).configure(request_url=self.bot.url)
        return self.bot

    async def stop(self) -> None:
        if self.bot is not None:
            await self.bot.stop()
            self.bot.rt.store.close()
            self.bot = None

    async def settle(self) -> None:
        """Let background work and the follower finish."""
        assert self.bot is not None
        await self.bot.rt.drain()
        await self.bot.follower.poll()


@pytest_asyncio.fixture
async def stratus_bot(
    playground: PlaygroundServer, lab: Lab, kube: KubeClient, db_path: Path, policy: PolicyBox
) -> AsyncIterator[BotHandle]:
    handle = BotHandle(playground, kube, db_path, policy)
    await handle.start()
    yield handle
    await handle.stop()


def inject(lab: Lab, scenario: str) -> None:
    lab.control.post(f"/lab/v1/scenarios/{scenario}/inject")
    lab.settle()


async def wait_for(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError("never happened")
        await asyncio.sleep(0.1)


def blocks_text(message: dict[str, Any]) -> str:
    """Everything a person reads in a message (its text and its blocks)."""
    import json

    return str(message.get("text", "")) + json.dumps(message.get("blocks", []))


async def send_signed(
    handle: BotHandle, body: str, *, content_type: str, headers: dict[str, str] | None = None
) -> int:
    """Post a body to the running bot signed with the playground's secret, as Slack would —
    for what the playground does not do by itself (a resent click, a retried event)."""
    import hashlib
    import hmac
    import time

    import aiohttp

    assert handle.bot is not None
    timestamp = str(int(time.time()))
    digest = hmac.new(
        handle.playground.signing_secret.encode(),
        f"v0:{timestamp}:{body}".encode(),
        hashlib.sha256,
    ).hexdigest()
    sent = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": f"v0={digest}",
        **(headers or {}),
    }
    async with (
        aiohttp.ClientSession() as session,
        session.post(handle.bot.url, data=body.encode(), headers=sent) as response,
    ):
        await response.read()
        return response.status


async def resend_click(handle: BotHandle, payload: dict[str, Any], **headers: str) -> int:
    import json
    from urllib.parse import urlencode

    body = urlencode({"payload": json.dumps(payload)})
    return await send_signed(
        handle, body, content_type="application/x-www-form-urlencoded", headers=headers
    )
