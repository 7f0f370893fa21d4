"""The telemetry summary of a proposal's target against the lab cluster, with and without a
metrics source, and with a Prometheus that hangs, fails or is down: the summary always comes
back, in bounded time, with the cluster's signals and the reason the figures are missing. The
card and the CLI say so."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from agents.health import HealthScore, collect, score, verdict
from agents.telemetry import summarize
from bot.telemetry import telemetry_text
from cli import render
from proposals.model import Proposal
from proposals.service import ProposalService
from store.db import Store
from tests.proposals.conftest import PolicyBox
from tests.tools.promservers import BadPrometheus, free_port
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient, PrometheusConfig
from tools.reads import ClusterReader


@pytest.fixture
def service(kube: KubeClient, store: Store) -> ProposalService:
    return ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=PolicyBox()
    )


@pytest.fixture
def proposal(service: ProposalService) -> Proposal:
    return service.propose(
        action="scale",
        kind="Deployment",
        name="geo",
        namespace="hotel",
        params={"replicas": 2},
        requester="U0REQ",
    )


@pytest.fixture
def hanging() -> Iterator[BadPrometheus]:
    with BadPrometheus("hang") as server:
        yield server


def client(url: str, timeout: float = 0.3) -> PrometheusClient:
    return PrometheusClient(PrometheusConfig(url=url, timeout=timeout))


def test_without_prometheus_the_card_says_no_metrics_source(
    kube: KubeClient, proposal: Proposal
) -> None:
    summary = summarize(ClusterReader(kube), proposal)
    assert summary.metrics_source == "none" and summary.metrics is None
    assert summary.pods == "1/1"
    shown = telemetry_text(summary)
    assert "pods ready 1/1" in shown and "no metrics source" in shown


def test_a_hanging_prometheus_degrades_to_cluster_signals_in_bounded_time(
    kube: KubeClient, proposal: Proposal, hanging: BadPrometheus
) -> None:
    started = time.monotonic()
    summary = summarize(ClusterReader(kube), proposal, prometheus=client(hanging.url))
    took = time.monotonic() - started
    assert summary.metrics_source == "failed"
    assert "did not answer within 0.3 s" in summary.metrics_reason
    assert summary.pods == "1/1"  # the cluster's signals stand
    assert took < 3.0, took
    shown = telemetry_text(summary)
    assert "Metrics unavailable" in shown and "0.3 s" in shown
    assert hanging.seen, "the summary asked Prometheus"


@pytest.mark.parametrize(
    ("mode", "words"),
    [("http500", "HTTP 500"), ("error_json", "bad_data"), ("garbage", "not the Prometheus")],
)
def test_a_failing_prometheus_shows_its_reason(
    kube: KubeClient, proposal: Proposal, mode: str, words: str
) -> None:
    with BadPrometheus(mode) as bad:  # type: ignore[arg-type]
        summary = summarize(ClusterReader(kube), proposal, prometheus=client(bad.url, 2))
    assert summary.metrics_source == "failed" and words in summary.metrics_reason
    assert summary.pods == "1/1"


def test_a_prometheus_that_is_down_shows_why(kube: KubeClient, proposal: Proposal) -> None:
    down = client(f"http://127.0.0.1:{free_port()}")
    summary = summarize(ClusterReader(kube), proposal, prometheus=down)
    assert summary.metrics_source == "failed" and "connection refused" in summary.metrics_reason
    runner = CliRunner()
    with runner.isolation() as (out, _, _):
        render.telemetry(summary)
        printed = out.getvalue().decode()
    assert "pods ready 1/1" in printed and "unavailable" in printed
    assert "connection refused" in printed


def test_objects_that_serve_no_requests_have_no_metrics(
    kube: KubeClient, service: ProposalService, hanging: BadPrometheus
) -> None:
    node = service.propose(action="cordon", kind="Node", name="node-1", requester="U0REQ")
    summary = summarize(ClusterReader(kube), node, prometheus=client(hanging.url))
    assert summary.metrics_source == "not_applicable" and not hanging.seen


def test_the_health_score_falls_back_to_cluster_signals_when_prometheus_hangs(
    kube: KubeClient, hanging: BadPrometheus
) -> None:
    started = time.monotonic()
    state = collect(kube, "hotel", prometheus=client(hanging.url))
    assert time.monotonic() - started < 5
    assert state.erroring_services is None and "did not answer" in state.metrics_note
    look = score(state)
    assert "erroring_services" not in look.parts and look.healthy
    assert look.metrics.startswith("unavailable")


def test_a_prometheus_failure_cannot_flip_a_verdict() -> None:
    """Before: cluster 2 unready pods, Prometheus said 1 service erroring. After: the pods are
    fixed but Prometheus failed — judged on the cluster parts both looks have."""
    before = HealthScore(parts={"unready_pods": 2, "erroring_services": 1}, metrics="prometheus")
    after_without = HealthScore(parts={"unready_pods": 3}, metrics="unavailable: timeout")
    assert verdict(before, after_without) == "worse"  # 3 > 2 on the shared part
    same = HealthScore(parts={"unready_pods": 2})
    assert verdict(before, same) == "same"  # the missing error part is not an improvement
    # With both looks measured, a fix lowers the error part and the score.
    fixed = HealthScore(parts={"unready_pods": 2, "erroring_services": 0}, metrics="prometheus")
    assert verdict(before, fixed) == "better"
    assert HealthScore.from_dict(before.to_dict()) == before
