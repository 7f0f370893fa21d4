"""The telemetry PromQL against the lab's metrics through a real Prometheus (Debian's binary,
scraping a realtime lab every second): the figures of a healthy service, a fault showing up in
the callee's callers and in the health score's error part, and the fix bringing it down."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agents.health import collect, score
from agents.telemetry import summarize
from bot.telemetry import telemetry_text
from lab.client import LabClient
from lab.runner import LabServer
from proposals.model import Proposal
from proposals.service import ProposalService
from store.db import Store
from tests.prometheus_lab import scraped_lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from tools.prometheus import PrometheusClient, PrometheusConfig
from tools.reads import ClusterReader

T = TypeVar("T")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, str, Path]]:
    with scraped_lab(tmp_path_factory.mktemp("telemetry")) as world:
        yield world.lab, world.prometheus_url, world.kubeconfig


@pytest.fixture(autouse=True)
def short_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    # The lab scrapes every second: a 5 s rate sees five scrapes, and a test waits seconds.
    monkeypatch.setenv("STRATUS_TELEMETRY_RATE", "5s")
    monkeypatch.setenv("STRATUS_TELEMETRY_WINDOW", "1m")


@pytest.fixture
def kube(stack: tuple[LabServer, str, Path]) -> Iterator[KubeClient]:
    client = KubeClient(kubeconfig=str(stack[2]))
    yield client
    client.close()


@pytest.fixture
def prometheus(stack: tuple[LabServer, str, Path]) -> PrometheusClient:
    return PrometheusClient(PrometheusConfig(url=stack[1]))


def eventually(check: Callable[[], T | None], timeout: float = 45.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found is not None:
            return found
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


def proposal_on(kube: KubeClient, tmp_path: Path, name: str) -> Proposal:
    store = Store(tmp_path / f"{name}.db")
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=PolicyBox()
    )
    return service.propose(
        action="scale",
        kind="Deployment",
        name=name,
        namespace="hotel",
        params={"replicas": 2},
        requester="U0REQ",
    )


def test_a_healthy_service_has_real_figures(
    kube: KubeClient, prometheus: PrometheusClient, tmp_path: Path
) -> None:
    proposal = proposal_on(kube, tmp_path, "geo")

    def ready() -> Any:
        summary = summarize(ClusterReader(kube), proposal, prometheus=prometheus)
        metrics = summary.metrics
        if metrics is None or metrics.error_rate.now is None or metrics.memory.now is None:
            return None
        return summary

    summary = eventually(ready)
    metrics = summary.metrics
    assert metrics is not None and summary.metrics_source == "prometheus"
    assert metrics.services == ("geo",)
    assert metrics.error_rate.now == 0.0
    assert metrics.p95.now is not None and 0 < metrics.p95.now < 5
    assert metrics.memory.now is not None and 0 < metrics.memory.now < 1
    assert metrics.restarts.now == 0
    assert [c.caller for c in metrics.callers] == ["search"]  # geo's caller, failing nothing
    assert metrics.callers[0].figure.now == 0.0
    shown = telemetry_text(summary)
    assert "*Metrics* (Prometheus" in shown and "error rate *0.0%*" in shown


def test_a_fault_raises_the_error_part_and_the_fix_lowers_it(
    stack: tuple[LabServer, str, Path], kube: KubeClient, prometheus: PrometheusClient
) -> None:
    def erroring() -> tuple[str, ...] | None:
        found = collect(kube, "hotel", prometheus=prometheus).erroring_services
        return found if found else None

    before = score(collect(kube, "hotel", prometheus=prometheus))
    assert before.parts["erroring_services"] == 0 and before.metrics == "prometheus"
    LabClient(stack[0].url).post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    found = eventually(erroring)
    assert any(line.startswith("frontend") for line in found), found
    during = score(collect(kube, "hotel", prometheus=prometheus))
    assert during.parts["erroring_services"] >= 1
    deployment = kube.get(ObjectRef("Deployment", "recommendation", "hotel"))
    deployment["spec"]["replicas"] = 1
    kube.replace(deployment)

    def cleared() -> bool | None:
        return None if collect(kube, "hotel", prometheus=prometheus).erroring_services else True

    eventually(cleared)
    after = score(collect(kube, "hotel", prometheus=prometheus))
    assert after.parts["erroring_services"] == 0
    assert after.total_over(["erroring_services"]) < during.total_over(["erroring_services"])
