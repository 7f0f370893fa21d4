"""A namespace's deletion on an in-process cluster, between two settles: Terminating, its
objects gone but its pods draining, creates refused with the real server's 403; then gone."""

from __future__ import annotations

import copy

import pytest

from lab.cluster.errors import ApiError
from lab.cluster.resources import by_kind
from lab.cluster_sim import Cluster

POD = {
    "metadata": {"name": "slow", "namespace": "hotel"},
    "spec": {
        "terminationGracePeriodSeconds": 20,
        "containers": [{"name": "sh", "image": "busybox:1.36", "command": ["sleep", "3600"]}],
    },
}


def test_a_namespace_terminates_while_its_pods_drain_and_refuses_new_content() -> None:
    cluster = Cluster()
    cluster.install_app("hotel")
    cluster.api.create(by_kind("Pod"), "hotel", POD)
    cluster.settle()
    before = cluster.clock.now()
    answered = cluster.api.delete(by_kind("Namespace"), "", "hotel")
    assert answered["status"]["phase"] == "Terminating"
    assert answered["metadata"]["deletionTimestamp"]
    namespace = cluster.store.get("namespaces", "", "hotel")
    assert namespace is not None and namespace["status"]["phase"] == "Terminating"
    # everything but the pods goes at once; the pods are stamped, not removed
    assert cluster.store.list_objects("deployments.apps", "hotel") == []
    assert cluster.store.list_objects("configmaps", "hotel") == []
    pods = cluster.store.list_objects("pods", "hotel")
    assert pods and all(p["metadata"].get("deletionTimestamp") for p in pods)
    (remaining,) = namespace["status"]["conditions"]
    assert remaining["type"] == "NamespaceContentRemaining"
    assert remaining["message"] == (
        f"Some resources are remaining: pods. has {len(pods)} resource instances"
    )
    with pytest.raises(ApiError) as refused:
        cluster.api.create(by_kind("ConfigMap"), "hotel", {"metadata": {"name": "late"}})
    assert (refused.value.code, refused.value.reason) == (403, "Forbidden")
    assert refused.value.message == (
        'configmaps "late" is forbidden: unable to create new content in namespace hotel '
        "because it is being terminated"
    )
    assert refused.value.causes[0]["reason"] == "NamespaceTerminating"
    # a second DELETE changes nothing
    again = cluster.api.delete(by_kind("Namespace"), "", "hotel")
    assert again["metadata"]["resourceVersion"] == namespace["metadata"]["resourceVersion"]
    cluster.settle()
    assert cluster.store.get("namespaces", "", "hotel") is None
    assert cluster.store.list_objects("pods", "hotel") == []
    assert cluster.store.list_objects("events", "hotel") == []
    assert cluster.clock.now() - before >= 20.0  # the sleeping pod waited for its SIGKILL


def test_a_namespace_without_running_pods_goes_at_once() -> None:
    cluster = Cluster()
    cluster.api.create(by_kind("Namespace"), "", {"metadata": {"name": "empty"}})
    cluster.api.create(by_kind("ConfigMap"), "empty", {"metadata": {"name": "c"}})
    answered = cluster.api.delete(by_kind("Namespace"), "", "empty")
    assert answered["status"]["phase"] == "Terminating"  # the answer a real server gives
    assert cluster.store.get("namespaces", "", "empty") is None
    assert cluster.store.list_objects("configmaps", "empty") == []
    cluster.api.create(by_kind("Namespace"), "", {"metadata": {"name": "empty"}})  # reusable


