"""Issue 23 §1 and §2 through the whole bot (playground → bot → workflow → card) against a
real Prometheus scraping a realtime lab:

- the card's before/after chart is uploaded into the incident's thread as a PNG (the upload
  API Slack recommends), the card shows it in an image block whose alt text carries the card's
  own figures, and the chart's data are the series Prometheus answers for the figures' PromQL;
- once the change ran, the chart is drawn again with the change marked and the time after it
  shaded; the new file replaces the old one in the thread;
- each figure links to its PromQL on Prometheus' graph page (the query there answers what the
  card says), and to the workload's Grafana dashboard over the incident's time range; no link
  carries the token Stratus reads Prometheus with;
- without Prometheus, the card says it has no chart, and nothing is uploaded.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import pytest_asyncio
import requests

from agents.telemetry_chart import chart_for
from agents.telemetry_links import LinkConfig, dashboards
from lab.client import LabClient
from lab.runner import LabServer
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.bot.conftest import BotHandle, inject, wait_for
from tests.bot.demo_process import REPO
from tests.bot.test_card_metrics import (  # noqa: F401 (fixtures)
    CHANNEL,
    READ_AFTER,
    geo_restarted,
    readable,
    realtime,
    short_windows,
)
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient, PrometheusConfig

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]
TOKEN = "s3cret-prometheus-token"
GRAFANA = "https://grafana.example.test"
ARTIFACTS = Path(os.environ.get("STRATUS_ARTIFACTS", REPO / "tmp" / "artifacts")) / "chart"


@pytest_asyncio.fixture
async def chart_bot(
    playground: PlaygroundServer,
    realtime: tuple[LabServer, KubeClient, PrometheusClient],  # noqa: F811
    tmp_path: Path,
    policy: PolicyBox,
    short_windows: None,  # noqa: F811
) -> AsyncIterator[tuple[BotHandle, LabServer, PrometheusClient]]:
    lab, kube, prometheus = realtime
    handle = BotHandle(playground, kube, tmp_path / "bot.db", policy)
    # Stratus reads Prometheus with a token (the lab's ignores it): no link may carry it.
    handle.prometheus = PrometheusClient(PrometheusConfig(url=prometheus.url, token=TOKEN))
    handle.settings = {
        "links": LinkConfig(grafana=GRAFANA, dashboards=dashboards("hotel/*=hotel-workloads"))
    }
    await handle.start()
    yield handle, lab, prometheus
    await handle.stop()


async def thread_messages(slack: AsyncPlaygroundClient) -> list[dict[str, Any]]:
    found = []
    for parent in (await slack.messages(channel=CHANNEL))["messages"]:
        if parent.get("reply_count"):
            replies = await slack.messages(channel=CHANNEL, thread_ts=parent["ts"])
            found += [m for m in replies["messages"] if m["ts"] != parent["ts"]]
    return found


def image_of(message: dict[str, Any]) -> dict[str, Any] | None:
    return next((b for b in message.get("blocks", []) if b.get("type") == "image"), None)


def links_of(message: dict[str, Any]) -> dict[str, str]:
    """label → URL of the card's links (``<url|label>`` in its context blocks)."""
    found = {}
    for block in message.get("blocks", []):
        for element in block.get("elements", []) if block.get("type") == "context" else []:
            text = str(element.get("text", ""))
            if text.startswith("<") and "|" in text:
                url, _, label = text[1:-1].partition("|")
                found[label] = url
    return found


async def geo_card(slack: AsyncPlaygroundClient, *, changed: bool = False) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        for message in await thread_messages(slack):
            image = image_of(message)
            if image is None or "geo" not in readable(message):
                continue
            if not changed or "the change ran at" in image["alt_text"]:
                return message
        return None

    found: dict[str, Any] = await wait_for(check, timeout=90)
    return found


def proposal_id(message: dict[str, Any]) -> str:
    for block in message.get("blocks", []):
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            if element.get("action_id") == "stratus.approve":
                return str(element["value"])
    raise AssertionError("no Approve button")


def uploaded(messages: list[dict[str, Any]], file_id: str) -> dict[str, Any] | None:
    for message in messages:
        for file in message.get("files") or []:
            if file["id"] == file_id:
                return {"message": message, "file": file}
    return None


