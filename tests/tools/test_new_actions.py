"""The catalog actions for Services, quotas, claims, taints and drifted configuration, over the
lab: each is planned (pure), dry-run by the server, proposed and executed through the proposal
service and undone exactly — and a Secret's value never shows in a diff or an intent."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.conftest import Lab
from tests.writes import Writes
from tools import actions, errors, params
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef, normalized, secret_digest
from undo.stack import UndoStack


def _apply_and_undo(
    kube: KubeClient, executor: Executor, stack: UndoStack, action: actions.Action
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, str]:
    """Preview (plan + server dry-run), execute, undo; (before, written, diff)."""
    before = kube.find(action.ref())
    _, preview = executor.preview(action)
    assert kube.find(action.ref()) == before, "a preview wrote something"
    writes = Writes(executor)
    outcome = writes.write(action, actor="t")
    assert outcome.state == "executed" and outcome.undo_id is not None
    assert outcome.plan.diff == preview.diff
    written = kube.find(action.ref())
    assert writes.undo(outcome.undo_id, actor="t").state == "executed"
    after_undo = kube.find(action.ref())
    if before is None:
        assert after_undo is None
    else:
        assert after_undo is not None and normalized(after_undo) == normalized(before)
    return before, written, outcome.plan.diff


def test_create_service_exposes_a_workload_and_undo_deletes_it(
    lab: Lab, kube: KubeClient, executor: Executor, stack: UndoStack
) -> None:
    action = actions.build(
        "create-service",
        {
            "target": "search-copy",
            "namespace": "hotel",
            "selector": {"app": "search"},
            "ports": [{"name": "main", "port": 80, "target_port": 8082}],
        },
    )
    before, written, diff = _apply_and_undo(kube, executor, stack, action)
    assert before is None and written is not None
    assert written["spec"]["selector"] == {"app": "search"}
    assert written["spec"]["ports"][0]["targetPort"] == 8082
    assert written["metadata"]["labels"] == {"app": "search"}
    assert "+  name: search-copy" in diff
    assert action.intent(action.manifest()).startswith("Create service/search-copy in hotel")


def test_create_service_serves_callers_once_created(
    lab: Lab, kube: KubeClient, executor: Executor
) -> None:
    kube.delete(ObjectRef("Service", "search", "hotel"))
    lab.settle()
    Writes(executor).write(
        actions.build(
            "create-service",
            {
                "target": "search",
                "namespace": "hotel",
                "selector": {"app": "search"},
                "ports": [{"name": "main", "port": 8082}],
            },
        ),
        actor="t",
    )
    lab.settle()
    lab.settle()
    traffic = lab.control.get("/lab/v1/namespaces/hotel/traffic")
    assert traffic["frontend"]["error_rate"] == 0.0


def test_create_service_refuses_an_existing_name_and_bad_ports(executor: Executor) -> None:
    taken = actions.build(
        "create-service",
        {
            "target": "geo",
            "namespace": "hotel",
            "selector": {"app": "geo"},
            "ports": [{"port": 8083}],
        },
    )
    with pytest.raises(errors.Invalid, match="already exists"):
        executor.preview(taken)
    with pytest.raises(errors.Invalid, match="distinct name"):
        actions.build(
            "create-service",
            {
                "target": "x",
                "namespace": "hotel",
                "selector": {"app": "geo"},
                "ports": [{"port": 1}, {"port": 2}],
            },
        ).manifest()


def test_ports_parse_from_their_text_form() -> None:
    parsed = params.parse(
        actions.CreateService, ["selector=app=web", "ports=main:80:8080,9090/UDP"]
    )
    built = actions.build("create-service", {"target": "web", "namespace": "ns", **parsed})
    assert isinstance(built, actions.CreateService)
    assert [p.manifest() for p in built.ports] == [
        {"name": "main", "port": 80, "targetPort": 8080, "protocol": "TCP"},
        {"port": 9090, "targetPort": 9090, "protocol": "UDP"},
    ]
    spec = {s.name: s for s in params.specs(actions.CreateService)}
    assert "NAME:PORT[:TARGET][/PROTOCOL]" in spec["ports"].type
    with pytest.raises(errors.Invalid, match="ports"):
        params.parse(actions.CreateService, ["ports=main:eighty"])


def _quota(kube: KubeClient, hard: dict[str, str]) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "compute", "namespace": "shop"},
            "spec": {"hard": hard},
        }
    )


def test_set_quota_changes_one_limit_and_is_undone(
    lab: Lab, kube: KubeClient, executor: Executor, stack: UndoStack
) -> None:
    _quota(kube, {"pods": "30", "requests.cpu": "8"})
    action = actions.build(
        "set-quota",
        {"target": "compute", "namespace": "shop", "resource": "pods", "value": "40"},
    )
    before, written, diff = _apply_and_undo(kube, executor, stack, action)
    assert written is not None and written["spec"]["hard"] == {"pods": "40", "requests.cpu": "8"}
    assert "-    pods: '30'" in diff and "+    pods: '40'" in diff
    assert before is not None
    assert (
        action.intent(before) == "Set the pods limit of resourcequota/compute in shop from 30 to 40"
    )
    with pytest.raises(errors.Invalid):
        actions.build("set-quota", {"target": "q", "namespace": "shop", "resource": "pods",
                                    "value": "lots"})  # fmt: skip


def test_delete_resourcequota_is_undone_by_recreating_it(
    lab: Lab, kube: KubeClient, executor: Executor, stack: UndoStack
) -> None:
    _quota(kube, {"pods": "30"})
    action = actions.build("delete-resourcequota", {"target": "compute", "namespace": "shop"})
    before, written, _ = _apply_and_undo(kube, executor, stack, action)
    assert before is not None and written is None


def test_delete_pvc_takes_only_an_unbound_claim_and_undo_recreates_it(
    lab: Lab, kube: KubeClient, executor: Executor, stack: UndoStack
) -> None:
    bound = actions.build("delete-pvc", {"target": "data-postgres-0", "namespace": "shop"})
    with pytest.raises(errors.Invalid, match="bound"):
        executor.preview(bound)
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "scratch", "namespace": "shop"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "no-such-class",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )
    lab.settle()
    action = actions.build("delete-pvc", {"target": "scratch", "namespace": "shop"})
    before, written, diff = _apply_and_undo(kube, executor, stack, action)
    assert before is not None and written is None
    assert "-  storageClassName: no-such-class" in diff


def test_remove_taint_removes_one_taint_and_undo_puts_it_back(
    lab: Lab, kube: KubeClient, executor: Executor, stack: UndoStack
) -> None:
    node = kube.get(ObjectRef("Node", "node-2"))
    node["spec"]["taints"] = [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "team", "value": "a", "effect": "PreferNoSchedule"},
    ]
    kube.replace(node)
    action = actions.build("remove-taint", {"kind": "Node", "target": "node-2", "key": "dedicated"})
    _, written, _ = _apply_and_undo(kube, executor, stack, action)
    assert written is not None
    assert [t["key"] for t in written["spec"]["taints"]] == ["team"]
    controller = actions.build(
        "remove-taint",
        {"kind": "Node", "target": "node-2", "key": "node.kubernetes.io/unschedulable"},
    )
    with pytest.raises(errors.Invalid, match="node controller"):
        executor.preview(controller)


def test_restore_configmap_key_returns_the_last_applied_value(
    lab: Lab, kube: KubeClient, executor: Executor, stack: UndoStack
) -> None:
    ref = ObjectRef("ConfigMap", "hotel-config", "hotel")
    drifted = kube.get(ref)
    drifted["data"]["cache-ttl-seconds"] = "5"
    kube.replace(drifted)
    action = actions.build(
        "restore-configmap-key",
        {"target": "hotel-config", "namespace": "hotel", "key": "cache-ttl-seconds"},
    )
    before, written, diff = _apply_and_undo(kube, executor, stack, action)
    assert written is not None and written["data"]["cache-ttl-seconds"] == "60"
    assert "-  cache-ttl-seconds: '5'" in diff and "+  cache-ttl-seconds: '60'" in diff
    assert before is not None and "'5' to its last-applied value '60'" in action.intent(before)
    missing = actions.build(
        "restore-configmap-key",
        {"target": "hotel-config", "namespace": "hotel", "key": "not-applied"},
    )
    with pytest.raises(errors.Invalid, match="last applied"):
        executor.preview(missing)


def test_restore_secret_key_shows_digests_never_the_value(
    lab: Lab, kube: KubeClient, executor: Executor, stack: UndoStack
) -> None:
    ref = ObjectRef("Secret", "mongodb-rate-auth", "hotel")
    drifted = kube.get(ref)
    drifted["data"]["password"] = base64.b64encode(b"hunter2-rotated").decode()
    kube.replace(drifted)
    action = actions.build(
        "restore-secret-key",
        {"target": "mongodb-rate-auth", "namespace": "hotel", "key": "password"},
    )
    current, plan = executor.preview(action)
    intent = action.intent(current)
    shown = plan.diff + intent
    for secret in ("rate-s3cret", "hunter2-rotated"):
        assert secret not in shown
        assert base64.b64encode(secret.encode()).decode() not in shown
    assert secret_digest("rate-s3cret") in intent and secret_digest("hunter2-rotated") in intent
    assert secret_digest("rate-s3cret") in plan.diff
    _, written, diff = _apply_and_undo(kube, executor, stack, action)
    assert written is not None
    assert base64.b64decode(written["data"]["password"]).decode() == "rate-s3cret"
    assert "rate-s3cret" not in diff
    restored = kube.get(ref)  # undone: the drifted value is back, exactly
    assert base64.b64decode(restored["data"]["password"]).decode() == "hunter2-rotated"
