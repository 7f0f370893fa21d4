"""The executor and undo against the lab: conflicts, locks, scope, RBAC, bad input."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest

from store.audit import AuditLog
from store.locks import LeaseLocks
from tests.conftest import Kubectl, Lab
from tools import actions, errors
from tools.actions import WritePlan
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef, normalized
from tools.scope import WriteScope
from undo.stack import UndoStack

GEO = ObjectRef("Deployment", "geo", "hotel")


def scale(replicas: int, target: str = "geo") -> actions.Action:
    return actions.build("scale", {"target": target, "namespace": "hotel", "replicas": replicas})


def test_outside_change_makes_undo_refuse_until_forced(
    kube: KubeClient, executor: Executor, stack: UndoStack, kubectl: Kubectl
) -> None:
    before = kube.get(GEO)
    outcome = executor.execute(scale(2), actor="alice")
    kubectl.run("set", "env", "deploy/geo", "HOTFIX=1")
    with pytest.raises(errors.UndoConflict) as conflict:
        stack.undo(outcome.undo_id or "", actor="alice")
    assert "changed since Stratus wrote it" in conflict.value.message
    assert "+          - name: HOTFIX" in conflict.value.diff or "HOTFIX" in conflict.value.diff
    entry = stack.entries.get(outcome.undo_id or "")
    assert entry is not None and entry.state == "active" and entry.last_error
    assert kube.get(GEO)["spec"]["replicas"] == 2  # nothing was written
    stack.undo(outcome.undo_id or "", actor="alice", force=True)
    assert normalized(kube.get(GEO)) == normalized(before)


def test_controller_status_updates_are_not_conflicts(
    lab: Lab, kube: KubeClient, executor: Executor, stack: UndoStack
) -> None:
    outcome = executor.execute(
        actions.build(
            "set-image", {"target": "geo", "namespace": "hotel", "image": "stratus/hotel-geo:1.1"}
        ),
        actor="a",
    )
    lab.settle()  # the controllers roll out and write status and the revision annotation
    written = kube.get(GEO)
    assert (
        written["metadata"]["resourceVersion"]
        != (outcome.written or {})["metadata"]["resourceVersion"]
    )
    stack.undo(outcome.undo_id or "", actor="a")


def test_undo_of_a_transaction_runs_newest_first_and_stops_at_a_failure(
    kube: KubeClient, executor: Executor, stack: UndoStack, kubectl: Kubectl
) -> None:
    first = executor.execute(scale(2), actor="a", transaction_id="tx-1")
    executor.execute(
        actions.build(
            "set-env", {"target": "geo", "namespace": "hotel", "variable": "A", "value": "1"}
        ),
        actor="a",
        transaction_id="tx-1",
    )
    executor.execute(scale(3, "user"), actor="a", transaction_id="tx-1")
    kubectl.run("annotate", "deploy/geo", "someone=changed-it")
    result = stack.undo_transaction("tx-1", actor="a")
    assert len(result.undone) == 1 and result.undone[0].entry.execution.name == "user"
    assert result.failed is not None and result.failed.execution.action == "set-env"
    assert {e.id for e in stack.entries.active(transaction_id="tx-1")} >= {first.undo_id}
    assert kube.get(ObjectRef("Deployment", "user", "hotel"))["spec"]["replicas"] == 1


def test_a_conflicting_write_is_replanned_once(
    kube: KubeClient, executor: Executor, kubectl: Kubectl
) -> None:
    calls: list[str] = []

    def planner(current: dict[str, Any] | None) -> WritePlan:
        assert current is not None
        calls.append(current["metadata"]["resourceVersion"])
        if len(calls) == 1:  # someone writes between our read and our write
            kubectl.run("label", "deploy/geo", "raced=yes")
        return scale(4).plan(current)

    outcome = executor.run(GEO, planner, action="scale", actor="a", intent="scale")
    assert len(calls) == 2 and calls[0] != calls[1]
    final = kube.get(GEO)
    assert final["spec"]["replicas"] == 4 and final["metadata"]["labels"]["raced"] == "yes"
    states = executor.store.query("SELECT state FROM executions ORDER BY created_at")
    assert [r["state"] for r in states][-1] == "applied"
    assert outcome.applied


def test_a_write_that_keeps_conflicting_fails_cleanly(executor: Executor, kubectl: Kubectl) -> None:
    def planner(current: dict[str, Any] | None) -> WritePlan:
        assert current is not None
        kubectl.run(
            "label", "--overwrite", "deploy/geo", f"race={current['metadata']['resourceVersion']}"
        )
        return scale(4).plan(current)

    with pytest.raises(errors.Conflict, match="keeps changing"):
        executor.run(GEO, planner, action="scale", actor="a", intent="scale")
    assert executor.store.query("SELECT COUNT(*) AS n FROM undo_entries")[0]["n"] == 0


def test_one_writer_per_object_and_parallel_on_different_objects(
    kube: KubeClient, executor: Executor
) -> None:
    locks = LeaseLocks(executor.store)
    assert locks.try_acquire(GEO.key, "incident-7/abc", ttl=30) is None
    busy = Executor(kube, executor.store, lock_wait=0.2)
    with pytest.raises(errors.LockHeld, match="being changed by incident-7"):
        busy.execute(scale(2), actor="b")
    busy.execute(scale(2, "user"), actor="b")  # another object is free
    locks.release(GEO.key, "incident-7/abc")
    busy.execute(scale(2), actor="b")


def test_racing_executors_write_one_at_a_time_without_lost_updates(
    kube: KubeClient, executor: Executor
) -> None:
    results: list[str] = []
    errors_seen: list[Exception] = []
    variables = [f"V{i}" for i in range(6)]

    def worker(variable: str) -> None:
        try:
            mine = Executor(kube, executor.store, lock_wait=20)
            out = mine.execute(
                actions.build(
                    "set-env",
                    {"target": "geo", "namespace": "hotel", "variable": variable, "value": "1"},
                ),
                actor=variable,
            )
            results.append(out.execution_id or "")
        except Exception as exc:
            errors_seen.append(exc)

    threads = [threading.Thread(target=worker, args=(v,)) for v in variables]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors_seen and len(results) == 6
    env = {e["name"] for e in kube.get(GEO)["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert set(variables) <= env  # every writer's change survived
    rows = executor.store.query(
        "SELECT before_rv, written_rv FROM executions "
        "WHERE state = 'applied' ORDER BY written_rv + 0"
    )
    for earlier, later in itertools.pairwise(rows):
        assert int(later["before_rv"]) >= int(earlier["written_rv"])  # serialized


def test_scope_refuses_protected_and_unlisted_namespaces(kube: KubeClient, store: Any) -> None:
    narrow = Executor(kube, store, scope=WriteScope(namespaces=("shop",)))
    with pytest.raises(errors.OutOfScope, match="outside the write scope"):
        narrow.execute(scale(2), actor="a")
    default = Executor(kube, store)
    with pytest.raises(errors.OutOfScope, match="protected"):
        default.execute(
            actions.build(
                "scale", {"target": "coredns", "namespace": "kube-system", "replicas": 1}
            ),
            actor="a",
        )
    no_nodes = Executor(kube, store, scope=WriteScope(nodes=False))
    with pytest.raises(errors.OutOfScope):
        no_nodes.execute(actions.build("cordon", {"kind": "Node", "target": "node-1"}), actor="a")
    assert AuditLog(store).count() == 0


def test_rbac_forbidden_and_missing_objects_write_nothing(
    lab: Lab, kube: KubeClient, executor: Executor
) -> None:
    before = kube.get(GEO)
    lab.control.request(
        "PUT",
        "/lab/v1/rbac/denials",
        {"denials": [{"verb": "update", "resource": "deployments", "namespace": "hotel"}]},
    )
    try:
        with pytest.raises(errors.Forbidden, match="forbidden by the cluster"):
            executor.execute(scale(3), actor="a")
    finally:
        lab.control.request("PUT", "/lab/v1/rbac/denials", {"denials": []})
    assert kube.get(GEO)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    with pytest.raises(errors.NotFound):
        executor.execute(scale(3, "nonexistent"), actor="a")
    assert executor.store.query("SELECT COUNT(*) AS n FROM executions")[0]["n"] == 0


def test_invalid_parameters_are_refused_before_anything_is_sent(executor: Executor) -> None:
    for name, params, message in [
        ("scale", {"target": "geo", "namespace": "hotel", "replicas": -1}, "greater than"),
        ("scale", {"target": "geo", "namespace": "hotel"}, "replicas: Field required"),
        (
            "set-env",
            {
                "target": "geo",
                "namespace": "hotel",
                "variable": "A",
                "value": "1",
                "container": "nope",
            },
            "no container 'nope'",
        ),
        ("frobnicate", {}, "unknown action"),
        ("scale", {"kind": "Service", "target": "geo", "replicas": 1}, "acts on"),
        (
            "rollout-undo",
            {"target": "geo", "namespace": "hotel", "to_revision": 7},
            "has no revision 7",
        ),
    ]:
        with pytest.raises(errors.Invalid, match=message):
            executor.execute(actions.build(name, params), actor="a")
    assert executor.store.query("SELECT COUNT(*) AS n FROM executions")[0]["n"] == 0


def test_the_dry_run_catches_what_the_server_rejects(kube: KubeClient, executor: Executor) -> None:
    bad = actions.build(
        "set-resources", {"target": "geo", "namespace": "hotel", "limits": {"memory": "lots"}}
    )
    with pytest.raises(errors.Invalid, match="quantities must match"):
        executor.execute(bad, actor="a")
    assert executor.store.query("SELECT COUNT(*) AS n FROM executions")[0]["n"] == 0


def test_every_write_and_undo_is_audited(executor: Executor, stack: UndoStack) -> None:
    outcome = executor.execute(scale(2), actor="alice")
    stack.undo(outcome.undo_id or "", actor="bob")
    records = AuditLog(executor.store).records()
    assert [(r.actor, r.event) for r in records] == [("alice", "write"), ("bob", "undo")]
    assert records[0].payload["intent"] == "Scale deployment/geo in hotel from 1 to 2 replicas"
    assert AuditLog(executor.store).verify() == []


def test_lock_expires_when_its_holder_died(executor: Executor) -> None:
    locks = LeaseLocks(executor.store)
    assert locks.try_acquire(GEO.key, "crashed/1", ttl=0.05) is None
    time.sleep(0.1)
    executor.execute(scale(2), actor="a")


def test_a_conflict_names_the_later_stratus_writer(executor: Executor, stack: UndoStack) -> None:
    first = executor.execute(scale(2), actor="alice")
    executor.execute(scale(3), actor="bob")
    with pytest.raises(errors.UndoConflict, match=r"changed since by bob \(Scale deployment"):
        stack.undo(first.undo_id or "", actor="alice")


def test_async_callers_use_the_client_through_a_thread(kube: KubeClient) -> None:
    import asyncio

    from tools.k8s import in_thread

    async def read_both() -> list[dict[str, Any]]:
        return list(
            await asyncio.gather(
                in_thread(kube.get, GEO), in_thread(kube.get, ObjectRef("Service", "geo", "hotel"))
            )
        )

    deployment, service = asyncio.run(read_both())
    assert deployment["kind"] == "Deployment" and service["kind"] == "Service"


def test_kubeconfig_contexts_are_honoured(lab: Lab, tmp_path: Any) -> None:
    import yaml

    config = yaml.safe_load(lab.kubeconfig.read_text())
    config["clusters"].append({"name": "elsewhere", "cluster": {"server": "http://127.0.0.1:9"}})
    config["contexts"].append(
        {
            "name": "elsewhere",
            "context": {"cluster": "elsewhere", "user": config["users"][0]["name"]},
        }
    )
    config["current-context"] = "elsewhere"
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    lab_client = KubeClient(kubeconfig=str(path), context="stratus-lab")
    assert lab_client.get(GEO)["metadata"]["name"] == "geo"
    with pytest.raises(errors.Unavailable, match="cannot reach the API server"):
        KubeClient(kubeconfig=str(path)).get(GEO)
    with pytest.raises(errors.Unavailable, match="cannot load kubeconfig"):
        KubeClient(kubeconfig=str(path), context="no-such-context")


def test_undo_entries_per_incident_and_globally(executor: Executor, stack: UndoStack) -> None:
    executor.execute(scale(2), actor="a", incident_id="inc-1", transaction_id="t1")
    executor.execute(scale(2, "user"), actor="a", incident_id="inc-2", transaction_id="t2")
    assert [e.execution.name for e in stack.entries.active(incident_id="inc-1")] == ["geo"]
    assert [e.execution.name for e in stack.entries.active()] == ["user", "geo"]
    newest_of_inc_1 = stack.entries.active(incident_id="inc-1")[0]
    result = stack.undo(newest_of_inc_1.id, actor="a")
    assert result.entry.execution.name == "geo"
    assert [e.execution.name for e in stack.entries.active()] == ["user"]