async def test_the_card_shows_its_chart_and_links_and_redraws_it_after_the_change(
    chart_bot: tuple[BotHandle, LabServer, PrometheusClient],
    slack: AsyncPlaygroundClient,
    playground: PlaygroundServer,
) -> None:
    handle, lab, prometheus = chart_bot
    LabClient(lab.url).post("/lab/v1/scenarios/hotel-geo-oom/inject")
    geo_restarted(prometheus)
    assert (await slack.command("U0DAVE", "/stratus", "investigate hotel"))["ok"]
    card = await geo_card(slack)
    pid = proposal_id(card)

    # The PNG is a reply in the card's own thread, and the card shows that file.
    image = image_of(card)
    assert image is not None
    file_id = image["slack_file"]["id"]
    share = uploaded(await thread_messages(slack), file_id)
    assert share is not None, "the chart is not in the thread"
    assert share["message"]["thread_ts"] == card["thread_ts"]
    assert share["file"]["mimetype"] == "image/png"
    png = requests.get(f"{playground.url}/playground/v1/files/{file_id}", timeout=5).content
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5_000
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "before.png").write_bytes(png)

    # Alt text: the same figures the card's text shows (its figure line, word for word).
    shown = readable(card)
    figures = next(line for line in shown.splitlines() if line.startswith("error rate "))
    assert figures.replace("*", "") in image["alt_text"], (figures, image["alt_text"])
    assert share["file"]["alt_txt"] == image["alt_text"]

    # The chart's data: the series Prometheus answers for the card's own PromQL.
    telemetry = handle.bot.follower.figures.telemetry[pid][1] if handle.bot else None
    assert telemetry is not None and telemetry.metrics is not None
    metrics = telemetry.metrics
    chart = chart_for(metrics)
    assert chart is not None and chart.changed_at is None and chart.after is None
    # geo answers nothing while it OOM-loops (no error rate, no p95 to draw): its restarts,
    # its memory against the limit and its callers' failed calls are what there is.
    assert {p.metric for p in chart.panels} >= {"restarts", "memory", "callers"}
    stored = handle.runtime.links.chart(pid)
    assert stored is not None and stored.digest == chart.digest and stored.file_id == file_id
    promql = dict(metrics.promql)
    again = prometheus.query_range(
        promql["restarts"], start=metrics.start or 0, end=metrics.read_at or 0
    )
    panel = chart.panel("restarts")
    assert panel is not None and panel.lines[0].points == again.series[0].points
    assert max(v for _, v in panel.lines[0].points) >= 1  # geo's OOM loop restarted it
    callers = chart.panel("callers")
    assert callers is not None and "search" in {line.label for line in callers.lines}

    # Links: each figure to its PromQL on Prometheus' graph page, the dashboard on Grafana.
    links = links_of(card)
    assert {"error rate", "p95 latency", "restarts", "memory / limit", "callers' errors"} <= set(
        links
    ), links
    for label, name in (("restarts", "restarts"), ("error rate", "error_rate")):
        url = urlsplit(links[label])
        assert f"{url.scheme}://{url.netloc}" == prometheus.url.rstrip("/") and url.path == (
            "/graph"
        )
        assert parse_qs(url.query)["g0.expr"] == [promql[name]]
    opened = requests.get(
        prometheus.url.rstrip("/") + "/api/v1/query",
        timeout=5,
        params={"query": parse_qs(urlsplit(links["restarts"]).query)["g0.expr"][0]},
    ).json()
    assert float(opened["data"]["result"][0]["value"][1]) >= 1
    grafana = urlsplit(links["Grafana dashboard"])
    assert f"{grafana.scheme}://{grafana.netloc}{grafana.path}" == f"{GRAFANA}/d/hotel-workloads"
    query = parse_qs(grafana.query)
    assert query["var-namespace"] == ["hotel"] and query["var-workload"] == ["geo"]
    incident = (await handle.runtime.call(handle.runtime.incidents.recent))[0]
    window = (metrics.read_at or 0) - (metrics.start or 0)
    assert int(query["from"][0]) == int((incident.created_at.timestamp() - window) * 1000)
    assert query["to"] == ["now"]

    # After the change: drawn again, the change marked, the time after it shaded; the new
    # file replaces the old one in the thread.
    await slack.click("U0ALICE", "stratus.approve", value=pid)
    after = await geo_card(slack, changed=True)
    new_id = image_of(after)["slack_file"]["id"]  # type: ignore[index]
    assert new_id != file_id
    (ARTIFACTS / "after.png").write_bytes(
        requests.get(f"{playground.url}/playground/v1/files/{new_id}", timeout=5).content
    )
    messages = await thread_messages(slack)
    assert uploaded(messages, new_id) is not None
    assert uploaded(messages, file_id) is None, "the old chart is still in the thread"
    proposal = await handle.runtime.call(handle.runtime.service.get, pid)
    redrawn = (
        chart_for(handle.bot.follower.figures.telemetry[pid][1].metrics) if handle.bot else None
    )
    assert redrawn is not None and redrawn.changed_at is not None
    assert abs(redrawn.changed_at - proposal.updated_at.timestamp()) < 1.0
    assert redrawn.after == (redrawn.changed_at, redrawn.end)

    # Once the change can show in the figures, they are read again and the chart with them:
    # a third file, the second one gone, the thread keeping one chart for the card.
    async def settled() -> str | None:
        card = next(m for m in await thread_messages(slack) if m["ts"] == after["ts"])
        image = image_of(card)
        shown_id = image["slack_file"]["id"] if image else ""
        return (
            shown_id if shown_id not in ("", new_id) and READ_AFTER.search(readable(card)) else None
        )

    latest = await wait_for(settled, timeout=60)
    messages = await thread_messages(slack)
    assert uploaded(messages, latest) is not None and uploaded(messages, new_id) is None
    charts = [
        m for m in messages if any(f["name"] == f"chart-{pid}.png" for f in m.get("files") or [])
    ]
    assert len(charts) == 1, charts

    # Nothing anyone reads carries the token.
    everything = str(await slack.messages(channel=CHANNEL)) + str(messages)
    assert TOKEN not in everything


