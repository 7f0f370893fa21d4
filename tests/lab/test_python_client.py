"""The official kubernetes Python client against the lab: typed APIs, the dynamic client,
and the simulated controllers' behaviour as a client sees it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException

from tests.conftest import Lab


@pytest.fixture
def api(lab: Lab) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(lab.kubeconfig), client_configuration=configuration)
    with client.ApiClient(configuration) as api_client:
        yield api_client


def _lists(api: client.ApiClient) -> dict[str, Callable[[], Any]]:
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    return {
        "namespaces": core.list_namespace,
        "nodes": core.list_node,
        "pods": core.list_pod_for_all_namespaces,
        "services": core.list_service_for_all_namespaces,
        "endpoints": core.list_endpoints_for_all_namespaces,
        "events": core.list_event_for_all_namespaces,
        "configmaps": core.list_config_map_for_all_namespaces,
        "secrets": core.list_secret_for_all_namespaces,
        "serviceaccounts": core.list_service_account_for_all_namespaces,
        "pvcs": core.list_persistent_volume_claim_for_all_namespaces,
        "quotas": core.list_resource_quota_for_all_namespaces,
        "deployments": apps.list_deployment_for_all_namespaces,
        "replicasets": apps.list_replica_set_for_all_namespaces,
        "statefulsets": apps.list_stateful_set_for_all_namespaces,
        "daemonsets": apps.list_daemon_set_for_all_namespaces,
        "networkpolicies": client.NetworkingV1Api(api).list_network_policy_for_all_namespaces,
        "hpas": client.AutoscalingV2Api(api).list_horizontal_pod_autoscaler_for_all_namespaces,
        "storageclasses": client.StorageV1Api(api).list_storage_class,
        "endpointslices": client.DiscoveryV1Api(api).list_endpoint_slice_for_all_namespaces,
    }


def test_typed_apis_read_every_kind(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_resource_quota(
        "hotel", {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "100"}}}
    )
    client.NetworkingV1Api(api).create_namespaced_network_policy(
        "hotel", {"metadata": {"name": "n"}, "spec": {"podSelector": {}, "ingress": [{}]}}
    )
    for name, list_call in _lists(api).items():
        items = list_call().items
        assert items, f"no {name} in the lab"
    pod = core.list_namespaced_pod("hotel", label_selector="app=geo").items[0]
    assert pod.status.container_statuses[0].ready is True
    assert pod.metadata.owner_references[0].kind == "ReplicaSet"
    assert "listening on :8083" in core.read_namespaced_pod_log(pod.metadata.name, "hotel")
    scale = client.AppsV1Api(api).read_namespaced_deployment_scale("geo", "hotel")
    assert scale.spec.replicas == 1
    assert client.VersionApi(api).get_code().minor == "32"


def test_dynamic_client_discovers_and_writes(api: client.ApiClient) -> None:
    dyn = dynamic.DynamicClient(api)
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    geo = deployments.get(name="geo", namespace="hotel")
    assert geo.spec.replicas == 1
    deployments.patch(
        name="geo",
        namespace="hotel",
        body={"spec": {"replicas": 2}},
        content_type="application/merge-patch+json",
    )
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    assert len(pods.get(namespace="hotel", label_selector="app=geo").items) == 2


def test_client_errors_map_to_status(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod("nope", "hotel")
    assert missing.value.status == 404
    config_map = core.read_namespaced_config_map("hotel-config", "hotel")
    config_map.data["log-level"] = "debug"
    core.replace_namespaced_config_map("hotel-config", "hotel", config_map)
    config_map.data["log-level"] = "warn"
    with pytest.raises(ApiException) as stale:
        core.replace_namespaced_config_map("hotel-config", "hotel", config_map)
    assert stale.value.status == 409


def _pod(api: client.ApiClient, app: str, namespace: str = "hotel") -> client.V1Pod:
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=f"app={app}")
    return pods.items[0]


def _events(api: client.ApiClient, pod: client.V1Pod) -> dict[str, str]:
    found = client.CoreV1Api(api).list_namespaced_event(
        pod.metadata.namespace, field_selector=f"involvedObject.name={pod.metadata.name}"
    )
    by_reason: dict[str, list[str]] = {}
    for event in found.items:
        by_reason.setdefault(event.reason, []).append(event.message)
    return {reason: "\n".join(messages) for reason, messages in by_reason.items()}


def _patch_container(api: client.ApiClient, name: str, container: dict[str, Any]) -> None:
    client.AppsV1Api(api).patch_namespaced_deployment(
        name, "hotel", {"spec": {"template": {"spec": {"containers": [container]}}}}
    )


def test_kubelet_crash_loop_with_growing_back_off(api: client.ApiClient, lab: Lab) -> None:
    _patch_container(api, "rate", {"name": "rate", "image": "stratus/hotel-rate:1.2"})
    pod = _pod(api, "rate")
    status = pod.status.container_statuses[0]
    assert status.state.waiting.reason == "CrashLoopBackOff"
    assert status.last_state.terminated.exit_code == 2
    first = status.restart_count
    assert first == 1  # a write settles to the loop's first back-off, not two minutes on
    lab.control.post("/lab/v1/settle", {"horizon": 120})  # two minutes pass: 10 s, 20 s, 40 s …
    later = _pod(api, "rate").status.container_statuses[0].restart_count
    lab.control.post("/lab/v1/settle", {"horizon": 120})
    last = _pod(api, "rate").status.container_statuses[0].restart_count
    assert first < later and later - first > last - later  # back-off grows, restarts slow down
    assert "Back-off restarting failed container rate" in _events(api, pod)["BackOff"]


def test_kubelet_image_pull_failure(api: client.ApiClient) -> None:
    _patch_container(api, "profile", {"name": "profile", "image": "stratus/hotel-profile:9.9"})
    pod = _pod(api, "profile")
    assert pod.status.container_statuses[0].state.waiting.reason == "ImagePullBackOff"
    events = _events(api, pod)
    assert "not found" in events["Failed"] and "Error: ErrImagePull" in events["Failed"]
    assert events["BackOff"] == 'Back-off pulling image "stratus/hotel-profile:9.9"'


def test_kubelet_oom_missing_env_and_bad_config(api: client.ApiClient) -> None:
    _patch_container(api, "geo", {"name": "geo", "resources": {"limits": {"memory": "16Mi"}}})
    geo = _pod(api, "geo").status.container_statuses[0]
    assert geo.last_state.terminated.reason == "OOMKilled"
    assert geo.last_state.terminated.exit_code == 137
    _patch_container(
        api, "user", {"name": "user", "env": [{"name": "DB_PASSWORD", "$patch": "delete"}]}
    )
    log = client.CoreV1Api(api).read_namespaced_pod_log(
        _pod(api, "user").metadata.name, "hotel", previous=True
    )
    assert "required environment variable DB_PASSWORD is not set" in log
    client.CoreV1Api(api).patch_namespaced_config_map(
        "hotel-config", "hotel", {"data": {"log-level": "verbose"}}
    )
    client.AppsV1Api(api).patch_namespaced_deployment(
        "search", "hotel", {"spec": {"template": {"metadata": {"annotations": {"restart": "1"}}}}}
    )
    log = client.CoreV1Api(api).read_namespaced_pod_log(
        _pod(api, "search").metadata.name, "hotel", previous=True
    )
    assert 'invalid value "verbose" for LOG_LEVEL' in log


def test_kubelet_missing_config_reference(api: client.ApiClient) -> None:
    _patch_container(
        api,
        "frontend",
        {
            "name": "frontend",
            "env": [
                {"name": "EXTRA", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}}
            ],
        },
    )
    pod = [
        p
        for p in client.CoreV1Api(api)
        .list_namespaced_pod("hotel", label_selector="app=frontend")
        .items
        if p.status.container_statuses
    ]
    waiting = pod[0].status.container_statuses[0].state.waiting
    assert waiting.reason == "CreateContainerConfigError"
    assert waiting.message == 'configmap "absent" not found'


def test_probes_on_wrong_ports(api: client.ApiClient) -> None:
    _patch_container(api, "rate", {"name": "rate", "readinessProbe": {"tcpSocket": {"port": 9999}}})
    pod = _pod(api, "rate")
    assert pod.status.container_statuses[0].ready is False
    assert "Readiness probe failed" in _events(api, pod)["Unhealthy"]
    endpoints = client.CoreV1Api(api).read_namespaced_endpoints("rate", "hotel")
    assert endpoints.subsets[0].not_ready_addresses and not endpoints.subsets[0].addresses
    _patch_container(
        api,
        "frontend",
        {
            "name": "frontend",
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 9999}, "periodSeconds": 5},
        },
    )
    frontend = _pod(api, "frontend")
    assert frontend.status.container_statuses[0].restart_count >= 1
    assert "failed liveness probe" in _events(api, frontend)["Killing"]


def test_scheduler_reasons(api: client.ApiClient) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    apps.patch_namespaced_deployment(
        "geo",
        "hotel",
        {
            "spec": {
                "template": {"spec": {"nodeSelector": {"kubernetes.io/hostname": "extra-node"}}}
            }
        },
    )
    pending = [
        p
        for p in core.list_namespaced_pod("hotel", label_selector="app=geo").items
        if p.status.phase == "Pending"
    ]
    message = _events(api, pending[0])["FailedScheduling"]
    assert message.startswith(
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector"
    )
    apps.patch_namespaced_deployment(
        "search",
        "hotel",
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"name": "search", "resources": {"requests": {"cpu": "64"}}}]
                    }
                }
            }
        },
    )
    search = [
        p
        for p in core.list_namespaced_pod("hotel", label_selector="app=search").items
        if p.status.phase == "Pending"
    ]
    assert "3 Insufficient cpu" in _events(api, search[0])["FailedScheduling"]
    for node in ("node-1", "node-2", "node-3"):
        core.patch_node(
            node,
            {"spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}},
        )
    apps.patch_namespaced_deployment(
        "user", "hotel", {"spec": {"template": {"metadata": {"annotations": {"restart": "now"}}}}}
    )
    user = [
        p
        for p in core.list_namespaced_pod("hotel", label_selector="app=user").items
        if p.status.phase == "Pending"
    ]
    assert "untolerated taint {dedicated: db}" in _events(api, user[0])["FailedScheduling"]


def test_quota_admission_blocks_pod_creation(api: client.ApiClient) -> None:
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    core.create_namespaced_resource_quota(
        "hotel", {"metadata": {"name": "cap"}, "spec": {"hard": {"pods": "17"}}}
    )
    apps.patch_namespaced_deployment("geo", "hotel", {"spec": {"replicas": 2}})
    rs = apps.list_namespaced_replica_set("hotel", label_selector="app=geo").items[0]
    assert rs.status.conditions[0].reason == "FailedCreate"
    assert "exceeded quota: cap" in rs.status.conditions[0].message
    quota = core.read_namespaced_resource_quota("cap", "hotel")
    assert quota.status.used == {"pods": "17"}


def test_traffic_cascades_to_callers(api: client.ApiClient, lab: Lab) -> None:
    client.CoreV1Api(api).patch_namespaced_service(
        "geo", "hotel", {"spec": {"ports": [{"port": 8083, "targetPort": 9999}]}}
    )
    lab.settle()
    traffic = lab.control.get("/lab/v1/namespaces/hotel/traffic")
    assert traffic["geo"]["error_rate"] == 1.0
    assert traffic["search"]["error_rate"] == 1.0 and traffic["frontend"]["error_rate"] == 1.0
    assert traffic["profile"]["error_rate"] == 0.0
    search_log = client.CoreV1Api(api).read_namespaced_pod_log(
        _pod(api, "search").metadata.name, "hotel", tail_lines=20
    )
    assert "ERROR request to geo:8083 failed: dial tcp" in search_log


def test_statefulset_daemonset_and_hpa(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    postgres = apps.read_namespaced_stateful_set("postgres", "shop")
    assert postgres.status.ready_replicas == 1
    claim = client.CoreV1Api(api).read_namespaced_persistent_volume_claim("data-postgres-0", "shop")
    assert claim.status.phase == "Bound"
    apps.patch_namespaced_stateful_set_scale("postgres", "shop", {"spec": {"replicas": 3}})
    pods = client.CoreV1Api(api).list_namespaced_pod("shop", label_selector="app=postgres")
    assert sorted(p.metadata.name for p in pods.items) == ["postgres-0", "postgres-1", "postgres-2"]
    agent = apps.read_namespaced_daemon_set("log-agent", "shop")
    assert agent.status.desired_number_scheduled == 3 and agent.status.number_ready == 3
    autoscaling = client.AutoscalingV2Api(api)
    autoscaling.patch_namespaced_horizontal_pod_autoscaler(
        "frontend", "shop", {"spec": {"minReplicas": 3}}
    )
    assert apps.read_namespaced_deployment("frontend", "shop").spec.replicas == 3
    hpa = autoscaling.read_namespaced_horizontal_pod_autoscaler("frontend", "shop")
    assert hpa.status.desired_replicas == 3
