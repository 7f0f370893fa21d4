"""Before → after with real Prometheus: a realtime lab scraped by Debian's Prometheus, a fault
that makes a service answer errors, and the incident workflow (offline planner, real proposal
service, allow-all policy, the Prometheus client) executing the fix. The telemetry summary of
the executed proposal then compares the figures at the moment it ran with now: the target's
error rate and its callers' failed calls fall; the card and the CLI print it that way."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from agents import snapshot_metrics
from agents.planner.offline import OfflinePlanner
from agents.telemetry import Telemetry, summarize
from bot.telemetry import telemetry_text
from cli import render
from incidents.model import IncidentState
from incidents.repository import IncidentEventType
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.client import LabClient
from lab.runner import LabServer
from policies.model import Rule
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.db import Store
from tests.prometheus_lab import scraped_lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient, PrometheusConfig
from tools.reads import ClusterReader

SCENARIO = "hotel-reservation-env-changed"  # reservation's database rejects it: it answers 500


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[LabServer, KubeClient, PrometheusClient]]:
    with scraped_lab(tmp_path) as world:
        kube = KubeClient(kubeconfig=str(world.kubeconfig))
        try:
            yield world.lab, kube, PrometheusClient(PrometheusConfig(url=world.prometheus_url))
        finally:
            kube.close()


@pytest.fixture(autouse=True)
def short_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATUS_TELEMETRY_RATE", "5s")
    monkeypatch.setenv("STRATUS_TELEMETRY_WINDOW", "1m")


def wait_until(check: object, timeout: float = 45.0) -> Telemetry:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found is not None:
            return found  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(1)


def test_the_executed_fix_shows_the_error_rate_falling(
    world: tuple[LabServer, KubeClient, PrometheusClient], tmp_path: Path
) -> None:
    lab, kube, prometheus = world
    LabClient(lab.url).post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    store = Store(tmp_path / "stratus.db")
    policy = PolicyBox()
    policy.set(Rule(name="allow-everything", decision="allow"))
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=policy
    )
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=OfflinePlanner(),
        config=WorkflowConfig(settle_timeout=30, poll_interval=0.5),
        prometheus=prometheus,
    )
    reader = ClusterReader(kube)

    # Prometheus has seen reservation failing for a while before anyone acts, as in a real
    # incident (the "before" needs points; the broken pod takes seconds to start).
    def failing() -> bool | None:
        rates = snapshot_metrics.read(prometheus, "hotel").error_rates.trends
        seen = [v for t in rates if t.labels.get("service") == "reservation" for _, v in t.points]
        return True if sum(v >= 0.5 for v in seen) >= 8 else None

    wait_until(failing)
    incident, _ = flow.start("hotel", requester="cli:alice")
    done = flow.advance(incident.id)
    assert done.state == IncidentState.RESOLVED, [a.outcome for a in done.attempts]
    proposal = service.get(done.attempts[-1].proposals[0])
    assert proposal.state == ProposalState.EXECUTED
    assert (proposal.target.kind, proposal.target.name) == ("Deployment", "reservation")

    # The health score the workflow judged with had Prometheus' error part.
    verified = [
        e.event
        for e in flow.incidents.events(incident_id=incident.id)
        if e.event.type == IncidentEventType.VERIFIED
    ]
    assert verified[-1].data["before"]["parts"]["erroring_services"] >= 1
    assert verified[-1].data["before"]["metrics"] == "prometheus"

    def recovered() -> Telemetry | None:
        summary = summarize(reader, service.get(proposal.id), prometheus=prometheus)
        metrics = summary.metrics
        if metrics is None or metrics.pending:
            return None  # read before the change could show in the figures: labelled pending
        # The old pod's series end with it; the frontend's calls drain over the rate window.
        now = [metrics.error_rate.now, *(c.figure.now for c in metrics.callers)]
        return summary if all(v is not None and v <= 0.01 for v in now) else None

    summary = wait_until(recovered)
    metrics = summary.metrics
    assert metrics is not None and summary.metrics_source == "prometheus"
    assert metrics.executed_at == pytest.approx(proposal.updated_at.timestamp())
    assert metrics.services == ("reservation",)
    assert metrics.error_rate.before is not None and metrics.error_rate.before >= 0.5
    assert metrics.error_rate.now is not None and metrics.error_rate.now <= 0.01
    frontend = next(c for c in metrics.callers if c.caller == "frontend")
    assert frontend.figure.before is not None and frontend.figure.before >= 0.5
    assert frontend.figure.now is not None and frontend.figure.now <= 0.01

    shown = telemetry_text(summary)
    assert "before → after the change" in shown
    before = f"{metrics.error_rate.before:.0%}"
    assert f"error rate {before} → *0.0%*" in shown, shown
    assert "frontend " in shown and "→ 0.0%" in shown
    runner = CliRunner()
    with runner.isolation() as (out, _, _):
        render.telemetry(summary)
        printed = out.getvalue().decode()
    assert "before -> after the change" in printed, printed
    rate_line = next(line for line in printed.splitlines() if "error rate" in line)
    assert rate_line.split()[-3:] == [f"{metrics.error_rate.before:.1%}", "->", "0.0%"], rate_line
    assert f"caller frontend: errors {frontend.figure.before:.1%} -> 0.0%" in printed, printed
    store.close()
