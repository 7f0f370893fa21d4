"""Three labs at once, one per cluster of a fleet (``a``, ``b``, ``c``), each its own API
server over real HTTP, reached through one kubeconfig with a context per cluster — as an SRE
team's kubeconfig names its clusters (docs/fleet.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from agents.planner.offline import OfflinePlanner
from bot.app import StratusBot
from bot.config import AlertsConfig, BotConfig
from bot.runtime import Runtime
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.client import LabClient
from lab.runner import LabServer, kubeconfig
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from lab.slack.workspace import PlaygroundConfig
from proposals.service import ProposalService
from store.db import Store
from tests.proposals.conftest import PolicyBox
from tools import fleet
from tools.objects import ObjectRef

RECOMMENDATION = ObjectRef("Deployment", "recommendation", "hotel")

CLUSTERS = ("a", "b", "c")


@dataclass
class FleetLabs:
    urls: dict[str, str]  # each cluster's API server
    kubeconfig: Path

    def control(self, cluster: str) -> LabClient:
        return LabClient(self.urls[cluster])

    def reset(self) -> None:
        for cluster in self.urls:
            self.control(cluster).post("/lab/v1/reset")

    def inject(self, cluster: str, scenario: str) -> None:
        self.control(cluster).post(f"/lab/v1/scenarios/{scenario}/inject")
        self.control(cluster).post("/lab/v1/settle")


def fleet_kubeconfig(path: Path, urls: dict[str, str]) -> Path:
    """One kubeconfig naming each lab as a context (and cluster) of its own name."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "preferences": {}}
    merged["clusters"], merged["users"], merged["contexts"] = [], [], []
    for name, url in urls.items():
        one = kubeconfig(url, "hotel")
        merged["clusters"].append({"name": name, "cluster": one["clusters"][0]["cluster"]})
        merged["users"] = one["users"]
        context = dict(one["contexts"][0]["context"], cluster=name)
        merged["contexts"].append({"name": name, "context": context})
    merged["current-context"] = next(iter(urls))
    path.write_text(yaml.safe_dump(merged, sort_keys=False))
    path.chmod(0o600)
    return path


@dataclass
class Stack:
    clusters: fleet.Fleet
    service: ProposalService
    flow: IncidentWorkflow
    policy: PolicyBox

    def replicas(self, cluster: str, ref: ObjectRef = RECOMMENDATION) -> int:
        return int(self.clusters.client(cluster).get(ref)["spec"]["replicas"])


@contextmanager
def wired(
    labs: FleetLabs, store: Store, policy: PolicyBox, order: tuple[str, ...] = CLUSTERS
) -> Iterator[Stack]:
    """Stratus serving the three labs as ``stratus serve --context …`` wires it: the first
    context named is the default cluster."""
    chosen = fleet.configured(list(order), {})
    with fleet.Fleet.open(chosen, kubeconfig=str(labs.kubeconfig)) as clusters:
        executors = fleet.executors(clusters, store, lock_wait=0.5)
        service = ProposalService(
            store=store,
            executor=executors[clusters.default],
            policy=policy,
            executors=executors,
        )
        flow = IncidentWorkflow(
            service=service,
            kube=clusters.client(),
            offline=OfflinePlanner(),
            config=WorkflowConfig(settle_timeout=5, poll_interval=0.05),
            kubes=clusters.clients,
        )
        yield Stack(clusters, service, flow, policy)


@contextmanager
def started(folder: Path) -> Iterator[FleetLabs]:
    """Three labs (the hotel app each) and the fleet's kubeconfig in ``folder``."""
    servers = {name: LabServer(apps=["hotel"]).start() for name in CLUSTERS}
    try:
        urls = {name: server.url for name, server in servers.items()}
        yield FleetLabs(urls, fleet_kubeconfig(folder / "config", urls))
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(scope="module")
def labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetLabs]:
    with started(tmp_path_factory.mktemp("fleet")) as running:
        yield running


@dataclass
class FleetBot:
    """The bot serving the three labs, answering the Slack playground over HTTP."""

    playground: PlaygroundServer
    bot: StratusBot
    stack: Stack

    @property
    def slack(self) -> AsyncPlaygroundClient:
        return AsyncPlaygroundClient(self.playground.url)

    async def settle(self) -> None:
        await self.bot.rt.drain()
        await self.bot.follower.poll()


@asynccontextmanager
async def fleet_bot(
    labs: FleetLabs,
    path: Path,
    policy: PolicyBox,
    *,
    settle_timeout: float = 5,
    alerts: AlertsConfig | None = None,
) -> AsyncIterator[FleetBot]:
    """A playground and the bot on a fleet of the three labs, as ``stratus serve --context a
    --context b --context c`` runs it (HTTP mode)."""
    playground = PlaygroundServer(
        PlaygroundConfig(
            event_retry_delays=(0.0,),
            rate_limits={"chat.postMessage": 100_000, "chat.update": 100_000},
        )
    ).start()
    store = Store(path)
    try:
        with wired(labs, store, policy) as stack:
            stack.flow.config.settle_timeout = settle_timeout
            runtime = Runtime(service=stack.service, workflow=stack.flow, policy=policy)
            config = BotConfig(
                mode="http",
                bot_token=playground.bot_token,
                signing_secret=playground.signing_secret,
                api_url=playground.api_url,
                port=0,
                follow_interval=0.1,
                **({"alerts": alerts} if alerts is not None else {}),
            )
            bot = StratusBot(runtime, config)
            await bot.start()
            try:
                await AsyncPlaygroundClient(playground.url).configure(request_url=bot.url)
                yield FleetBot(playground, bot, stack)
            finally:
                await bot.stop()
    finally:
        store.close()
        playground.stop()
