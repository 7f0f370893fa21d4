"""The executor and undo against the lab: conflicts, locks, scope, RBAC, bad input. Writes and
undos take the real path (``tests.writes``: the proposal service); the held session
(``Executor.locked``) is tried directly where a race must fall between a read and a write."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest

from proposals.service import Superseded
from store.audit import AuditLog
from store.locks import LeaseLocks
from tests.conftest import Kubectl, Lab
from tests.writes import Writes
from tools import actions, errors
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef, normalized
from tools.scope import WriteScope
from tools.write_steps import Replan, WriteRecord
from undo.entries import UndoEntries
from undo.stack import UndoStack

GEO = ObjectRef("Deployment", "geo", "hotel")


def scale(replicas: int, target: str = "geo") -> actions.Action:
    return actions.build("scale", {"target": target, "namespace": "hotel", "replicas": replicas})


@pytest.fixture
def writes(executor: Executor) -> Writes:
    return Writes(executor)


def test_outside_change_makes_undo_refuse_until_forced(
    kube: KubeClient, writes: Writes, stack: UndoStack, kubectl: Kubectl
) -> None:
    before = kube.get(GEO)
    outcome = writes.write(scale(2), actor="alice")
    undo = writes.propose_undo(outcome.undo_id or "", actor="alice")
    kubectl.run("set", "env", "deploy/geo", "HOTFIX=1")
    with pytest.raises(errors.UndoConflict) as conflict:
        writes.service.execute(undo.id, actor="alice")
    assert "changed since Stratus wrote it" in conflict.value.message
    assert "+          - name: HOTFIX" in conflict.value.diff or "HOTFIX" in conflict.value.diff
    entry = stack.entries.get(outcome.undo_id or "")
    assert entry is not None and entry.state == "active" and entry.last_error
    assert kube.get(GEO)["spec"]["replicas"] == 2  # nothing was written
    writes.undo(outcome.undo_id or "", actor="alice", force=True)
    assert normalized(kube.get(GEO)) == normalized(before)


def test_controller_status_updates_are_not_conflicts(
    lab: Lab, kube: KubeClient, writes: Writes
) -> None:
    outcome = writes.write(
        actions.build(
            "set-image", {"target": "geo", "namespace": "hotel", "image": "stratus/hotel-geo:1.1"}
        ),
        actor="a",
    )
    lab.settle()  # the controllers roll out and write status and the revision annotation
    written = kube.get(GEO)
    execution = writes.service.executions.get(outcome.execution_id or "")
    assert execution is not None and execution.written_rv
    assert written["metadata"]["resourceVersion"] != execution.written_rv
    assert writes.undo(outcome.undo_id or "", actor="a").state == "executed"


SCALE_RECORD = WriteRecord(action="scale", intent="scale")


def test_a_conflicting_write_is_replanned_once(
    kube: KubeClient, executor: Executor, kubectl: Kubectl
) -> None:
    seen: list[str] = []
    with executor.locked(GEO, actor="a") as held:
        current = held.read()
        assert current is not None
        seen.append(current["metadata"]["resourceVersion"])
        kubectl.run("label", "deploy/geo", "raced=yes")  # someone writes between read and write
        with pytest.raises(Replan):
            held.apply(scale(4).plan(current), record=SCALE_RECORD)
        current = held.read()
        assert current is not None
        seen.append(current["metadata"]["resourceVersion"])
        sent = held.apply(scale(4).plan(current), record=SCALE_RECORD)
        with held.recording(sent) as applied:
            undo_id = UndoEntries(executor.store).follow(applied.execution, reversible=True)
            applied.audit(undo_entry=undo_id)
        assert undo_id is not None
    assert len(seen) == 2 and seen[0] != seen[1]
    final = kube.get(GEO)
    assert final["spec"]["replicas"] == 4 and final["metadata"]["labels"]["raced"] == "yes"
    states = executor.store.query("SELECT state FROM executions ORDER BY created_at")
    assert [r["state"] for r in states][-1] == "applied"


def test_a_write_that_keeps_conflicting_fails_cleanly(executor: Executor, kubectl: Kubectl) -> None:
    with (
        executor.locked(GEO, actor="a") as held,
        pytest.raises(errors.Conflict, match="keeps changing"),
    ):
        while True:
            current = held.read()
            assert current is not None
            kubectl.run(
                "label",
                "--overwrite",
                "deploy/geo",
                f"race={current['metadata']['resourceVersion']}",
            )
            try:
                held.apply(scale(4).plan(current), record=SCALE_RECORD)
            except Replan:
                continue
    assert executor.store.query("SELECT COUNT(*) AS n FROM undo_entries")[0]["n"] == 0


def test_one_writer_per_object_and_parallel_on_different_objects(
    kube: KubeClient, executor: Executor
) -> None:
    locks = LeaseLocks(executor.store)
    assert locks.try_acquire(GEO.key, "incident-7/abc", ttl=30) is None
    busy = Writes(Executor(kube, executor.store, lock_wait=0.2))
    with pytest.raises(errors.LockHeld, match="being changed by incident-7"):
        busy.write(scale(2), actor="b")
    busy.write(scale(2, "user"), actor="b")  # another object is free
    locks.release(GEO.key, "incident-7/abc")
    busy.write(scale(2), actor="b")


def test_racing_executors_write_one_at_a_time_without_lost_updates(
    kube: KubeClient, executor: Executor
) -> None:
    results: list[str] = []
    errors_seen: list[Exception] = []
    variables = [f"V{i}" for i in range(6)]

    def worker(variable: str) -> None:
        try:
            mine = Writes(Executor(kube, executor.store, lock_wait=20))
            proposal = mine.propose(
                actions.build(
                    "set-env",
                    {"target": "geo", "namespace": "hotel", "variable": variable, "value": "1"},
                ),
                actor=variable,
            )
            while True:
                try:
                    out = mine.service.execute(proposal.id, actor=variable)
                    break
                except Superseded as moved:
                    # Another writer changed the object since this one read it: the
                    # replacement carries the same change on the object as it is now.
                    assert moved.new is not None
                    proposal = moved.new
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
    narrow = Writes(Executor(kube, store, scope=WriteScope(namespaces=("shop",))))
    with pytest.raises(errors.OutOfScope, match="outside the write scope"):
        narrow.write(scale(2), actor="a")
    default = Writes(Executor(kube, store))
    with pytest.raises(errors.OutOfScope, match="protected"):
        default.write(
            actions.build(
                "scale", {"target": "coredns", "namespace": "kube-system", "replicas": 1}
            ),
            actor="a",
        )
    no_nodes = Writes(Executor(kube, store, scope=WriteScope(nodes=False)))
    with pytest.raises(errors.OutOfScope):
        no_nodes.write(actions.build("cordon", {"kind": "Node", "target": "node-1"}), actor="a")
    assert AuditLog(store).count() == 0


def test_rbac_forbidden_and_missing_objects_write_nothing(
    lab: Lab, kube: KubeClient, executor: Executor, writes: Writes
) -> None:
    before = kube.get(GEO)
    lab.control.request(
        "PUT",
        "/lab/v1/rbac/denials",
        {"denials": [{"verb": "update", "resource": "deployments", "namespace": "hotel"}]},
    )
    try:
        with pytest.raises(errors.Forbidden, match="forbidden by the cluster"):
            writes.write(scale(3), actor="a")
    finally:
        lab.control.request("PUT", "/lab/v1/rbac/denials", {"denials": []})
    assert kube.get(GEO)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    with pytest.raises(errors.NotFound):
        writes.write(scale(3, "nonexistent"), actor="a")
    assert executor.store.query("SELECT COUNT(*) AS n FROM executions")[0]["n"] == 0


def test_invalid_parameters_are_refused_before_anything_is_sent(
    executor: Executor, writes: Writes
) -> None:
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
            writes.write(actions.build(name, params), actor="a")
    assert executor.store.query("SELECT COUNT(*) AS n FROM executions")[0]["n"] == 0


def test_the_dry_run_catches_what_the_server_rejects(executor: Executor, writes: Writes) -> None:
    bad = actions.build(
        "set-resources", {"target": "geo", "namespace": "hotel", "limits": {"memory": "lots"}}
    )
    with pytest.raises(errors.Invalid, match="quantities must match"):
        writes.write(bad, actor="a")
    assert executor.store.query("SELECT COUNT(*) AS n FROM executions")[0]["n"] == 0


def test_every_write_and_undo_is_audited(executor: Executor, writes: Writes) -> None:
    outcome = writes.write(scale(2), actor="alice")
    writes.undo(outcome.undo_id or "", actor="bob")
    records = [r for r in AuditLog(executor.store).records() if r.event in ("write", "undo")]
    assert [(r.actor, r.event) for r in records] == [("alice", "write"), ("bob", "undo")]
    assert records[0].payload["intent"] == "Scale deployment/geo in hotel from 1 to 2 replicas"
    assert AuditLog(executor.store).verify() == []


def test_lock_expires_when_its_holder_died(executor: Executor, writes: Writes) -> None:
    locks = LeaseLocks(executor.store)
    assert locks.try_acquire(GEO.key, "crashed/1", ttl=0.05) is None
    time.sleep(0.1)
    assert writes.write(scale(2), actor="a").state == "executed"


def test_a_conflict_names_the_later_stratus_writer(writes: Writes) -> None:
    first = writes.write(scale(2), actor="alice")
    undo = writes.propose_undo(first.undo_id or "", actor="alice")
    writes.write(scale(3), actor="bob")
    with pytest.raises(errors.UndoConflict, match=r"changed since by bob \(Scale deployment"):
        writes.service.execute(undo.id, actor="alice")


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


def test_undo_entries_per_incident_and_globally(writes: Writes, stack: UndoStack) -> None:
    writes.write(scale(2), actor="a", incident_id="inc-1")
    writes.write(scale(2, "user"), actor="a", incident_id="inc-2")
    assert [e.execution.name for e in stack.entries.active(incident_id="inc-1")] == ["geo"]
    assert [e.execution.name for e in stack.entries.active()] == ["user", "geo"]
    newest_of_inc_1 = stack.entries.active(incident_id="inc-1")[0]
    assert newest_of_inc_1.execution.name == "geo"
    assert writes.undo(newest_of_inc_1.id, actor="a").state == "executed"
    assert [e.execution.name for e in stack.entries.active()] == ["user"]
