"""The undo stack's entries (``undo.entries``) on a store alone: pushed with their write,
moved by compare-and-set, and the history of an incident newest first. No cluster, no socket."""

from __future__ import annotations

from pathlib import Path

from store.db import Store
from store.records import ExecutionLog
from undo.entries import ACTIVE, DROPPED, NO_INVERSE, UNDONE, UndoEntries


def applied(store: Store, name: str, *, incident: str | None, reversible: bool = True) -> str:
    log = ExecutionLog(store)
    image = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}
    execution = log.begin(
        action="patch-configmap-key",
        operation="replace",
        api_version="v1",
        kind="ConfigMap",
        namespace="hotel",
        name=name,
        actor="cli:alice",
        before_image=image,
        planned_after=image,
        diff="",
        intent=f"Patch {name}",
        incident_id=incident,
    )
    with store.immediate():
        return UndoEntries(store).push(log.mark_applied(execution, "2"), reversible=reversible)


def test_history_is_newest_first_by_incident_whatever_the_state(tmp_path: Path) -> None:
    store = Store(tmp_path / "stratus.db")
    try:
        first = applied(store, "one", incident="inc-1")
        second = applied(store, "two", incident="inc-2")
        third = applied(store, "three", incident="inc-1")
        fourth = applied(store, "four", incident="inc-1", reversible=False)
        entries = UndoEntries(store)
        assert entries.mark_undone(first, "cli:bob")
        assert not entries.mark_undone(first, "cli:carol")  # compare-and-set: once
        assert entries.drop(third, "cli:bob")
        assert [e.id for e in entries.history(incident_id="inc-1")] == [fourth, third, first]
        assert [e.state for e in entries.history(incident_id="inc-1")] == [
            NO_INVERSE,
            DROPPED,
            UNDONE,
        ]
        assert [e.id for e in entries.history()] == [fourth, third, second, first]
        assert [e.id for e in entries.history(limit=2)] == [fourth, third]
        assert [e.id for e in entries.active()] == [second]
        kept = entries.get(second)
        assert kept is not None and kept.state == ACTIVE
    finally:
        store.close()
