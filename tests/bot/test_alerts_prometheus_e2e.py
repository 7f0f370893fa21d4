"""Alerts open incidents by themselves, end to end with real processes: the lab (real time)
serving its metrics, a real Prometheus loaded with the shipped rules and a real Alertmanager
posting to the bot's webhook with the bearer token, the bot, and the Slack playground.

A fault is injected; the shipped rules fire; Alertmanager posts; an incident thread opens in
the alert channel without anyone typing; the card shows the target's metrics; an SRE approves;
the mitigation clears the alerts and the thread says so (and the re-posted summary too)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agents.planner.offline import OfflinePlanner
from bot.app import StratusBot
from bot.config import AlertsConfig, BotConfig
from bot.runtime import Runtime
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.client import LabClient
from lab.prometheus import PrometheusStack, WebhookTarget, unavailable
from lab.prometheus.stack import free_port
from lab.runner import LAB_TOKEN, LabServer, write_kubeconfig
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from proposals.service import ProposalService
from store.db import Store
from tests.bot.conftest import ASK, SRE, blocks_text, wait_for
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient, PrometheusConfig

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.skipif(unavailable() is not None, reason=str(unavailable())),
]
RULES = Path(__file__).resolve().parents[2] / "manifests" / "prometheus" / "alerts.yaml"
TOKEN = "e2e-alerts-token-0123456789abcdef"
CHANNEL = "C0INCIDENT"
SCENARIO = "hotel-geo-oom"


@pytest.fixture
def realtime_lab(tmp_path: Path) -> Iterator[tuple[LabServer, Path]]:
    server = LabServer(mode="realtime", apps=["hotel"]).start()
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url, "hotel")
    yield server, kubeconfig
    server.stop()


@pytest_asyncio.fixture
async def world(
    realtime_lab: tuple[LabServer, Path], playground: PlaygroundServer, tmp_path: Path
) -> AsyncIterator[tuple[LabServer, StratusBot, PrometheusStack]]:
    lab, kubeconfig = realtime_lab
    kube = KubeClient(kubeconfig=str(kubeconfig))
    store = Store(tmp_path / "bot.db")
    policy = PolicyBox()
    policy.set(ASK, defaults=SRE)
    port = free_port()  # the bot's, known before Alertmanager is configured to post there
    config = BotConfig(
        mode="http",
        bot_token=playground.bot_token,
        signing_secret=playground.signing_secret,
        api_url=playground.api_url,
        port=port,
        follow_interval=0.1,
        alerts=AlertsConfig(token=TOKEN, channel=CHANNEL),
    )
    stack = PrometheusStack(
        lab_url=lab.url,
        token=LAB_TOKEN,
        workdir=tmp_path / "prometheus",
        rule_files=[RULES],
        webhook=WebhookTarget(f"http://127.0.0.1:{port}/alerts/alertmanager", TOKEN),
    ).start()
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=policy
    )
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=OfflinePlanner(),
        config=WorkflowConfig(settle_timeout=30, poll_interval=0.5),
        prometheus=PrometheusClient(PrometheusConfig(url=stack.prometheus_url)),
    )
    bot = StratusBot(Runtime(service=service, workflow=flow, policy=policy), config)
    try:
        await bot.start()
        assert bot.alerts_url == f"http://127.0.0.1:{port}/alerts/alertmanager"
        await AsyncPlaygroundClient(playground.url).configure(request_url=bot.url)
        yield lab, bot, stack
    finally:
        await bot.stop()
        stack.stop()
        store.close()
        kube.close()


async def parents(slack: AsyncPlaygroundClient) -> list[dict[str, Any]]:
    found = (await slack.messages(channel=CHANNEL))["messages"]
    return [m for m in found if m.get("thread_ts", m["ts"]) == m["ts"]]


async def thread(slack: AsyncPlaygroundClient, ts: str) -> list[dict[str, Any]]:
    return list((await slack.messages(channel=CHANNEL, thread_ts=ts))["messages"])


def approve_id(message: dict[str, Any]) -> str | None:
    for block in message.get("blocks", []):
        for element in block.get("elements", []):
            if element.get("action_id") == "stratus.approve":
                return str(element["value"])
    return None


async def test_a_fault_fires_an_alert_that_opens_an_incident_and_its_fix_clears_it(
    world: tuple[LabServer, StratusBot, PrometheusStack], slack: AsyncPlaygroundClient
) -> None:
    lab, bot, _ = world
    assert await parents(slack) == []  # a healthy app: no alert, no incident
    LabClient(lab.url).post(f"/lab/v1/scenarios/{SCENARIO}/inject")

    async def opened() -> list[dict[str, Any]]:
        return await parents(slack)

    (parent,) = await wait_for(opened, timeout=90)  # nobody typed anything
    assert "Incident in hotel" in blocks_text(parent)
    assert ":rotating_light: alert" in blocks_text(parent)  # started by an alert

    async def card() -> dict[str, Any] | None:
        for message in await thread(slack, parent["ts"]):
            if approve_id(message):
                return message
        return None

    waiting = await wait_for(card, timeout=90)
    said = "\n".join(blocks_text(m) for m in await thread(slack, parent["ts"]))
    assert "alert firing" in said and "KubeContainerOOMKilled" in said + blocks_text(waiting)
    assert "geo" in blocks_text(waiting) and "memory / limit" in blocks_text(waiting)  # metrics
    # Alice (in the SRE group) approves; the workflow raises the limit and verifies.
    pid = approve_id(waiting)
    assert pid is not None
    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def all_clear() -> str | None:
        seen = "\n".join(blocks_text(m) for m in await thread(slack, parent["ts"]))
        return seen if "No alert of this incident is firing any more" in seen else None

    seen = await wait_for(all_clear, timeout=150)
    assert "Alert cleared" in seen

    async def summary() -> str | None:
        for message in await thread(slack, parent["ts"]):
            text = blocks_text(message)
            if "Incident summary" in text and "all cleared" in text:
                return text
        return None

    assert "KubeContainerOOMKilled" in await wait_for(summary, timeout=90)
    incidents = await bot.rt.call(bot.rt.incidents.recent)
    assert [i.state.value for i in incidents] == ["resolved"]
    assert len(await parents(slack)) == 1
