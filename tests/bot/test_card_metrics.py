"""The proposal card's telemetry section through the whole bot (playground → bot → workflow →
card), with and without a metrics source:

- with a real Prometheus scraping a realtime lab, the card shows the target's error rate, p95,
  restarts, memory against its limit and its callers' errors — the figures Prometheus gives;
- without one, the card says "no metrics source";
- with one configured but down (refusing connections) or hanging, the card still posts in
  about the usual time and says why the figures are missing (the degradation promise);
- once a proposal ran, its card's "after" figures are read again when the write can show in them
  (a rate window and a margin later) and say how long after the change they were read."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agents import snapshot_metrics
from lab.client import LabClient
from lab.runner import LabServer
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.bot.conftest import BotHandle, inject, wait_for
from tests.conftest import Lab
from tests.prometheus_lab import scraped_lab
from tests.proposals.conftest import PolicyBox
from tests.tools.promservers import BadPrometheus, free_port
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient, PrometheusConfig

pytestmark = pytest.mark.asyncio
CHANNEL = "C0INCIDENT"
SCENARIO = "hotel-reservation-env-changed"  # reservation runs and answers 500: real figures
# A card posts in a second or two. A Prometheus that hangs may add the metrics deadline (the
# client's timeout plus half a second) twice: once in the look that plans, once in the card's
# summary; one that refuses connections adds nothing to speak of.
CARD_SECONDS = 4.0
TIMEOUT = 1.0
FIGURE = re.compile(r"(error rate|p95 latency|restarts|memory / limit) \*([^*]+)\*")


def readable(message: dict[str, Any]) -> str:
    """The text a person reads in a message: its text and every text of its blocks."""
    found: list[str] = [str(message.get("text", ""))]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "text" and isinstance(value, str):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(message.get("blocks", []))
    return "\n".join(found)


async def card(slack: AsyncPlaygroundClient, timeout: float = 30.0) -> str:
    async def check() -> str | None:
        for message in (await slack.messages(channel=CHANNEL))["messages"]:
            shown = readable(message)
            if "stratus.approve" in str(message.get("blocks")) and "*Telemetry*" in shown:
                return shown
        return None

    found: str = await wait_for(check, timeout=timeout)
    return found


async def investigate(slack: AsyncPlaygroundClient) -> tuple[str, float]:
    """Ask for an investigation; the card's text and how long it took to appear."""
    started = time.monotonic()
    delivery = await slack.command("U0DAVE", "/stratus", "investigate hotel")
    assert delivery["ok"] and delivery["attempts"][0]["status"] == 200, delivery
    shown = await card(slack)
    return shown, time.monotonic() - started


# ---------------------------------------------------------------- with a real Prometheus


@pytest.fixture
def realtime(tmp_path: Path) -> Iterator[tuple[LabServer, KubeClient, PrometheusClient]]:
    with scraped_lab(tmp_path) as world:
        kube = KubeClient(kubeconfig=str(world.kubeconfig))
        try:
            yield world.lab, kube, PrometheusClient(PrometheusConfig(url=world.prometheus_url))
        finally:
            kube.close()


@pytest.fixture
def short_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATUS_TELEMETRY_RATE", "5s")
    monkeypatch.setenv("STRATUS_TELEMETRY_WINDOW", "1m")


@pytest_asyncio.fixture
async def metrics_bot(
    playground: PlaygroundServer,
    realtime: tuple[LabServer, KubeClient, PrometheusClient],
    tmp_path: Path,
    policy: PolicyBox,
    short_windows: None,
) -> AsyncIterator[tuple[BotHandle, LabServer, PrometheusClient]]:
    lab, kube, prometheus = realtime
    handle = BotHandle(playground, kube, tmp_path / "bot.db", policy)
    handle.prometheus = prometheus
    await handle.start()
    yield handle, lab, prometheus
    await handle.stop()


def reservation_failing_for_a_while(prometheus: PrometheusClient) -> None:
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        rates = snapshot_metrics.read(prometheus, "hotel").error_rates.trends
        seen = [v for t in rates if t.labels.get("service") == "reservation" for _, v in t.points]
        if sum(v >= 0.5 for v in seen) >= 5:
            return
        time.sleep(1)
    raise AssertionError("Prometheus never saw reservation failing")


async def test_the_card_shows_the_targets_figures_from_prometheus(
    metrics_bot: tuple[BotHandle, LabServer, PrometheusClient], slack: AsyncPlaygroundClient
) -> None:
    _, lab, prometheus = metrics_bot
    LabClient(lab.url).post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    reservation_failing_for_a_while(prometheus)
    shown, took = await investigate(slack)
    assert took < CARD_SECONDS, took
    assert "*Metrics* (Prometheus, last 1m" in shown and "; reservation)" in shown, shown
    lines = shown.splitlines()
    figures = next(line for line in lines if line.startswith("error rate "))
    # reservation's database rejects every query: all its answers are 500.
    assert figures.startswith("error rate *100%*"), figures
    parts = dict(FIGURE.findall(figures))  # label -> its value now
    assert set(parts) == {"error rate", "p95 latency", "restarts", "memory / limit"}, figures
    assert parts["p95 latency"].endswith(" ms"), figures
    assert 0 < float(parts["p95 latency"].removesuffix(" ms")) < 1000, figures
    assert parts["restarts"] == "0", figures
    assert parts["memory / limit"].endswith("%"), figures
    assert 10 <= float(parts["memory / limit"].removesuffix("%")) <= 60, figures
    callers = next(line for line in lines if line.startswith("Callers' errors: "))
    assert callers.startswith("Callers' errors: frontend 100% (peak 100%)"), callers
    assert "no metrics source" not in shown and "unavailable" not in shown


