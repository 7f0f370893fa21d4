"""Graceful pod deletion over the API, with the official Python client against the instant
lab: the DELETE answers the stamped pod, the drain takes the preStop hook's time on the
lab's clock (or the whole grace for a shell that ignores SIGTERM), the kubelet says
``Stopping container``, and the ReplicaSet's replacement does not wait for the old pod."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from lab.cluster.clock import Clock
from tests.conftest import Lab

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: drain, namespace: hotel}
spec:
  replicas: 1
  selector: {matchLabels: {app: drain}}
  template:
    metadata: {labels: {app: drain}}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: web
        image: nginx:1.27
        lifecycle: {preStop: {exec: {command: [sh, -c, "sleep 10"]}}}
      - name: shell
        image: busybox:1.36
        command: [sleep, "3600"]
"""


@pytest.fixture
def api(lab: Lab) -> Iterator[client.CoreV1Api]:
    with config.new_client_from_config(str(lab.kubeconfig)) as api_client:
        apps = client.AppsV1Api(api_client)
        apps.create_namespaced_deployment("hotel", yaml.safe_load(DEPLOYMENT))
        lab.settle()
        yield client.CoreV1Api(api_client)


def _pods(api: client.CoreV1Api) -> list[client.V1Pod]:
    return list(api.list_namespaced_pod("hotel", label_selector="app=drain").items)


def _now(lab: Lab) -> float:
    return Clock.parse(lab.control.get("/lab/v1/info")["now"])


def _since(list_call: Any, resource_version: str, *args: str, **selectors: str) -> list[Any]:
    """The objects a watch from ``resource_version`` replays: what changed meanwhile, in
    order (the instant lab settles a drain at once, so its middle is only seen here)."""
    stream = watch.Watch().stream(
        list_call, *args, resource_version=resource_version, timeout_seconds=1, **selectors
    )
    return [(event["type"], event["object"]) for event in stream]


def test_a_delete_stamps_the_pod_and_the_drain_takes_the_grace_period(
    api: client.CoreV1Api, lab: Lab
) -> None:
    (pod,) = _pods(api)
    name = pod.metadata.name
    before = _now(lab)
    answered = api.delete_namespaced_pod(name, "hotel")
    assert answered.metadata.deletion_grace_period_seconds == 30
    assert answered.metadata.deletion_timestamp is not None
    lab.settle()
    with pytest.raises(ApiException) as gone:
        api.read_namespaced_pod(name, "hotel")
    assert gone.value.status == 404
    # nginx drains in its 10 s preStop; `sleep` as PID 1 ignores SIGTERM and is killed when
    # the 30 s are over, so the pod goes after the whole grace period.
    assert 29.0 <= _now(lab) - before < 60.0
    stops = [
        e.message
        for e in api.list_namespaced_event("hotel").items
        if e.involved_object.name == name and e.reason == "Killing"
    ]
    assert sorted(stops) == ["Stopping container shell", "Stopping container web"]
    (replacement,) = _pods(api)
    assert replacement.metadata.name != name


def test_a_forced_delete_goes_at_once_and_a_shorter_second_delete_wins(
    api: client.CoreV1Api, lab: Lab
) -> None:
    (pod,) = _pods(api)
    before = _now(lab)
    api.delete_namespaced_pod(pod.metadata.name, "hotel", grace_period_seconds=0)
    lab.settle()
    assert _now(lab) - before < 5.0
    (second,) = _pods(api)
    before = _now(lab)
    api.delete_namespaced_pod(second.metadata.name, "hotel", grace_period_seconds=3)
    lab.settle()
    assert 2.5 <= _now(lab) - before < 10.0