async def test_without_prometheus_the_card_says_it_has_no_chart_and_uploads_nothing(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    inject(lab, "hotel-recommendation-scaled-to-zero")
    assert (await slack.command("U0DAVE", "/stratus", "investigate hotel"))["ok"]

    async def card() -> dict[str, Any] | None:
        for message in await thread_messages(slack):
            if "stratus.approve" in str(message.get("blocks")):
                return message
        return None

    found = await wait_for(card, timeout=30)
    shown = readable(found)
    assert "Chart: none — no metrics to draw" in shown, shown
    assert image_of(found) is None and not links_of(found)
    calls = (await slack.calls())["calls"]
    assert not [c for c in calls if c["method"].startswith("files.")]


async def test_a_chart_slack_refuses_leaves_the_card_with_its_figures_and_the_reason(
    chart_bot: tuple[BotHandle, LabServer, PrometheusClient],
    slack: AsyncPlaygroundClient,
) -> None:
    handle, lab, prometheus = chart_bot
    # Slack refuses every upload (as it would an app without files:write, or one over its
    # rate): no retries, so the card is not held up.
    await handle.stop()
    handle.settings = {**handle.settings, "rate_limit_retries": 0}
    await handle.start()
    await slack.configure(
        rate_limits={
            "chat.postMessage": 10_000,
            "chat.update": 10_000,
            "files.getUploadURLExternal": 0,
        }
    )
    LabClient(lab.url).post("/lab/v1/scenarios/hotel-geo-oom/inject")
    geo_restarted(prometheus)
    assert (await slack.command("U0DAVE", "/stratus", "investigate hotel"))["ok"]

    async def card() -> dict[str, Any] | None:
        for message in await thread_messages(slack):
            if "stratus.approve" in str(message.get("blocks")) and "geo" in readable(message):
                return message
        return None

    posted = await wait_for(card, timeout=60)
    assert "Chart: being drawn" in readable(posted)  # the card does not wait for its chart

    async def told() -> dict[str, Any] | None:
        found = await card()
        return found if found and "Chart: could not be uploaded" in readable(found) else None

    found = await wait_for(told, timeout=30)
    shown = readable(found)
    assert "Chart: could not be uploaded (ratelimited); the figures above stand" in shown, shown
    assert image_of(found) is None
    assert "*Metrics* (Prometheus" in shown and "Open in Prometheus:" in shown
    calls = (await slack.calls("files.getUploadURLExternal"))["calls"]
    assert calls and all(c["error"] == "ratelimited" for c in calls)
    attempts = len(calls)
    # Rendered again with the same figures, the card does not try the same chart again.
    assert handle.bot is not None
    await handle.bot.follower.refresh_card(proposal_id(found))
    assert len((await slack.calls("files.getUploadURLExternal"))["calls"]) == attempts


async def test_a_chart_slack_has_not_processed_yet_is_shown_on_the_card_shortly_after(
    chart_bot: tuple[BotHandle, LabServer, PrometheusClient],
    slack: AsyncPlaygroundClient,
) -> None:
    # Slack refuses an image block naming a file it has not processed yet (invalid_blocks):
    # the card must still post — without the image, the chart in the thread — and show it
    # once Slack has the file.
    _, lab, prometheus = chart_bot
    await slack.configure(file_ready_seconds=2.0)
    LabClient(lab.url).post("/lab/v1/scenarios/hotel-geo-oom/inject")
    geo_restarted(prometheus)
    assert (await slack.command("U0DAVE", "/stratus", "investigate hotel"))["ok"]

    async def card() -> dict[str, Any] | None:
        for message in await thread_messages(slack):
            if "stratus.approve" in str(message.get("blocks")) and "geo" in readable(message):
                return message
        return None

    posted = await wait_for(card, timeout=60)
    assert "Chart: being drawn" in readable(posted)

    async def in_thread() -> dict[str, Any] | None:
        found = await card()
        waiting = "Chart: posted in the thread; shown here once Slack has processed it"
        return found if found and waiting in readable(found) else None

    first = await wait_for(in_thread, timeout=30)
    assert image_of(first) is None and first["ts"] == posted["ts"]
    refused = [
        c for c in (await slack.calls("chat.update"))["calls"] if c["error"] == "invalid_blocks"
    ]
    assert refused and "invalid slack file" in str(refused[0]["response"])

    async def shown() -> dict[str, Any] | None:
        found = await card()
        return found if found and image_of(found) else None

    later = await wait_for(shown, timeout=20)
    assert later["ts"] == first["ts"]  # the same card, edited
    assert uploaded(await thread_messages(slack), image_of(later)["slack_file"]["id"])  # type: ignore[index]
