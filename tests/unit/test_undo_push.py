"""The undo entry is pushed by its caller inside the transaction that records its write applied
(``HeldObject.recording``): the entry, the record applied and the audit row naming the entry
commit together, or none of them does. On an in-memory store; nothing reaches a cluster (the
held object is only asked to record a write already sent)."""

from __future__ import annotations

from typing import Any

import pytest

from store.audit import AuditLog
from store.db import Store
from store.records import APPLIED, PENDING
from tests.unit.snapshots import recorded
from tools import actions, secrets
from tools.executor import Executor, HeldObject
from tools.objects import ObjectRef
from tools.write_steps import Sent, WriteRecord
from undo.entries import ACTIVE, UNDONE, UndoEntries

GEO = ObjectRef("Deployment", "geo", "hotel")


class NoCluster:
    """Recording a write that was already sent asks nothing of the cluster."""

    timeout = (1.0, 1.0)


def held(store: Store) -> HeldObject:
    executor = Executor(NoCluster(), store, settle_after=1.0)  # type: ignore[arg-type]
    return HeldObject(executor, GEO, actor="unit", holder="unit@test/1")


def sent_write(store: Store, *, inverse_of: str | None = None) -> Sent:
    """A scale of hotel's geo, as ``held.apply`` leaves it: its write-ahead record stored and
    the write answered, not yet recorded applied."""
    before = next(
        d
        for d in recorded("noop-hotel").raw["objects"]["Deployment"]
        if d["metadata"]["name"] == "geo"
    )
    action = actions.build("scale", {"target": "geo", "namespace": "hotel", "replicas": 3})
    plan = action.plan(before)
    record = WriteRecord(action=action.name, intent="Scale geo to 3", inverse_of=inverse_of)
    execution_id = held(store).executor.executions.begin(
        action=action.name,
        operation=plan.operation,
        api_version="apps/v1",
        kind=GEO.kind,
        namespace=GEO.namespace,
        name=GEO.name,
        actor="unit",
        before_image=secrets.stored_image(plan.before),
        planned_after=secrets.stored_image(plan.after),
        diff=plan.diff,
        intent=record.intent,
        inverse_of=inverse_of,
    )
    assert plan.after is not None
    written: dict[str, Any] = {
        **plan.after,
        "metadata": {**plan.after["metadata"], "resourceVersion": "999"},
    }
    return Sent(GEO, execution_id, plan, written, record)


def state_of(store: Store, execution_id: str) -> str:
    return str(store.query("SELECT state FROM executions WHERE id = ?", [execution_id])[0]["state"])


def test_a_failure_after_the_push_leaves_no_entry_and_no_applied_record(
    memory_store: Store,
) -> None:
    sent = sent_write(memory_store)
    entries = UndoEntries(memory_store)
    with (
        pytest.raises(RuntimeError, match="a later row failed"),
        held(memory_store).recording(sent) as applied,
    ):
        pushed = entries.follow(applied.execution, reversible=True)
        applied.audit(undo_entry=pushed)
        assert [e.id for e in entries.active()] == [pushed]  # in the open transaction
        raise RuntimeError("a later row failed")
    assert entries.history() == []
    assert state_of(memory_store, sent.execution_id) == PENDING  # recovery settles it
    assert AuditLog(memory_store).count() == 0


def test_the_entry_commits_with_its_applied_record_and_the_audit_row_naming_it(
    memory_store: Store,
) -> None:
    sent = sent_write(memory_store)
    entries = UndoEntries(memory_store)
    with held(memory_store).recording(sent) as applied:
        pushed = entries.follow(applied.execution, reversible=True)
        applied.audit(undo_entry=pushed)
    entry = entries.get(pushed or "")
    assert entry is not None and entry.state == ACTIVE
    assert entry.execution.state == APPLIED and entry.execution.written_rv == "999"
    [row] = AuditLog(memory_store).records()
    assert (row.event, row.payload["execution"], row.payload["undo_entry"]) == (
        "write",
        sent.execution_id,
        pushed,
    )

    # The undo of it pushes nothing: its entry leaves the stack in the undo's transaction.
    undo = sent_write(memory_store, inverse_of=sent.execution_id)
    with held(memory_store).recording(undo) as applied:
        assert entries.follow(applied.execution, reversible=True) is None
        applied.audit(undo_entry=None)
    undone = entries.get(pushed or "")
    assert undone is not None and undone.state == UNDONE and undone.undone_by == "unit"
    assert [e.id for e in entries.history()] == [pushed]


def test_an_applied_record_without_its_audit_row_is_rolled_back(memory_store: Store) -> None:
    sent = sent_write(memory_store)
    entries = UndoEntries(memory_store)
    with (
        pytest.raises(RuntimeError, match="without its audit row"),
        held(memory_store).recording(sent) as applied,
    ):
        entries.follow(applied.execution, reversible=True)
    assert entries.history() == []
    assert state_of(memory_store, sent.execution_id) == PENDING