# ---------------------------------------------------------------- without, or with a broken one


async def test_without_prometheus_the_card_says_no_metrics_source(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    assert stratus_bot.runtime.workflow.prometheus is None
    inject(lab, "hotel-recommendation-scaled-to-zero")
    shown, _ = await investigate(slack)
    assert "Metrics: no metrics source" in shown, shown
    assert "*Metrics* (Prometheus" not in shown


@pytest.fixture
def hanging() -> Iterator[BadPrometheus]:
    with BadPrometheus("hang") as server:
        yield server


@pytest.mark.parametrize("failure", ["down", "hanging"])
async def test_a_prometheus_that_is_down_or_hangs_still_lets_the_card_post_with_the_reason(
    failure: str,
    lab: Lab,
    playground: PlaygroundServer,
    kube: KubeClient,
    db_path: Path,
    policy: PolicyBox,
    slack: AsyncPlaygroundClient,
    hanging: BadPrometheus,
) -> None:
    url = hanging.url if failure == "hanging" else f"http://127.0.0.1:{free_port()}"
    handle = BotHandle(playground, kube, db_path, policy)
    handle.prometheus = PrometheusClient(PrometheusConfig(url=url, timeout=TIMEOUT))
    await handle.start()
    try:
        inject(lab, "hotel-recommendation-scaled-to-zero")
        shown, took = await investigate(slack)
    finally:
        await handle.stop()
    waits = 2 * (TIMEOUT + 0.5) if failure == "hanging" else 0.0
    assert took < CARD_SECONDS + waits, took
    reason = "did not answer within" if failure == "hanging" else "connection refused"
    warning = next(line for line in shown.splitlines() if "Metrics unavailable" in line)
    assert reason in warning and warning.endswith("Cluster signals only."), warning
    assert "*Telemetry* — pods ready" in shown  # the cluster's signals stand
    if failure == "hanging":
        assert hanging.seen, "the bot asked the hanging Prometheus"


# ---------------------------------------------------------------- after the change, settled

CALLER = re.compile(r"Callers' errors: .*?search (\S+) → (\S+)")
READ_AFTER = re.compile(r"after: read (\d+)s after it")


async def card_by_ts(slack: AsyncPlaygroundClient, ts: str) -> str:
    for message in (await slack.messages(channel=CHANNEL))["messages"]:
        if message["ts"] == ts:
            return readable(message)
    for parent in (await slack.messages(channel=CHANNEL))["messages"]:
        replies = await slack.messages(channel=CHANNEL, thread_ts=parent["ts"])
        for message in replies["messages"]:
            if message["ts"] == ts:
                return readable(message)
    raise AssertionError(f"no message {ts}")


def geo_restarted(prometheus: PrometheusClient) -> None:
    deadline = time.monotonic() + 60
    restarts = 'sum(kube_pod_container_status_restarts_total{namespace="hotel",pod=~"geo-.*"})'
    while time.monotonic() < deadline:
        found = prometheus.query(restarts).samples
        if found and found[0].value >= 1:
            return
        time.sleep(1)
    raise AssertionError("Prometheus never saw geo restart")


async def test_the_after_figures_are_read_again_once_the_change_can_show_in_them(
    metrics_bot: tuple[BotHandle, LabServer, PrometheusClient], slack: AsyncPlaygroundClient
) -> None:
    # The tester's finding: the "after" figures were read at verification, two seconds after
    # the write, while rates still averaged the time before it (search 100% → 100%), and never
    # again. The card must be read again once a rate window (5 s here) and a couple of scrapes
    # have passed, and then show the fix: geo's callers stop failing.
    handle, lab, prometheus = metrics_bot
    LabClient(lab.url).post("/lab/v1/scenarios/hotel-geo-oom/inject")
    geo_restarted(prometheus)  # an OOM loop, and search failing because of it
    delivery = await slack.command("U0DAVE", "/stratus", "investigate hotel")
    assert delivery["ok"], delivery

    async def waiting() -> dict[str, Any] | None:
        for parent in (await slack.messages(channel=CHANNEL))["messages"]:
            replies = await slack.messages(channel=CHANNEL, thread_ts=parent["ts"])
            for message in replies["messages"]:
                for block in message.get("blocks", []):
                    for element in block.get("elements", []):
                        if element.get("action_id") == "stratus.approve" and "geo" in str(message):
                            return {"ts": message["ts"], "pid": element["value"]}
        return None

    found = await wait_for(waiting, timeout=60)
    await slack.click("U0ALICE", "stratus.approve", value=found["pid"])
    runtime = handle.runtime

    async def resolved() -> bool:
        incidents = await runtime.call(runtime.incidents.recent)
        return bool(incidents) and incidents[0].state.value == "resolved"

    await wait_for(resolved, timeout=60)
    resolved_at = time.monotonic()

    async def settled() -> str | None:
        shown = await card_by_ts(slack, found["ts"])
        late = READ_AFTER.search(shown)
        return shown if late and int(late.group(1)) >= 15 else None

    shown = await wait_for(settled, timeout=40)
    assert time.monotonic() - resolved_at < 30  # once, one rate window and a margin later
    callers = CALLER.search(shown)
    assert callers is not None, shown
    before, after = callers.groups()
    # search failed on most calls before the fix: on a loaded machine geo's OOM loop leaves it
    # up for a moment now and then (75% was seen in a suite run), so "most", not "all"…
    assert float(before.removesuffix("%")) >= 50, shown
    assert after.endswith("%") and float(after.removesuffix("%")) < 5, shown  # …and not after
    # The before-figure is geo's working set at one instant of its OOM loop: at the limit, or
    # low right after a restart (seen under load); the after-figure is never at the limit.
    assert "memory / limit " in shown and "→ *100%*" not in shown, shown
