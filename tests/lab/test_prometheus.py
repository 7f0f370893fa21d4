"""A real Prometheus scraping a realtime lab, and a real Alertmanager posting to a webhook:
the contract's PromQL answers with the simulation's values, and a fault fires an alert that
arrives with its Bearer token, then resolves once the fault is fixed."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from lab.client import LabClient
from lab.prometheus import PrometheusError, PrometheusStack, WebhookTarget, unavailable
from lab.runner import LAB_TOKEN, LabServer

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=unavailable() or "")

WEBHOOK_TOKEN = "alerts-s3cret"
RULES = """
groups:
- name: lab
  rules:
  - alert: CallersFailing
    expr: >-
      sum by (namespace, destination_service)
      (rate(http_client_requests_total{code=~"5.."}[1m])) > 0
    for: 1m
    labels: {severity: warning}
    annotations: {summary: "callers of {{ $labels.destination_service }} see errors"}
"""


@pytest.fixture(scope="module")
def realtime_lab() -> Iterator[LabServer]:
    server = LabServer(mode="realtime", apps=["hotel"]).start()
    yield server
    server.stop()


def query(stack: PrometheusStack, promql: str) -> list[dict[str, Any]]:
    url = f"{stack.prometheus_url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.loads(response.read())
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def by(result: list[dict[str, Any]], label: str) -> dict[str, float]:
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in result}


def eventually(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except (AssertionError, KeyError):  # a series not there yet is a KeyError
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_the_contracts_promql_answers_with_the_simulation(
    realtime_lab: LabServer, tmp_path: Path
) -> None:
    LabClient(realtime_lab.url).post("/lab/v1/reset")
    with PrometheusStack(lab_url=realtime_lab.url, token=LAB_TOKEN, workdir=tmp_path) as stack:
        assert stack.alertmanager_url == ""  # no rules, no webhook: Prometheus alone

        def every_target_up() -> None:
            # Prometheus scrapes its targets one by one; the first query can
            # land before the last target's first scrape.
            up = by(query(stack, "up"), "job")
            assert up == {"kube-state-metrics": 1, "kubelet": 1, "stratus-lab-apps": 1}

        eventually(every_target_up)

        def healthy() -> None:
            rate = by(
                query(
                    stack,
                    'sum by (namespace,service)(rate(http_requests_total{namespace="hotel"}[10s]))',
                ),
                "service",
            )
            assert rate.get("geo", 0) > 0 and rate.get("frontend", 0) > 0

        eventually(healthy)
        p95 = by(
            query(
                stack,
                "histogram_quantile(0.95, sum by (namespace,service,le)"
                '(rate(http_request_duration_seconds_bucket{namespace="hotel"}[10s])))',
            ),
            "service",
        )
        # geo: 5 ms of its own and 5 ms of mongodb-geo; frontend waits for all its calls.
        assert 0.01 < p95["geo"] <= 0.025
        assert p95["frontend"] > p95["search"] > p95["geo"]
        memory = by(
            query(
                stack,
                'container_memory_working_set_bytes{namespace="hotel"}'
                " / (container_spec_memory_limit_bytes > 0)",
            ),
            "container",
        )
        assert memory["geo"] == pytest.approx(80 / 256)
        available = by(
            query(stack, 'kube_deployment_status_replicas_available{namespace="hotel"}'),
            "deployment",
        )
        assert available["geo"] == 1

        LabClient(realtime_lab.url).post(
            "/lab/v1/faults/delete-service/inject",
            {"namespace": "hotel", "params": {"service": "geo"}},
        )

        def failing() -> None:
            errors = by(
                query(
                    stack,
                    'sum by (namespace,service)(rate(http_requests_total{code=~"5.."}[10s]))'
                    " / sum by (namespace,service)(rate(http_requests_total[10s]))",
                ),
                "service",
            )
            assert errors["search"] == pytest.approx(1.0)
            callers = by(
                query(
                    stack,
                    "sum by (service)(rate(http_client_requests_total"
                    '{destination_service="geo",code=~"5..|0"}[10s]))',
                ),
                "service",
            )
            assert callers["search"] > 0
            served = by(
                query(stack, 'sum by (service)(rate(http_requests_total{service="geo"}[10s]))'),
                "service",
            )
            assert served.get("geo", 0) == 0  # nobody reaches geo any more

        eventually(failing)


class Receiver:
    """A webhook that records what Alertmanager posts and the Authorization it presents."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, Any]]] = []
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _handle(self, request: web.Request) -> web.Response:
        self.posts.append((request.headers.get("Authorization", ""), await request.json()))
        return web.Response(text="ok")

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/alerts", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/alerts"

    def start(self) -> Receiver:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def statuses(self, alertname: str) -> list[str]:
        return [
            alert["status"]
            for _, body in self.posts
            for alert in body.get("alerts", [])
            if alert["labels"].get("alertname") == alertname
        ]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver().start()
    yield running
    running.stop()


