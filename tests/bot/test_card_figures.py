"""Card figures that agree with the cluster, through the whole bot (playground → bot → workflow
→ card) with a real Prometheus scraping a realtime lab (issue 18 §3):

- a Deployment scaled to zero has no pods: its card says "no pods", not the error rate, p95
  and memory its pods had before they went away;
- once the fix ran, the "after" figures read before the change could show in them say
  "pending — read again at …" instead of numbers, and are read again then;
- a bot restarted in between re-renders the pending card too (the moment is kept in the
  store, not in the memory of the bot that posted it)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agents import snapshot_metrics
from incidents.repository import IncidentEventType
from lab.client import LabClient
from lab.runner import LabServer
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.bot.conftest import BotHandle, wait_for
from tests.bot.test_card_metrics import (  # noqa: F401  (fixtures, found by name)
    CHANNEL,
    card_by_ts,
    readable,
    realtime,
    short_windows,
)
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient

pytestmark = pytest.mark.asyncio
SCENARIO = "hotel-recommendation-scaled-to-zero"
FIGURES = re.compile(r"^error rate .*$", re.M)
HEALTH_EXPLAINED = re.compile(
    r"health score \d+ → 0 \(healthy\): was \d+ "
    r"|health score (\d+ → )?[1-9]\d* \(healthy\): (now )?\d+ .* counts as healthy"
)
PENDING = re.compile(r"after: pending — read again at (\d\d:\d\d:\d\d) UTC")


@pytest_asyncio.fixture
async def figures_bot(
    playground: PlaygroundServer,
    realtime: tuple[LabServer, KubeClient, PrometheusClient],  # noqa: F811
    tmp_path: Path,
    policy: PolicyBox,
    short_windows: None,  # noqa: F811
) -> AsyncIterator[tuple[BotHandle, LabServer, PrometheusClient]]:
    lab, kube, prometheus = realtime
    handle = BotHandle(playground, kube, tmp_path / "bot.db", policy)
    handle.prometheus = prometheus
    await handle.start()
    yield handle, lab, prometheus
    await handle.stop()


def recommendation_measured_then_gone(lab: LabServer, prometheus: PrometheusClient) -> None:
    """Prometheus has recommendation's figures from while it ran (the stale figures a card must
    not show), then the scenario takes its pods away and frontend's calls to it fail."""
    deadline = time.monotonic() + 45
    memory = 'container_memory_working_set_bytes{namespace="hotel",pod=~"recommendation-.*"}'
    while not prometheus.query(memory).samples:
        assert time.monotonic() < deadline, "Prometheus never saw recommendation's pods"
        time.sleep(1)
    LabClient(lab.url).post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    while True:
        callers = snapshot_metrics.read(prometheus, "hotel").caller_errors.trends
        failing = [
            v
            for t in callers
            if t.labels.get("destination_service") == "recommendation"
            for _, v in t.points[-3:]
        ]
        if failing and min(failing) >= 0.5:
            return
        assert time.monotonic() < deadline, "frontend never failed calling recommendation"
        time.sleep(1)


async def callers_failing_now(prometheus: PrometheusClient) -> None:
    """Wait until Prometheus has fresh readings of frontend's failed calls to recommendation
    (its last three points at least half failing, the newest within two steps of now). The
    callers' series is only seconds old then (the fault was just injected); their "before"
    figure is the reading at the moment the change runs: under load the lab's traffic or the
    scrapes may pause, and a change made then has no reading to show ("no reading") — the test
    of the figures makes its change while there is one."""

    def fresh() -> bool:
        end = time.time()
        callers = snapshot_metrics.read(prometheus, "hotel", now=end).caller_errors.trends
        points = sorted(
            (t, v)
            for trend in callers
            if trend.labels.get("destination_service") == "recommendation"
            for t, v in trend.points
        )
        recent = [v for _, v in points[-3:]]
        return len(recent) == 3 and points[-1][0] >= end - 4 and min(recent) >= 0.5

    async def check() -> bool:
        return await asyncio.to_thread(fresh)

    await wait_for(check, timeout=45)


async def the_card(slack: AsyncPlaygroundClient) -> dict[str, Any]:
    async def waiting() -> dict[str, Any] | None:
        for parent in (await slack.messages(channel=CHANNEL))["messages"]:
            replies = await slack.messages(channel=CHANNEL, thread_ts=parent["ts"])
            for message in replies["messages"]:
                for block in message.get("blocks", []):
                    for element in block.get("elements", []):
                        if element.get("action_id") == "stratus.approve":
                            return {"ts": message["ts"], "pid": element["value"]}
        return None

    found: dict[str, Any] = await wait_for(waiting, timeout=60)
    return found


async def approve_and_resolve(
    handle: BotHandle, slack: AsyncPlaygroundClient
) -> tuple[dict[str, Any], str]:
    """Investigate, check the card before the change, approve; the card and its text at the
    first render after the change."""
    delivery = await slack.command("U0DAVE", "/stratus", "investigate hotel")
    assert delivery["ok"], delivery
    found = await the_card(slack)
    before = await card_by_ts(slack, found["ts"])
    assert "Scale deployment/recommendation" in before or "recommendation" in before, before
    figures = FIGURES.search(before)
    # No pods: no error rate, no p95, no memory from the pods it had minutes ago.
    assert figures is None, before
    assert "no pods" in before and "nothing to measure" in before, before
    assert "Callers' errors: frontend " in before, before  # its callers still fail, now
    assert handle.prometheus is not None
    await callers_failing_now(handle.prometheus)
    await slack.click("U0ALICE", "stratus.approve", value=found["pid"])
    runtime = handle.runtime

    async def ended() -> str:
        incidents = await runtime.call(runtime.incidents.recent)
        done = bool(incidents) and not incidents[0].is_open
        return f"{incidents[0].state.value} {incidents[0].attempts}" if done else ""

    try:
        outcome = await wait_for(ended, timeout=60)
    except TimeoutError:
        incidents = await runtime.call(runtime.incidents.recent)
        raise AssertionError(
            f"{[(i.state, i.attempts) for i in incidents]}\n{await card_by_ts(slack, found['ts'])}"
        ) from None
    assert outcome.startswith("resolved"), outcome

    async def verified() -> str | None:
        shown = await card_by_ts(slack, found["ts"])
        return shown if "*Verification:* :white_check_mark: healthy" in shown else None

    shown: str = await wait_for(verified, timeout=20)
    return found, shown


