"""Pod readiness gates on an in-process cluster: a gate holds the pod's Ready (and its place
in the Endpoints) until a controller writes the gate's condition "True" to the status, the
kubelet keeps that condition through its own status writes, and `kubectl get -o wide` counts
the gates that are true."""

from __future__ import annotations

import json
from typing import Any

from lab.cluster.resources import by_kind
from lab.cluster.tables import table
from lab.cluster_sim import Cluster

POD, NS, SVC = by_kind("Pod"), by_kind("Namespace"), by_kind("Service")
GATE = "example.com/lb-registered"


def _cluster(gates: list[str]) -> Cluster:
    cluster = Cluster()
    cluster.api.create(NS, "", {"metadata": {"name": "t"}})
    cluster.settle()  # the namespace's default ServiceAccount
    spec = {
        "readinessGates": [{"conditionType": g} for g in gates],
        "containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}],
    }
    cluster.api.create(
        POD, "t", {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": spec}
    )
    cluster.api.create(
        SVC,
        "t",
        {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
    )
    cluster.settle()
    return cluster


def _conditions(cluster: Cluster) -> dict[str, dict[str, Any]]:
    pod = cluster.store.get("pods", "t", "web")
    assert pod is not None
    return {c["type"]: c for c in pod["status"]["conditions"]}


def _set(cluster: Cluster, kind: str, status: str) -> None:
    patch = {"status": {"conditions": [{"type": kind, "status": status}]}}
    cluster.api.patch(
        POD,
        "t",
        "web",
        json.dumps(patch).encode(),
        "application/strategic-merge-patch+json",
        subresource="status",
    )
    cluster.settle()


def _gates_column(cluster: Cluster) -> str:
    pod = cluster.store.get("pods", "t", "web")
    assert pod is not None
    printed = table(POD, [pod], 0.0, resource_version="1")
    names = [c["name"] for c in printed["columnDefinitions"]]
    return str(printed["rows"][0]["cells"][names.index("Readiness Gates")])


def _endpoint_ips(cluster: Cluster) -> tuple[list[str], list[str]]:
    endpoints = cluster.store.get("endpoints", "t", "web") or {}
    subsets = endpoints.get("subsets") or []
    ready = [a["ip"] for s in subsets for a in s.get("addresses") or []]
    unready = [a["ip"] for s in subsets for a in s.get("notReadyAddresses") or []]
    return ready, unready


def test_a_gate_without_its_condition_holds_ready_and_the_endpoints() -> None:
    cluster = _cluster([GATE])
    conditions = _conditions(cluster)
    assert conditions["ContainersReady"]["status"] == "True"
    assert conditions["Ready"]["status"] == "False"
    assert conditions["Ready"]["reason"] == "ReadinessGatesNotReady"
    assert conditions["Ready"]["message"] == (
        f'corresponding condition of pod readiness gate "{GATE}" does not exist.'
    )
    assert _gates_column(cluster) == "0/1"
    ready, unready = _endpoint_ips(cluster)
    assert ready == [] and len(unready) == 1


def test_the_gates_condition_true_makes_the_pod_ready_and_the_kubelet_keeps_it() -> None:
    cluster = _cluster([GATE])
    _set(cluster, GATE, "True")
    conditions = _conditions(cluster)
    assert conditions[GATE]["status"] == "True"
    assert conditions["Ready"]["status"] == "True"
    assert _gates_column(cluster) == "1/1"
    ready, unready = _endpoint_ips(cluster)
    assert len(ready) == 1 and unready == []
    # A later status write of the kubelet's own (a restart's) keeps the controller's condition.
    cluster.api.create(
        POD,
        "t",
        {
            "metadata": {"name": "other"},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
        },
    )
    cluster.settle(horizon=60)
    assert _conditions(cluster)[GATE]["status"] == "True"


def test_a_false_gate_says_so_and_every_gate_must_be_true() -> None:
    cluster = _cluster([GATE, "example.com/b"])
    _set(cluster, GATE, "False")
    message = _conditions(cluster)["Ready"]["message"]
    assert message == (
        f'the status of pod readiness gate "{GATE}" is not "True", but False, '
        'corresponding condition of pod readiness gate "example.com/b" does not exist.'
    )
    _set(cluster, GATE, "True")
    assert _conditions(cluster)["Ready"]["status"] == "False"
    assert _gates_column(cluster) == "1/2"
    _set(cluster, "example.com/b", "True")
    assert _conditions(cluster)["Ready"]["status"] == "True"
    assert _gates_column(cluster) == "2/2"


def test_a_pod_without_gates_shows_none() -> None:
    cluster = _cluster([])
    assert _conditions(cluster)["Ready"]["status"] == "True"
    assert _gates_column(cluster) == "<none>"