def test_a_terminating_pod_leaves_the_endpoints_and_is_terminating_in_its_slice(
    api: client.CoreV1Api, lab: Lab
) -> None:
    api.create_namespaced_service(
        "hotel",
        {
            "metadata": {"name": "drain"},
            "spec": {"selector": {"app": "drain"}, "ports": [{"port": 80}]},
        },
    )
    lab.settle()
    (pod,) = _pods(api)
    name = pod.metadata.name
    discovery = client.DiscoveryV1Api(api.api_client)
    selector = "kubernetes.io/service-name=drain"
    before = discovery.list_namespaced_endpoint_slice("hotel", label_selector=selector)
    (serving,) = before.items[0].endpoints
    assert (serving.conditions.ready, serving.conditions.terminating) == (True, False)
    since = before.metadata.resource_version
    endpoints_since = api.list_namespaced_endpoints("hotel").metadata.resource_version
    api.delete_namespaced_pod(name, "hotel")
    lab.settle()  # the drain, to the pod's deletion: what happened meanwhile is in the watch
    conditions = [
        (e.conditions.ready, e.conditions.serving, e.conditions.terminating)
        for _, changed in _since(
            discovery.list_namespaced_endpoint_slice, since, "hotel", label_selector=selector
        )
        for e in changed.endpoints or []
        if e.target_ref.name == name
    ]
    # Not ready, still serving while it drains (serving follows readiness, and nginx has no
    # probe), terminating; no longer serving once nginx has exited; then gone.
    assert conditions[0] == (False, True, True)
    assert conditions[-1] == (False, False, True)
    assert all(terminating for _, _, terminating in conditions)
    (endpoint_slice,) = discovery.list_namespaced_endpoint_slice(
        "hotel", label_selector=selector
    ).items
    assert name not in [e.target_ref.name for e in endpoint_slice.endpoints or []]
    listed = [
        [
            address.target_ref.name
            for subset in changed.subsets or []
            for address in (subset.addresses or []) + (subset.not_ready_addresses or [])
        ]
        for _, changed in _since(
            api.list_namespaced_endpoints,
            endpoints_since,
            "hotel",
            field_selector="metadata.name=drain",
        )
    ]
    # The Endpoints drop it at the stamp, and it never comes back as not ready.
    assert listed and all(name not in names for names in listed)


SIDECAR_POD = """
apiVersion: v1
kind: Pod
metadata: {name: with-sidecar, namespace: hotel}
spec:
  terminationGracePeriodSeconds: 20
  initContainers:
  - {name: proxy, image: busybox:1.36, restartPolicy: Always, command: [sleep, "3600"]}
  - {name: logs, image: busybox:1.36, restartPolicy: Always, command: [sleep, "3600"]}
  containers:
  - name: web
    image: nginx:1.27
    lifecycle: {preStop: {sleep: {seconds: 5}}}
"""


def test_native_sidecars_stop_after_the_application_in_reverse_order(
    api: client.CoreV1Api, lab: Lab
) -> None:
    api.create_namespaced_pod("hotel", yaml.safe_load(SIDECAR_POD))
    lab.settle()
    assert api.read_namespaced_pod("with-sidecar", "hotel").status.phase == "Running"
    since = api.list_namespaced_pod("hotel").metadata.resource_version
    before = _now(lab)
    api.delete_namespaced_pod("with-sidecar", "hotel")
    lab.settle()
    kills = sorted(
        (e.last_timestamp.timestamp(), e.message)
        for e in api.list_namespaced_event("hotel").items
        if e.involved_object.name == "with-sidecar" and e.reason == "Killing"
    )
    # Every container hears Killing at once (and runs its hook); the sidecars get SIGTERM
    # only after the application has stopped, the last one first.
    assert sorted(message for _, message in kills) == [
        "Stopping container logs",
        "Stopping container proxy",
        "Stopping container web",
    ]
    assert kills[-1][0] - kills[0][0] < 1.0
    changes = _since(
        api.list_namespaced_pod, since, "hotel", field_selector="metadata.name=with-sidecar"
    )
    last = changes[-1][1].status
    ended = {
        s.name: s.state.terminated
        for s in (last.container_statuses or []) + (last.init_container_statuses or [])
    }
    assert ended["web"].exit_code == 0
    # `sleep` ignores SIGTERM: the first sidecar told to stop holds the drain to the grace's
    # end, and the one after it still gets the kubelet's minimum of 2 s
    assert (ended["logs"].exit_code, ended["proxy"].exit_code) == (137, 137)
    assert ended["web"].finished_at < ended["logs"].finished_at < ended["proxy"].finished_at
    web_ended = ended["web"].finished_at.timestamp()
    assert ended["logs"].finished_at.timestamp() - web_ended >= 14.0
    gap = ended["proxy"].finished_at.timestamp() - ended["logs"].finished_at.timestamp()
    assert gap >= 2.0
    assert 21.0 <= _now(lab) - before < 40.0


