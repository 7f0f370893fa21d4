"""A pod's graceful deletion on an in-process cluster, stepped by hand (a reconcile without
the clock moving) where an HTTP client would only see the settled end: a second, shorter
DELETE during the drain, a negative grace, a dry run's answer and a failing preStop hook."""

from __future__ import annotations

from typing import Any

from lab.cluster.resources import by_kind
from lab.cluster_sim import Cluster

POD_RT = by_kind("Pod")


def _cluster(**spec: Any) -> Cluster:
    cluster = Cluster()
    cluster.api.create(by_kind("Namespace"), "", {"metadata": {"name": "t"}})
    cluster.settle()  # its default service account, which admission looks up
    pod = {
        "metadata": {"name": "p", "namespace": "t"},
        "spec": {
            "terminationGracePeriodSeconds": 60,
            "containers": [{"name": "sh", "image": "busybox:1.36", "command": ["sleep", "1h"]}],
            **spec,
        },
    }
    cluster.api.create(POD_RT, "t", pod)
    cluster.settle()
    return cluster


def test_a_shorter_second_delete_during_the_drain_moves_the_kill_forward() -> None:
    cluster = _cluster()
    before = cluster.clock.now()
    cluster.api.delete(POD_RT, "t", "p")
    cluster.reconcile()  # the kubelet starts the 60 s drain; the clock has not moved
    cluster.api.delete(POD_RT, "t", "p", options={"gracePeriodSeconds": 3})
    cluster.settle()
    assert cluster.store.get("pods", "t", "p") is None
    assert 3.0 <= cluster.clock.now() - before < 10.0  # not the first request's 60 s


def test_a_negative_grace_is_one_second_not_a_force_delete() -> None:
    cluster = _cluster()
    answered = cluster.api.delete(POD_RT, "t", "p", options={"gracePeriodSeconds": -5})
    assert answered["metadata"]["deletionGracePeriodSeconds"] == 1
    assert cluster.store.get("pods", "t", "p") is not None


def test_a_dry_run_delete_answers_the_stamp_and_changes_nothing() -> None:
    cluster = _cluster()
    version = cluster.store.resource_version
    answered = cluster.api.delete(POD_RT, "t", "p", dry_run=True)
    assert answered["metadata"]["deletionGracePeriodSeconds"] == 60
    assert answered["metadata"]["deletionTimestamp"]
    stored = cluster.store.get("pods", "t", "p")
    assert stored is not None and "deletionTimestamp" not in stored["metadata"]
    assert cluster.store.resource_version == version
    cluster.api.delete(by_kind("Namespace"), "", "t", dry_run=True)
    assert cluster.store.get("namespaces", "", "t") is not None


def test_a_failing_pre_stop_hook_is_named_without_its_output() -> None:
    hook = {"preStop": {"exec": {"command": ["sh", "-c", "echo s3cret; exit 3"]}}}
    cluster = _cluster(
        containers=[
            {"name": "sh", "image": "busybox:1.36", "command": ["sleep", "1h"], "lifecycle": hook}
        ]
    )
    cluster.api.delete(POD_RT, "t", "p")
    cluster.settle()
    failed = [
        e for e in cluster.store.list_objects("events", "t") if e["reason"] == "FailedPreStopHook"
    ]
    assert [e["message"] for e in failed] == ["PreStopHook failed"]
    assert all("s3cret" not in e["message"] for e in cluster.store.list_objects("events", "t"))