def test_a_namespace_whose_pods_are_gone_goes_even_with_many_objects_left() -> None:
    # The pyclient e2e's teardown: a Deployment scaled away leaves events and a ReplicaSet;
    # deleting the first object drains the namespace, which takes the rest of the listing
    # with it, and the DELETE must still answer (it once failed with a 500, a KeyError).
    cluster = Cluster()
    cluster.api.create(by_kind("Namespace"), "", {"metadata": {"name": "dep"}})
    for n in range(3):
        cluster.api.create(by_kind("ConfigMap"), "dep", {"metadata": {"name": f"c{n}"}})
        cluster.api.create(
            by_kind("Event"),
            "dep",
            {
                "metadata": {"name": f"e{n}"},
                "involvedObject": {"kind": "ConfigMap", "name": f"c{n}", "namespace": "dep"},
                "reason": "Seen",
                "message": "seen",
            },
        )
    answered = cluster.api.delete(by_kind("Namespace"), "", "dep")
    assert answered["metadata"]["deletionTimestamp"]
    assert cluster.store.get("namespaces", "", "dep") is None
    assert cluster.store.list_objects("events", "dep") == []
    assert cluster.store.list_objects("configmaps", "dep") == []


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_the_system_namespaces_may_not_be_deleted(name: str) -> None:
    cluster = Cluster()
    with pytest.raises(ApiError) as refused:
        cluster.api.delete(by_kind("Namespace"), "", name)
    assert (refused.value.code, refused.value.message) == (
        403,
        f'namespaces "{name}" is forbidden: this namespace may not be deleted',
    )
    assert cluster.store.get("namespaces", "", name) is not None


def test_an_update_keeps_the_deletion_stamp_and_never_takes_a_clients() -> None:
    cluster = Cluster()
    cluster.install_app("hotel")
    cluster.api.create(by_kind("Pod"), "hotel", POD)
    cluster.settle()
    pod_rt, namespace_rt = by_kind("Pod"), by_kind("Namespace")
    forged = copy.deepcopy(cluster.api.get(pod_rt, "hotel", "slow"))  # as a client holds it
    forged["metadata"]["deletionTimestamp"] = "2020-01-01T00:00:00Z"
    forged["metadata"]["deletionGracePeriodSeconds"] = 1
    kept = cluster.api.update(pod_rt, "hotel", "slow", forged)
    assert "deletionTimestamp" not in kept["metadata"]  # only a DELETE stamps a pod
    assert "deletionGracePeriodSeconds" not in kept["metadata"]
    cluster.api.delete(namespace_rt, "", "hotel")
    namespace = copy.deepcopy(cluster.api.get(namespace_rt, "", "hotel"))
    changed = copy.deepcopy(namespace)
    changed["metadata"]["labels"] = {"x": "y"}
    del changed["metadata"]["deletionTimestamp"]
    changed["status"] = {"phase": "Active"}
    updated = cluster.api.update(namespace_rt, "", "hotel", changed)
    assert updated["metadata"]["labels"]["x"] == "y"
    assert updated["metadata"]["deletionTimestamp"] == namespace["metadata"]["deletionTimestamp"]
    assert updated["status"]["phase"] == "Terminating"  # status is the server's


def test_a_status_write_cannot_make_a_terminating_namespace_active() -> None:
    cluster = Cluster()
    cluster.install_app("hotel")
    cluster.api.create(by_kind("Pod"), "hotel", POD)
    cluster.settle()
    namespace_rt = by_kind("Namespace")
    cluster.api.delete(namespace_rt, "", "hotel")
    body = copy.deepcopy(cluster.api.get(namespace_rt, "", "hotel"))
    body["status"] = {"phase": "Active"}
    with pytest.raises(ApiError) as refused:
        cluster.api.update(namespace_rt, "", "hotel", body, subresource="status")
    assert refused.value.code == 422
    assert refused.value.message == (
        'Namespace "hotel" is invalid: status.Phase: Invalid value: "Active": '
        "may only be 'Terminating' if `deletionTimestamp` is not empty"
    )
    namespace = cluster.store.get("namespaces", "", "hotel")
    assert namespace is not None and namespace["status"]["phase"] == "Terminating"


def test_kube_node_lease_may_be_deleted_and_comes_back() -> None:
    cluster = Cluster()
    first = cluster.store.get("namespaces", "", "kube-node-lease")
    assert first is not None
    cluster.api.delete(by_kind("Namespace"), "", "kube-node-lease")
    cluster.settle()
    again = cluster.store.get("namespaces", "", "kube-node-lease")
    assert again is not None and again["metadata"]["uid"] != first["metadata"]["uid"]