def test_a_namespace_goes_terminating_and_its_pods_drain_before_it_goes(
    api: client.CoreV1Api, lab: Lab
) -> None:
    (pod,) = _pods(api)
    name = pod.metadata.name
    since = api.list_namespaced_pod("hotel").metadata.resource_version
    namespaces_since = api.list_namespace().metadata.resource_version
    before = _now(lab)
    api.delete_namespace("hotel")
    lab.settle()
    with pytest.raises(ApiException) as gone:
        api.read_namespace("hotel")
    assert gone.value.status == 404
    # The drain's pod took its grace period (a `sleep` PID 1 waits for SIGKILL at 30 s).
    assert 29.0 <= _now(lab) - before < 60.0
    stamped = [
        changed
        for _, changed in _since(api.list_namespaced_pod, since, "hotel")
        if changed.metadata.name == name
    ]
    assert stamped and stamped[0].metadata.deletion_grace_period_seconds == 30
    seen = [
        (kind, changed.status.phase, changed.status.conditions or [])
        for kind, changed in _since(
            api.list_namespace, namespaces_since, field_selector="metadata.name=hotel"
        )
    ]
    assert (seen[0][0], seen[0][1]) == ("MODIFIED", "Terminating")
    assert seen[-1][0] == "DELETED"
    remaining = [c.message for _, _, conditions in seen for c in conditions]
    assert "Some resources are remaining: pods. has 1 resource instances" in remaining


def test_a_dry_run_in_the_delete_options_body_deletes_nothing(
    api: client.CoreV1Api, lab: Lab
) -> None:
    # Where kubectl's --dry-run=server puts it: in the DeleteOptions body, not the query.
    (pod,) = _pods(api)
    dry = client.V1DeleteOptions(dry_run=["All"])
    answered = api.delete_namespaced_pod(pod.metadata.name, "hotel", body=dry)
    assert answered.metadata.deletion_timestamp is not None  # what it would have done
    api.create_namespaced_config_map("hotel", {"metadata": {"name": "kept"}})
    api.delete_namespaced_config_map("kept", "hotel", body=dry)
    api.delete_namespace("hotel", body=dry)
    api.delete_collection_namespaced_pod("hotel", body=dry)
    lab.settle()
    assert api.read_namespace("hotel").status.phase == "Active"
    assert api.read_namespaced_config_map("kept", "hotel").metadata.name == "kept"
    (still,) = _pods(api)
    assert still.metadata.name == pod.metadata.name
    assert still.metadata.deletion_timestamp is None
    with pytest.raises(ApiException) as bad:
        api.delete_namespaced_config_map(
            "kept", "hotel", body=client.V1DeleteOptions(dry_run=["Some"])
        )
    assert bad.value.status == 400


def test_a_dry_run_eviction_evicts_nothing(api: client.CoreV1Api, lab: Lab) -> None:
    (pod,) = _pods(api)
    name = pod.metadata.name
    eviction = client.V1Eviction(
        metadata=client.V1ObjectMeta(name=name, namespace="hotel"),
        delete_options=client.V1DeleteOptions(dry_run=["All"]),
    )
    api.create_namespaced_pod_eviction(name, "hotel", eviction)
    lab.settle()
    (still,) = _pods(api)
    assert (still.metadata.name, still.metadata.deletion_timestamp) == (name, None)
    eviction.delete_options = None
    api.create_namespaced_pod_eviction(name, "hotel", eviction)
    lab.settle()
    (replacement,) = _pods(api)  # evicted for real this time, and replaced
    assert replacement.metadata.name != name
