"""The store in memory: the same migrations, transactions, audit chain and execution records as
on disk, so a unit test can keep what a write leaves behind without a file or a cluster."""

from __future__ import annotations

from typing import Any

import pytest

from store.audit import AuditLog
from store.db import Store
from store.records import ExecutionLog
from store.schema import MIGRATIONS
from tests.unit.snapshots import recorded
from tools import actions, secrets
from tools.objects import normalized
from undo.entries import UndoEntries
from undo.stack import plan_inverse


def test_an_in_memory_store_is_migrated_and_keeps_an_intact_audit_chain(
    memory_store: Store,
) -> None:
    assert memory_store.schema_version == MIGRATIONS[-1][0]
    log = AuditLog(memory_store)
    for n in range(5):
        log.append(actor="unit", event="tested", subject=f"s{n}")
    assert log.count() == 5 and log.verify() == []


def test_a_failed_transaction_leaves_nothing_behind(memory_store: Store) -> None:
    log = AuditLog(memory_store)
    with pytest.raises(RuntimeError), memory_store.immediate():
        log.append(actor="unit", event="inner", subject="s")
        raise RuntimeError("the write failed")
    assert log.count() == 0


def geo() -> dict[str, Any]:
    raw = recorded("noop-hotel").raw
    return next(d for d in raw["objects"]["Deployment"] if d["metadata"]["name"] == "geo")


def test_a_recorded_write_is_undone_from_what_the_store_kept(memory_store: Store) -> None:
    before = geo()
    action = actions.build("scale", {"target": "geo", "namespace": "hotel", "replicas": 3})
    plan = action.plan(before)
    executions = ExecutionLog(memory_store)
    execution_id = executions.begin(
        action=action.name,
        operation=plan.operation,
        api_version="apps/v1",
        kind="Deployment",
        namespace="hotel",
        name="geo",
        actor="unit",
        before_image=secrets.stored_image(plan.before),
        planned_after=secrets.stored_image(plan.after),
        diff=plan.diff,
        intent=action.intent(before),
    )
    assert plan.after is not None
    written = {**plan.after, "metadata": {**plan.after["metadata"], "resourceVersion": "999"}}
    entries = UndoEntries(memory_store)
    with memory_store.immediate():
        entry_id = entries.push(executions.mark_applied(execution_id, "999"), reversible=True)
    assert [e.id for e in entries.active()] == [entry_id]

    stored = executions.get(execution_id)
    assert stored is not None and stored.written_rv == "999"
    inverse = plan_inverse(stored, written, force=False)
    assert inverse.after is not None
    assert normalized(inverse.after) == normalized(before)
    assert inverse.after["metadata"]["resourceVersion"] == "999"  # replaces what is there now