def test_a_fault_fires_an_alert_posted_with_the_token_and_resolved_after_the_fix(
    realtime_lab: LabServer, receiver: Receiver, tmp_path: Path
) -> None:
    lab = LabClient(realtime_lab.url)
    lab.post("/lab/v1/reset")
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    with PrometheusStack(
        lab_url=realtime_lab.url,
        token=LAB_TOKEN,
        workdir=tmp_path / "stack",
        rule_files=[rules],
        webhook=WebhookTarget(receiver.url, WEBHOOK_TOKEN),
    ) as stack:
        loaded = (tmp_path / "stack" / "rules" / "00-rules.yaml").read_text()
        assert "for: 2s" in loaded and "[4s]" in loaded  # 1m on the lab's clock
        time.sleep(3)
        assert receiver.statuses("CallersFailing") == []  # a healthy app fires nothing
        service = json.loads(
            urllib.request.urlopen(
                f"{realtime_lab.url}/api/v1/namespaces/hotel/services/geo", timeout=10
            ).read()
        )
        lab.post(
            "/lab/v1/faults/delete-service/inject",
            {"namespace": "hotel", "params": {"service": "geo"}},
        )

        def fired() -> None:
            assert "firing" in receiver.statuses("CallersFailing")

        eventually(fired, 40)
        token, body = next(p for p in receiver.posts if p[1]["status"] == "firing")
        assert token == f"Bearer {WEBHOOK_TOKEN}"
        alert = body["alerts"][0]
        assert alert["labels"]["destination_service"] == "geo"
        assert alert["labels"]["namespace"] == "hotel"
        assert body["groupLabels"] == {"alertname": "CallersFailing", "namespace": "hotel"}
        assert alert["annotations"]["summary"] == "callers of geo see errors"
        assert query(stack, 'ALERTS{alertname="CallersFailing",alertstate="firing"}')

        # The fix: the Service is created again.
        metadata = {
            "name": "geo",
            "namespace": "hotel",
            "labels": service["metadata"].get("labels"),
        }
        spec = {k: v for k, v in service["spec"].items() if k not in ("clusterIP", "clusterIPs")}
        request = urllib.request.Request(
            f"{realtime_lab.url}/api/v1/namespaces/hotel/services",
            data=json.dumps(
                {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}
            ).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=10).close()

        def resolved() -> None:
            assert "resolved" in receiver.statuses("CallersFailing")

        eventually(resolved, 60)
        assert all(token == f"Bearer {WEBHOOK_TOKEN}" for token, _ in receiver.posts)


def test_a_stack_that_cannot_start_says_why_with_its_log(tmp_path: Path) -> None:
    with pytest.raises(PrometheusError, match="cannot list the lab's nodes"):
        PrometheusStack(lab_url="http://127.0.0.1:9", token="x", workdir=tmp_path).start()
    bad = tmp_path / "bad.yaml"
    bad.write_text("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: 'rate(x[5m]'\n")
    server = LabServer(apps=[]).start()
    try:
        with pytest.raises(PrometheusError, match=r"prometheus exited .*\n(.|\n)*bad\.yaml"):
            PrometheusStack(
                lab_url=server.url, token=LAB_TOKEN, workdir=tmp_path / "s", rule_files=[bad]
            ).start(timeout=30)
    finally:
        server.stop()