def assert_pending(shown: str) -> str:
    pending = PENDING.search(shown)
    assert pending is not None, shown
    figures = FIGURES.search(shown)
    assert figures is not None, shown
    # Before the change there were no pods; after it, nothing is claimed yet.
    assert figures.group(0).startswith("error rate no pods → *pending*"), shown
    assert "read 0s after it" not in shown
    return pending.group(1)


def assert_read_again(shown: str) -> None:
    assert PENDING.search(shown) is None and "*pending*" not in shown, shown
    figures = FIGURES.search(shown)
    assert figures is not None, shown
    line = figures.group(0)
    assert line.startswith("error rate no pods → *"), line
    assert "→ *no pods*" not in line, line  # it has pods now
    late = re.search(r"after: read (\d+)s after it", shown)
    assert late is not None and int(late.group(1)) >= 5, shown
    # The tester's finding: "Callers' errors: frontend 100% → 100%" beside "healthy". Read once
    # the callers have retried against the fixed service, they no longer fail.
    callers = re.search(r"Callers' errors: .*?frontend (no reading|\S+) → (no reading|\S+)", shown)
    assert callers is not None, shown
    before, after = callers.groups()
    assert before.endswith("%") and float(before.removesuffix("%")) >= 50, shown
    assert after.endswith("%") and float(after.removesuffix("%")) < 5, shown


async def test_a_deployment_scaled_to_zero_shows_no_pods_then_pending_then_its_figures(
    figures_bot: tuple[BotHandle, LabServer, PrometheusClient], slack: AsyncPlaygroundClient
) -> None:
    handle, lab, prometheus = figures_bot
    recommendation_measured_then_gone(lab, prometheus)
    found, shown = await approve_and_resolve(handle, slack)
    assert_pending(shown)
    # The verdict explains its score: what was wrong, or why what is left counts as healthy.
    verification = next(x for x in shown.splitlines() if x.startswith("*Verification:*"))
    assert HEALTH_EXPLAINED.search(verification), verification
    runtime = handle.runtime
    incident = (await runtime.call(runtime.incidents.recent))[0]
    events = await runtime.call(runtime.incidents.events, incident_id=incident.id)
    verified = [e.event.message for e in events if e.event.type == IncidentEventType.VERIFIED]
    assert verified and ("was " in verified[-1] or "healthy: only" in verified[-1]), verified

    async def read_again() -> str | None:
        current = await card_by_ts(slack, found["ts"])
        return current if PENDING.search(current) is None else None

    assert_read_again(await wait_for(read_again, timeout=45))


async def test_a_bot_restarted_while_figures_were_pending_reads_them_again(
    figures_bot: tuple[BotHandle, LabServer, PrometheusClient], slack: AsyncPlaygroundClient
) -> None:
    handle, lab, prometheus = figures_bot
    recommendation_measured_then_gone(lab, prometheus)
    found, shown = await approve_and_resolve(handle, slack)
    due = assert_pending(shown)
    await handle.stop()
    # Down past the moment the card said it would read again: nobody re-rendered it.
    waited = time.monotonic() + 60
    while time.strftime("%H:%M:%S", time.gmtime()) <= due and time.monotonic() < waited:
        time.sleep(0.5)
    time.sleep(1)
    assert PENDING.search(await card_by_ts(slack, found["ts"])) is not None
    await handle.start()

    async def read_again() -> str | None:
        current = await card_by_ts(slack, found["ts"])
        return current if PENDING.search(current) is None else None

    assert_read_again(await wait_for(read_again, timeout=20))


# ---------------------------------------------------------------- error lines (instant lab)


async def test_the_card_shows_the_targets_log_lines_and_the_button_shows_them_whole(
    lab: Any, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    from tests.bot.conftest import inject

    inject(lab, "hotel-reservation-env-changed")  # reservation logs every failed query
    delivery = await slack.command("U0DAVE", "/stratus", "investigate hotel")
    assert delivery["ok"], delivery
    found = await the_card(slack)
    shown = await card_by_ts(slack, found["ts"])
    line = next(x for x in shown.splitlines() if x.startswith("Error lines: "))
    pods = [p["metadata"]["name"] for p in stratus_bot.kube.list("v1", "Pod", namespace="hotel")]
    assert not any(pod in line for pod in pods), line  # log lines, not pod names
    assert "deployment/" not in line and "#" not in line, line
    assert "See the error lines" in shown, shown
    await slack.click("U0ALICE", "stratus.logs", value=found["pid"])

    async def opened() -> str | None:
        views = (await slack.views("U0ALICE"))["views"]
        return str(views[-1]) if views else None

    view = await wait_for(opened, timeout=10)
    assert "Error lines" in view and "pods logged" in view, view
    first = line.split("`")[1].removesuffix("…")
    assert first in view, (first, view)
