"""Undoing executed writes: exact inverses with conflict detection, alone or by transaction.

An undo re-reads the object. If what a human would see (spec, labels, annotations — not
status or server-set fields) moved since Stratus wrote it, the undo refuses with a diff of what
changed, unless forced. Otherwise it replaces the object with the before-image — a full
replace, so fields the action added disappear. Deletes are undone by re-creating the
before-image without its server-set fields; a deleted controller-owned pod needs no inverse.
Undo runs through the same executor as any write (scope, lock, dry-run, audit), and an entry
leaves the stack only after its inverse succeeded.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from store.records import ACTIVE, NO_INVERSE, UNDONE, Execution, UndoEntries, UndoEntry
from tools import errors
from tools.actions import Plan
from tools.executor import Executor, Outcome
from tools.objects import ObjectRef, for_create, normalized, yaml_diff


@dataclass
class UndoResult:
    entry: UndoEntry
    outcome: Outcome | None


@dataclass
class TransactionResult:
    undone: list[UndoResult] = field(default_factory=list)
    failed: UndoEntry | None = None
    error: str = ""


def _label(execution: Execution) -> str:
    return f"{execution.kind.lower()}/{execution.name}"


def plan_inverse(execution: Execution, current: dict[str, Any] | None, *, force: bool) -> Plan:
    """The write that puts the object back as it was before ``execution`` (pure)."""
    label = _label(execution)
    if execution.operation == "create":
        if current is None:
            return Plan("replace", None, None, "")  # already gone: nothing to do
        return Plan("delete", current, None, yaml_diff(current, None, label=label))
    before = execution.before_image
    if before is None:
        raise errors.Invalid(f"execution {execution.id} has no before-image to restore")
    if execution.operation == "delete":
        restored = for_create(before)
        if current is not None:
            if not force:
                raise errors.UndoConflict(
                    f"{label} was re-created since Stratus deleted it; undo would replace it "
                    "(use --force)",
                    yaml_diff(restored, current, label=label, old="deleted by Stratus", new="now"),
                )
            restored["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            return Plan("replace", current, restored, yaml_diff(current, restored, label=label))
        return Plan("create", None, restored, yaml_diff(None, restored, label=label))
    # A replace: compare what is there with what Stratus wrote.
    if current is None:
        if not force:
            raise errors.UndoConflict(
                f"{label} was deleted since Stratus changed it; undo "
                "would re-create it (use --force)",
                "",
            )
        restored = for_create(before)
        return Plan("create", None, restored, yaml_diff(None, restored, label=label))
    moved = normalized(current) != normalized(execution.planned_after)
    if moved and not force:
        raise errors.UndoConflict(
            f"{label} changed since Stratus wrote it (resourceVersion "
            f"{execution.written_rv or '?'} → {current['metadata'].get('resourceVersion')}); "
            "undo would overwrite that change (use --force)",
            yaml_diff(
                execution.planned_after, current, label=label, old="as Stratus wrote it", new="now"
            ),
        )
    restored = copy.deepcopy(before)
    restored.pop("status", None)
    restored["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    return Plan("replace", current, restored, yaml_diff(current, restored, label=label))


class UndoStack:
    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.entries = UndoEntries(executor.store)

    def undo(self, entry_id: str, *, actor: str, force: bool = False) -> UndoResult:
        entry = self.entries.get(entry_id)
        if entry is None:
            raise errors.NotFound(f"no undo entry {entry_id}")
        if entry.state == NO_INVERSE:
            raise errors.Invalid(f"{entry_id} needs no undo: {entry.execution.intent}")
        if entry.state != ACTIVE:
            raise errors.Invalid(
                f"{entry_id} was already undone ({entry.undone_at} by {entry.undone_by})"
            )
        execution = entry.execution
        ref = ObjectRef(execution.kind, execution.name, execution.namespace)
        try:
            outcome = self.executor.run(
                ref,
                lambda current: plan_inverse(execution, current, force=force),
                action="undo",
                actor=actor,
                intent=lambda: f"Undo: {execution.intent}",
                incident_id=execution.incident_id,
                transaction_id=execution.transaction_id,
                inverse_of=execution.id,
            )
        except errors.UndoConflict as conflict:
            message = f"{conflict.message}; {self._who_changed(execution)}"
            self.entries.record_failure(entry_id, message)
            raise errors.UndoConflict(message, conflict.diff) from conflict
        except errors.ToolError as error:
            self.entries.record_failure(entry_id, error.message)
            raise
        if not outcome.applied:
            # Nothing left to restore (the object is already as it was): the entry is done.
            self.entries.mark_undone(entry_id, actor)
        finished = self.entries.get(entry_id)
        if finished is None or finished.state != UNDONE:
            raise errors.Conflict(f"{entry_id} was not marked undone; run 'stratus undo --list'")
        return UndoResult(entry, outcome)

    def _who_changed(self, execution: Execution) -> str:
        """Name the later Stratus writes to the same object, if any (the audit trail knows)."""
        later = self.executor.store.query(
            "SELECT actor, intent FROM executions WHERE kind = ? AND namespace = ? AND name = ?"
            " AND state = 'applied' AND created_at > ? AND id != ? ORDER BY created_at",
            [
                execution.kind,
                execution.namespace,
                execution.name,
                execution.created_at,
                execution.id,
            ],
        )
        if not later:
            return "it was changed outside Stratus"
        return "changed since by " + ", ".join(f"{r['actor']} ({r['intent']})" for r in later)

    def undo_last(
        self, *, actor: str, force: bool = False, incident_id: str | None = None
    ) -> UndoResult:
        active = self.entries.active(incident_id=incident_id)
        if not active:
            raise errors.NotFound("nothing to undo")
        return self.undo(active[0].id, actor=actor, force=force)

    def undo_transaction(
        self, transaction_id: str, *, actor: str, force: bool = False
    ) -> TransactionResult:
        """Undo a transaction's entries newest first, stopping at the first failure."""
        result = TransactionResult()
        for entry in self.entries.active(transaction_id=transaction_id):
            try:
                result.undone.append(self.undo(entry.id, actor=actor, force=force))
            except errors.ToolError as error:
                result.failed = entry
                result.error = error.message
                break
        return result
