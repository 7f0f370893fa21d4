"""The metrics analyzers against real Prometheus data: a realtime lab with the hotel app,
scraped every second by Debian's Prometheus (``lab.prometheus.PrometheusStack``), faults
injected through the lab, and the analyzers run on a snapshot read with the Prometheus
client — the way a look takes them.

- callers' error spike: a callee scaled to zero, or its Service's targetPort broken, shows in
  its callers' failed calls and points at the callee (not at the callers in between);
- memory creeping to the limit: a leaky release under a tight limit is flagged before the
  kernel kills it, and a pod that just started is not a creep;
- latency after a rollout: a CPU limit rolled out below what the service needs throttles it
  and its p95 rises — the Deployment that rolled out is named, not the callers that wait;
- a healthy namespace gives no metrics finding.

One lab and one Prometheus serve the module (starting them costs seconds); each test resets
the lab's apps, and the short windows keep earlier tests' series out of a later test's look
(a reset makes new pods, and the analyzers only read the pods the snapshot holds)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agents.analyzers import metrics as analyzers
from agents.model import Finding
from agents.snapshot import Snapshot, take
from lab.client import LabClient
from lab.runner import LabServer
from tests.prometheus_lab import scraped_lab
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from tools.prometheus import PrometheusClient, PrometheusConfig

T = TypeVar("T")
NAMESPACE = "hotel"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, str, Path]]:
    with scraped_lab(tmp_path_factory.mktemp("metrics-analyzers"), NAMESPACE) as world:
        yield world.lab, world.prometheus_url, world.kubeconfig


@pytest.fixture(autouse=True)
def short_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    # Scrapes every second: a 5 s rate sees five of them; a 40 s window keeps tests short.
    monkeypatch.setenv("STRATUS_TELEMETRY_RATE", "5s")
    monkeypatch.setenv("STRATUS_TELEMETRY_WINDOW", "40s")


@pytest.fixture
def lab(world: tuple[LabServer, str, Path]) -> LabClient:
    control = LabClient(world[0].url)
    control.post("/lab/v1/reset")
    return control


@pytest.fixture
def kube(world: tuple[LabServer, str, Path]) -> Iterator[KubeClient]:
    client = KubeClient(kubeconfig=str(world[2]))
    yield client
    client.close()


@pytest.fixture
def prometheus(world: tuple[LabServer, str, Path]) -> PrometheusClient:
    return PrometheusClient(PrometheusConfig(url=world[1]))


def eventually(check: Callable[[], T | None], timeout: float = 60.0, every: float = 1.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found is not None:
            return found
        assert time.monotonic() < deadline, "timed out"
        time.sleep(every)


def metrics_findings(snapshot: Snapshot) -> list[Finding]:
    return [f for analyzer in analyzers.ANALYZERS for f in analyzer(snapshot)]


def look(kube: KubeClient, prometheus: PrometheusClient) -> tuple[Snapshot, list[Finding]]:
    snapshot = take(kube, NAMESPACE, prometheus=prometheus)
    assert snapshot.metrics is not None and not snapshot.metrics.failed, snapshot.metrics
    return snapshot, metrics_findings(snapshot)


def with_mechanism(
    kube: KubeClient, prometheus: PrometheusClient, mechanism: str, **kwargs: Any
) -> Callable[[], tuple[Snapshot, list[Finding]] | None]:
    def check() -> tuple[Snapshot, list[Finding]] | None:
        snapshot, findings = look(kube, prometheus)
        found = [f for f in findings if f.mechanism == mechanism]
        return (snapshot, found) if found else None

    return check


def traffic_flowing(kube: KubeClient, prometheus: PrometheusClient) -> Snapshot:
    """A look once every service's request rate has points in the window (the reset pods
    have been scraped for a while)."""

    def check() -> Snapshot | None:
        snapshot, _ = look(kube, prometheus)
        assert snapshot.metrics is not None
        pods = {p["metadata"]["name"] for p in snapshot.of("Pod")}
        scraped = {
            t.labels.get("pod", "")
            for t in snapshot.metrics.memory.trends
            if len(t.points) >= 8  # eight seconds of this pod's own scrapes
        }
        callers = [t for t in snapshot.metrics.caller_errors.trends if t.now is not None]
        return snapshot if pods and pods <= scraped and callers else None

    return eventually(check)


def cites_promql(finding: Finding, metric: str) -> None:
    quoted = [e for e in finding.evidence if e.source == "metrics"]
    assert quoted, finding.evidence
    assert all(metric in e.ref for e in quoted), [e.ref for e in quoted]


def patch_container(
    kube: KubeClient, deployment: str, change: Callable[[dict[str, Any]], None]
) -> None:
    obj = kube.get(ObjectRef("Deployment", deployment, NAMESPACE))
    container = next(
        c for c in obj["spec"]["template"]["spec"]["containers"] if c["name"] == deployment
    )
    change(container)
    kube.replace(obj)


def test_a_healthy_namespace_has_no_metrics_findings(
    lab: LabClient, kube: KubeClient, prometheus: PrometheusClient
) -> None:
    snapshot = traffic_flowing(kube, prometheus)
    assert snapshot.metrics is not None
    assert snapshot.metrics.error_rates.trends and snapshot.metrics.latency.trends
    for _ in range(3):  # several looks over time, not one lucky instant
        _, findings = look(kube, prometheus)
        assert findings == [], [(f.mechanism, str(f.resource), f.summary) for f in findings]
        time.sleep(2)


def test_a_callee_scaled_to_zero_is_named_by_its_callers_errors(
    lab: LabClient, kube: KubeClient, prometheus: PrometheusClient
) -> None:
    traffic_flowing(kube, prometheus)
    lab.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    _, found = eventually(with_mechanism(kube, prometheus, "callers-errors-spike"))
    assert [str(f.resource) for f in found] == ["Deployment/recommendation"], found
    spike = found[0]
    assert spike.facts["callee"] == "recommendation"
    assert spike.facts["callers"] == ["frontend"]
    assert [str(s) for s in spike.symptoms] == ["Deployment/frontend"]
    assert spike.confidence < 0.5  # corroboration, never a root alone
    cites_promql(spike, 'http_client_requests_total{namespace="hotel"')
    assert any("frontend → recommendation" in e.text for e in spike.evidence)


def test_a_broken_target_port_points_at_the_callee_not_the_callers_in_between(
    lab: LabClient, kube: KubeClient, prometheus: PrometheusClient
) -> None:
    """geo's Service targets a port nobody listens on: search's calls to geo fail (503), and
    search then answers the frontend 500 — the frontend sees search failing too. The finding
    is geo; search is a symptom, not a second callee."""
    traffic_flowing(kube, prometheus)
    lab.post("/lab/v1/scenarios/hotel-geo-target-port/inject")

    def both_failing() -> tuple[Snapshot, list[Finding]] | None:
        snapshot, findings = look(kube, prometheus)
        assert snapshot.metrics is not None
        failing = {
            t.labels.get("destination_service")
            for t in snapshot.metrics.caller_errors.trends
            if (t.now or 0) >= 0.5
        }
        spikes = [f for f in findings if f.mechanism == "callers-errors-spike"]
        # The frontend's errors reach its rate window a scrape after search's (it fails because
        # search does): wait until the finding has seen both, on a loaded machine too.
        complete = spikes and len(spikes[0].facts.get("affected", [])) >= 2
        return (snapshot, spikes) if {"geo", "search"} <= failing and complete else None

    _, found = eventually(both_failing)
    assert [str(f.resource) for f in found] == ["Deployment/geo"], [f.summary for f in found]
    assert found[0].facts["callers"] == ["search"]
    assert found[0].facts["affected"] == ["frontend", "search"]
    assert sorted(str(s) for s in found[0].symptoms) == ["Deployment/frontend", "Deployment/search"]
    assert (
        found[0].summary.startswith("search now fails")
        and "of its calls to geo" in found[0].summary
    )
    cites_promql(found[0], "http_client_requests_total")


def test_a_leaky_release_under_a_tight_limit_is_flagged_before_the_oom_kill(
    lab: LabClient, kube: KubeClient, prometheus: PrometheusClient
) -> None:
    """Release 1.4 leaks a MiB a second; under a 112Mi limit (80Mi footprint) the working set
    reaches 90% of the limit about 25 s after the start and the kernel kills it at 100%."""
    traffic_flowing(kube, prometheus)

    def leaky(container: dict[str, Any]) -> None:
        container["image"] = "stratus/hotel-geo:1.4"
        container["resources"]["limits"]["memory"] = "112Mi"

    patch_container(kube, "geo", leaky)

    def flagged() -> tuple[Snapshot, list[Finding]] | None:
        return with_mechanism(kube, prometheus, "memory-near-limit")()

    snapshot, found = eventually(flagged, timeout=60, every=0.5)
    assert [str(f.resource) for f in found] == ["Deployment/geo"], found
    creep = found[0]
    pod = next(
        p
        for p in snapshot.of("Pod")
        if p["metadata"]["name"].startswith("geo-")
        and p["metadata"].get("deletionTimestamp") is None
        and "1.4" in p["spec"]["containers"][0]["image"]
    )
    restarts = sum(s.get("restartCount", 0) for s in pod["status"].get("containerStatuses") or [])
    assert restarts == 0, "flagged only after the OOM kill"
    assert creep.facts["container"] == "geo" and creep.facts["peak_share"] >= 0.75
    cites_promql(creep, "container_memory_working_set_bytes")
    assert any(pod["metadata"]["name"] in e.text for e in creep.evidence)


def test_a_pod_that_just_started_near_its_limit_is_not_a_creep(
    lab: LabClient, kube: KubeClient, prometheus: PrometheusClient
) -> None:
    """A healthy release with a limit a bit above its footprint (80Mi of 100Mi, steady):
    its start-up ramp is not memory creeping to the limit."""
    traffic_flowing(kube, prometheus)

    def snug(container: dict[str, Any]) -> None:
        container["resources"]["limits"]["memory"] = "100Mi"

    patch_container(kube, "geo", snug)

    def looked_through_the_start_up() -> bool | None:
        snapshot, findings = look(kube, prometheus)
        assert not [f for f in findings if f.mechanism == "memory-near-limit"], [
            f.summary for f in findings
        ]
        assert snapshot.metrics is not None
        snug_pods = {
            p["metadata"]["name"]
            for p in snapshot.of("Pod")
            if p["spec"]["containers"][0]["resources"]["limits"]["memory"] == "100Mi"
        }
        ratios = [
            v
            for t in snapshot.metrics.memory.trends
            if t.labels.get("pod") in snug_pods
            for _, v in t.points
        ]
        # The new pod was seen low at its start, then at its footprint for ten seconds.
        return True if ratios and ratios[0] < 0.6 and sum(r >= 0.78 for r in ratios) >= 10 else None

    eventually(looked_through_the_start_up, timeout=45)


def test_latency_after_a_throttling_rollout_names_the_deployment(
    lab: LabClient, kube: KubeClient, prometheus: PrometheusClient
) -> None:
    """A CPU limit of 1m (geo needs 50m) throttles every request fiftyfold: geo's p95 goes
    from tens of milliseconds to about half a second after the new revision."""
    traffic_flowing(kube, prometheus)

    def throttled(container: dict[str, Any]) -> None:
        container["resources"]["limits"]["cpu"] = "1m"

    patch_container(kube, "geo", throttled)
    _, found = eventually(with_mechanism(kube, prometheus, "latency-after-rollout"))
    assert [str(f.resource) for f in found] == ["Deployment/geo"], [f.summary for f in found]
    slow = found[0]
    assert slow.facts["service"] == "geo" and slow.facts["rollback_to"] == 1
    cites_promql(slow, "http_request_duration_seconds_bucket")
    assert any(e.source == "revision" and "cpu" in e.text for e in slow.evidence), slow.evidence
