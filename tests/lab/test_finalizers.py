"""Finalizers on an in-process cluster: an object they hold stays Terminating until the
last one is removed, takes no new one meanwhile, and holds its namespace's deletion."""

from __future__ import annotations

import copy

import pytest

from lab.cluster.errors import ApiError
from lab.cluster.resources import by_kind
from lab.cluster_sim import Cluster

CM, POD, NS = by_kind("ConfigMap"), by_kind("Pod"), by_kind("Namespace")
HOLD = {"metadata": {"finalizers": ["example.com/hold"]}}


def _cluster() -> Cluster:
    cluster = Cluster()
    cluster.api.create(NS, "", {"metadata": {"name": "t"}})
    cluster.settle()
    return cluster


def _release(cluster: Cluster, rt: object, name: str) -> dict[str, object]:
    body = copy.deepcopy(cluster.api.get(rt, "t", name))  # type: ignore[arg-type]
    body["metadata"]["finalizers"] = []
    return cluster.api.update(rt, "t", name, body)  # type: ignore[arg-type]


def test_an_object_with_a_finalizer_stays_terminating_until_it_is_removed() -> None:
    cluster = _cluster()
    cluster.api.create(CM, "t", {"metadata": {"name": "c", **HOLD["metadata"]}})
    answered = cluster.api.delete(CM, "t", "c")
    assert answered["metadata"]["deletionTimestamp"]
    assert answered["metadata"]["deletionGracePeriodSeconds"] == 0
    cluster.settle()
    held = cluster.store.get("configmaps", "t", "c")
    assert held is not None and held["metadata"]["deletionTimestamp"]
    again = cluster.api.delete(CM, "t", "c")  # a second DELETE changes nothing
    assert again["metadata"]["resourceVersion"] == held["metadata"]["resourceVersion"]
    added = copy.deepcopy(held)
    added["metadata"]["finalizers"] = ["example.com/hold", "x/y"]
    with pytest.raises(ApiError) as refused:
        cluster.api.update(CM, "t", "c", added)
    assert refused.value.code == 422
    assert refused.value.message.endswith(
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is "
        'being deleted, found new finalizers []string{"x/y"}'
    )
    _release(cluster, CM, "c")
    assert cluster.store.get("configmaps", "t", "c") is None


def test_a_pod_with_a_finalizer_stops_but_stays_until_released() -> None:
    cluster = _cluster()
    spec = {"containers": [{"name": "web", "image": "nginx:1.27"}]}
    cluster.api.create(POD, "t", {"metadata": {"name": "p", **HOLD["metadata"]}, "spec": spec})
    cluster.settle()
    cluster.api.delete(POD, "t", "p")
    cluster.settle()
    pod = cluster.store.get("pods", "t", "p")
    assert pod is not None and pod["metadata"]["deletionGracePeriodSeconds"] == 0
    (status,) = pod["status"]["containerStatuses"]
    assert "terminated" in status["state"]
    _release(cluster, POD, "p")
    assert cluster.store.get("pods", "t", "p") is None


def test_a_finalizer_holds_its_namespace_until_it_is_removed() -> None:
    cluster = _cluster()
    cluster.api.create(CM, "t", {"metadata": {"name": "c", **HOLD["metadata"]}})
    cluster.api.create(CM, "t", {"metadata": {"name": "free"}})
    cluster.api.delete(NS, "", "t")
    cluster.settle()
    namespace = cluster.store.get("namespaces", "", "t")
    assert namespace is not None and namespace["status"]["phase"] == "Terminating"
    assert cluster.store.get("configmaps", "t", "free") is None
    (condition,) = namespace["status"]["conditions"]
    assert (condition["type"], condition["message"]) == (
        "NamespaceFinalizersRemaining",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 "
        "resource instances",
    )
    _release(cluster, CM, "c")
    assert cluster.store.get("namespaces", "", "t") is None
