"""The lab's Prometheus metrics over HTTP: the exposition parses, names and labels are those
of the metrics contract, and the values follow the simulation (faults show up in them)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections import defaultdict
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from lab.metrics.routes import APPS_PATH, KUBE_STATE_PATH
from lab.runner import LAB_TOKEN
from tests.conftest import Lab

Series = dict[str, list[Sample]]


def _get(url: str, token: str | None = LAB_TOKEN) -> tuple[str, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
        return r.headers.get("Content-Type", ""), r.read().decode()


def scrape(url: str) -> Series:
    """Every sample of a scrape, by sample name (``_bucket``/``_total`` suffixes kept)."""
    _, text = _get(url)
    found: Series = defaultdict(list)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name].append(sample)
    return found


def nodes(lab: Lab) -> list[str]:
    _, text = _get(f"{lab.url}/api/v1/nodes")
    return [n["metadata"]["name"] for n in json.loads(text)["items"]]


def kube_state(lab: Lab) -> Series:
    return scrape(lab.url + KUBE_STATE_PATH)


def apps(lab: Lab) -> Series:
    return scrape(lab.url + APPS_PATH)


def cadvisor(lab: Lab) -> Series:
    merged: Series = defaultdict(list)
    for node in nodes(lab):
        for name, samples in scrape(
            f"{lab.url}/api/v1/nodes/{node}/proxy/metrics/cadvisor"
        ).items():
            merged[name].extend(samples)
    return merged


def value(series: Series, name: str, **labels: str) -> float:
    """The sum over the samples whose labels include ``labels``."""
    return sum(
        s.value
        for s in series.get(name, [])
        if all(s.labels.get(k) == v for k, v in labels.items())
    )


def _pods_of(series: Series, name: str, **labels: str) -> list[dict[str, str]]:
    return [
        s.labels
        for s in series.get(name, [])
        if all(s.labels.get(k) == v for k, v in labels.items())
    ]


def _strategic_patch(lab: Lab, path: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(
        lab.url + path,
        data=json.dumps(body).encode(),
        method="PATCH",
        headers={
            "Content-Type": "application/strategic-merge-patch+json",
            "Authorization": f"Bearer {LAB_TOKEN}",
        },
    )
    with urllib.request.urlopen(request, timeout=30):
        pass


def inject(lab: Lab, fault: str, **params: Any) -> None:
    lab.control.post(f"/lab/v1/faults/{fault}/inject", {"namespace": "hotel", "params": params})


def pass_time(lab: Lab, seconds: float) -> None:
    lab.control.post("/lab/v1/settle", {"horizon": seconds})


def test_exposition_is_the_text_format_with_the_contract_names_and_labels(lab: Lab) -> None:
    content_type, _ = _get(lab.url + KUBE_STATE_PATH)
    assert content_type.startswith("text/plain; version=0.0.4")
    state = kube_state(lab)
    expected = {
        "kube_pod_info": {"namespace", "pod", "uid", "node", "created_by_kind", "created_by_name"},
        "kube_pod_owner": {"namespace", "pod", "uid", "owner_kind", "owner_name"},
        "kube_pod_status_phase": {"namespace", "pod", "uid", "phase"},
        "kube_pod_status_ready": {"namespace", "pod", "uid", "condition"},
        "kube_pod_container_status_restarts_total": {"namespace", "pod", "uid", "container"},
        "kube_pod_container_resource_limits": {
            "namespace",
            "pod",
            "uid",
            "container",
            "node",
            "resource",
            "unit",
        },
        "kube_pod_container_resource_requests": {
            "namespace",
            "pod",
            "uid",
            "container",
            "node",
            "resource",
            "unit",
        },
        "kube_deployment_spec_replicas": {"namespace", "deployment"},
        "kube_deployment_status_replicas_available": {"namespace", "deployment"},
        "kube_deployment_status_replicas_unavailable": {"namespace", "deployment"},
        "kube_deployment_status_observed_generation": {"namespace", "deployment"},
        "kube_deployment_metadata_generation": {"namespace", "deployment"},
        "kube_replicaset_owner": {"namespace", "replicaset", "owner_kind", "owner_name"},
    }
    for name, labels in expected.items():
        assert state[name], name
        assert all(set(s.labels) == labels for s in state[name]), name
    # One pod, one phase at 1; the deployment's Deployment owns its ReplicaSet.
    geo = next(s.labels for s in state["kube_pod_info"] if s.labels["pod"].startswith("geo-"))
    assert geo["created_by_kind"] == "ReplicaSet" and geo["node"]
    assert value(state, "kube_pod_status_phase", pod=geo["pod"]) == 1
    assert value(state, "kube_pod_status_phase", pod=geo["pod"], phase="Running") == 1
    assert value(state, "kube_deployment_spec_replicas", namespace="hotel", deployment="geo") == 1
    limits = _pods_of(state, "kube_pod_container_resource_limits", pod=geo["pod"])
    assert {(x["resource"], x["unit"]) for x in limits} == {("memory", "byte")}
    assert value(state, "kube_pod_container_resource_limits", pod=geo["pod"]) == 256 * 2**20

    usage = cadvisor(lab)
    for name in (
        "container_memory_working_set_bytes",
        "container_spec_memory_limit_bytes",
        "container_cpu_usage_seconds_total",
    ):
        assert usage[name], name
        extra = {"cpu"} if name == "container_cpu_usage_seconds_total" else set()
        assert all(set(s.labels) == {"namespace", "pod", "container", *extra} for s in usage[name])
    assert all(s.labels["cpu"] == "total" for s in usage["container_cpu_usage_seconds_total"])

    requests = apps(lab)
    assert all(
        set(s.labels) == {"namespace", "service", "pod", "code"}
        for s in requests["http_requests_total"]
    )
    assert all(
        set(s.labels) == {"namespace", "service", "pod", "le"}
        for s in requests["http_request_duration_seconds_bucket"]
    )
    assert requests["http_request_duration_seconds_sum"]
    assert requests["http_request_duration_seconds_count"]
    assert all(
        set(s.labels) == {"namespace", "service", "pod", "destination_service", "code"}
        for s in requests["http_client_requests_total"]
    )
    # A healthy app answers everything with 200, through its own Service.
    assert value(requests, "http_requests_total", namespace="hotel", service="geo", code="200") > 0
    assert {
        s.labels["code"]
        for s in requests["http_requests_total"]
        if s.labels["namespace"] == "hotel"
    } == {"200"}
    assert (
        value(
            requests, "http_client_requests_total", service="frontend", destination_service="search"
        )
        > 0
    )


def test_a_node_that_does_not_exist_is_a_404(lab: Lab) -> None:
    with pytest.raises(urllib.error.HTTPError) as raised:
        _get(f"{lab.url}/api/v1/nodes/nowhere/proxy/metrics/cadvisor")
    raised.value.close()
    assert raised.value.code == 404


def test_a_crash_loop_raises_restarts_and_flips_ready(lab: Lab) -> None:
    before = kube_state(lab)
    assert (
        value(
            before, "kube_pod_container_status_restarts_total", namespace="hotel", container="geo"
        )
        == 0
    )
    inject(lab, "image-tag", deployment="geo", container="geo", image="stratus/hotel-geo:1.2")
    pass_time(lab, 120)
    after = kube_state(lab)
    broken = [
        s.labels["pod"]
        for s in after["kube_pod_container_status_waiting_reason"]
        if s.labels["container"] == "geo" and s.labels["reason"] == "CrashLoopBackOff"
    ]
    assert broken, "the new pod waits in CrashLoopBackOff"
    pod = broken[0]
    assert value(after, "kube_pod_container_status_restarts_total", pod=pod) >= 2
    assert value(after, "kube_pod_status_ready", pod=pod, condition="false") == 1
    assert value(after, "kube_pod_status_ready", pod=pod, condition="true") == 0
    assert (
        value(after, "kube_pod_container_status_last_terminated_reason", pod=pod, reason="Error")
        == 1
    )
    assert value(after, "kube_deployment_status_replicas_unavailable", deployment="geo") == 1


def test_deleting_a_service_raises_callers_503s_and_stops_its_server_side_requests(
    lab: Lab,
) -> None:
    before = apps(lab)
    served = value(before, "http_requests_total", namespace="hotel", service="geo")
    assert served > 0
    assert value(before, "http_client_requests_total", destination_service="geo", code="503") == 0
    inject(lab, "delete-service", service="geo")
    lab.settle()
    stopped = apps(lab)
    lab.settle()
    later = apps(lab)
    # The callers (search) see 503s, more with every window; geo answers nothing more.
    failing = value(
        stopped,
        "http_client_requests_total",
        service="search",
        destination_service="geo",
        code="503",
    )
    assert (
        0
        < failing
        < value(
            later,
            "http_client_requests_total",
            service="search",
            destination_service="geo",
            code="503",
        )
    )
    assert value(later, "http_requests_total", namespace="hotel", service="geo") == value(
        stopped, "http_requests_total", namespace="hotel", service="geo"
    )
    # search itself answers its own callers with 500s (its dependency fails).
    assert value(later, "http_requests_total", namespace="hotel", service="search", code="500") > 0


def test_a_leak_climbs_to_the_limit_and_is_oomkilled_there(lab: Lab) -> None:
    inject(lab, "image-tag", deployment="geo", container="geo", image="stratus/hotel-geo:1.4")
    limit = 256 * 2**20
    seen: list[float] = []
    for _ in range(4):
        pass_time(lab, 30)
        seen.append(value(cadvisor(lab), "container_memory_working_set_bytes", container="geo"))
    assert seen == sorted(seen) and seen[0] < seen[-1] < limit
    assert value(cadvisor(lab), "container_spec_memory_limit_bytes", container="geo") == limit
    pass_time(lab, 120)  # 60 MiB a minute from 80 MiB: the limit is reached within 3 minutes
    state = kube_state(lab)
    assert (
        value(
            state,
            "kube_pod_container_status_last_terminated_reason",
            container="geo",
            reason="OOMKilled",
        )
        == 1
    )
    assert (
        value(state, "kube_pod_container_status_restarts_total", namespace="hotel", container="geo")
        >= 1
    )


def _mean_latency(before: Series, after: Series, service: str) -> float:
    hotel = {"namespace": "hotel", "service": service}
    seconds = value(after, "http_request_duration_seconds_sum", **hotel) - value(
        before, "http_request_duration_seconds_sum", **hotel
    )
    count = value(after, "http_request_duration_seconds_count", **hotel) - value(
        before, "http_request_duration_seconds_count", **hotel
    )
    return seconds / count


def _share_under(series: Series, service: str, bound: str) -> float:
    hotel = {"namespace": "hotel", "service": service}
    under = value(series, "http_request_duration_seconds_bucket", le=bound, **hotel)
    return under / value(series, "http_request_duration_seconds_bucket", le="+Inf", **hotel)


def test_a_cpu_limit_and_a_dropped_dependency_slow_the_callers_down(lab: Lab) -> None:
    first = apps(lab)
    lab.settle()
    healthy = apps(lab)
    geo_before = _mean_latency(first, healthy, "geo")
    search_before = _mean_latency(first, healthy, "search")
    kubectl_patch = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "geo", "resources": {"limits": {"cpu": "10m"}}}]}
            }
        }
    }
    _strategic_patch(lab, "/apis/apps/v1/namespaces/hotel/deployments/geo", kubectl_patch)
    lab.settle()
    throttled_start = apps(lab)
    lab.settle()
    throttled = apps(lab)
    # geo's own work takes 5x as long (50m of CPU wanted, 10m allowed); search waits for it.
    slower = _mean_latency(throttled_start, throttled, "geo") - geo_before
    assert slower > geo_before
    assert _mean_latency(throttled_start, throttled, "search") == pytest.approx(
        search_before + slower
    )
    # A NetworkPolicy drops search's packets: its callers wait out their timeout (504).
    inject(lab, "deny-ingress", app="search")
    dropped_start = apps(lab)
    lab.settle()
    dropped = apps(lab)
    assert _mean_latency(dropped_start, dropped, "frontend") > 1.0
    assert _share_under(healthy, "frontend", "0.5") == 1.0
    assert _share_under(dropped, "frontend", "0.5") < _share_under(dropped_start, "frontend", "0.5")
    assert (
        value(
            dropped,
            "http_client_requests_total",
            service="frontend",
            destination_service="search",
            code="504",
        )
        > 0
    )
    assert value(
        dropped, "http_requests_total", namespace="hotel", service="frontend", code="500"
    ) > value(dropped_start, "http_requests_total", service="frontend", code="500")
