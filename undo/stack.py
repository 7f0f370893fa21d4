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

from store import integrity
from store.audit import AuditLog
from store.db import Store
from store.records import (
    DROPPED,
    NO_INVERSE,
    UNDONE,
    Execution,
    UndoEntries,
    UndoEntry,
    audited_digest,
    entry_left,
)
from tools import errors, secrets
from tools.actions import WritePlan
from tools.executor import IRREVERSIBLE, Executor, Guard, OnApplied, WriteOutcome
from tools.objects import ObjectRef, for_create, same_object, yaml_diff


@dataclass
class UndoResult:
    entry: UndoEntry
    outcome: WriteOutcome | None


@dataclass
class TransactionResult:
    undone: list[UndoResult] = field(default_factory=list)
    failed: UndoEntry | None = None
    error: str = ""


def _label(execution: Execution) -> str:
    return f"{execution.kind.lower()}/{execution.name}"


def check_record(execution: Execution, store: Store | None = None) -> ObjectRef:
    """The object an execution recorded, once its record is proven unedited: undo writes
    only that object, and only the images that were stored with it. With ``store``, the
    record's digest must also be the one the audit log wrote when the write was applied."""
    ref = ObjectRef(execution.kind, execution.name, execution.namespace)
    if not execution.before_digest:
        raise errors.Tampered(
            f"the record of {execution.id} carries no digest, so its before-image cannot be "
            "trusted; drop it from the stack instead",
            subject=str(ref),
        )
    if not execution.intact():
        if store is not None and not AuditLog(store).key_fits():
            raise integrity.AuditKeyError(
                f"{integrity.KEY_MISMATCH}: the record of {execution.id} cannot be checked, "
                "so undo refuses to write from it; set the installation's key",
                subject=str(ref),
            )
        raise errors.Tampered(
            f"the record of {execution.id} was edited after it was written (its digest no "
            "longer matches); undo refuses to write from it",
            subject=str(ref),
        )
    recorded = audited_digest(store, execution.id) if store is not None else execution.before_digest
    if recorded != execution.before_digest:
        raise errors.Tampered(
            f"the record of {execution.id} does not match what the audit log wrote when it was "
            "applied; undo refuses to write from it",
            subject=str(ref),
        )
    for image in (execution.before_image, execution.planned_after):
        if not same_object(image, ref):
            raise errors.Tampered(
                f"the stored images of {execution.id} name another object than {ref}",
                subject=str(ref),
            )
    return ref


def plan_inverse(
    execution: Execution,
    current: dict[str, Any] | None,
    *,
    force: bool,
    before: dict[str, Any] | None = None,
) -> WritePlan:
    """The write that puts the object back as it was before ``execution`` (pure). ``before``
    is its before-image with the values a Secret's stored image holds only as digests
    (``UndoStack.before_image``); by default, the stored one."""
    label = _label(execution)
    if execution.operation == "create":
        if current is None:
            return WritePlan("replace", None, None, "")  # already gone: nothing to do
        return WritePlan("delete", current, None, yaml_diff(current, None, label=label))
    before = before if before is not None else execution.before_image
    if before is None:
        raise errors.Invalid(f"execution {execution.id} has no before-image to restore")
    if execution.operation == "delete":
        restored = for_create(before)
        if current is not None:
            if not force:
                raise errors.UndoConflict(
                    f"{label} was re-created since Stratus deleted it; undo would replace it",
                    yaml_diff(restored, current, label=label, old="deleted by Stratus", new="now"),
                    subject=label,
                )
            restored["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            return WritePlan(
                "replace", current, restored, yaml_diff(current, restored, label=label)
            )
        return WritePlan("create", None, restored, yaml_diff(None, restored, label=label))
    # A replace: compare what is there with what Stratus wrote.
    if current is None:
        if not force:
            raise errors.UndoConflict(
                f"{label} was deleted since Stratus changed it; undo would re-create it",
                "",
                subject=label,
            )
        restored = for_create(before)
        return WritePlan("create", None, restored, yaml_diff(None, restored, label=label))
    moved = not secrets.same_stored(current, execution.planned_after)
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
    return WritePlan("replace", current, restored, yaml_diff(current, restored, label=label))


def off_the_stack(entry: UndoEntry) -> str:
    """How an entry left the stack, saying who and when only where the record knows them:
    ``was already undone by cli:bob at 2025-…``, ``was dropped from the stack``."""
    if entry.state == NO_INVERSE:
        return "cannot be undone (the write is irreversible)"
    what = "was already undone" if entry.state == UNDONE else "was dropped from the stack"
    by = f" by {entry.undone_by}" if entry.undone_by else ""
    at = f" at {entry.undone_at}" if entry.undone_at else ""
    return what + by + at


class UndoStack:
    """Undo entries and the mechanics of undoing one. Deciding *whether* to undo (policy,
    approval, events) belongs to the proposal service, which calls ``undo`` once approved."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self.entries = UndoEntries(executor.store)

    def entry(self, entry_id: str) -> UndoEntry:
        """An entry that can be undone now, or an error that says why not."""
        entry = self.entries.get(entry_id)
        if entry is None:
            raise errors.NotFound(f"no undo entry {entry_id}", subject=entry_id)
        if entry.state == NO_INVERSE:
            raise errors.Invalid(
                f"{entry_id} cannot be undone: {entry.execution.intent} is irreversible",
                subject=entry_id,
            )
        if entry.state in (UNDONE, DROPPED):
            raise errors.Invalid(f"{entry_id} {off_the_stack(entry)}", subject=entry_id)
        # Active, as stored: the audit log must not say it already left the stack.
        left = entry_left(self.executor.store, entry.id, entry.execution.id)
        if left is not None or entry.execution.action in IRREVERSIBLE:
            raise errors.Tampered(
                f"{entry_id} was put back on the undo stack outside Stratus (it was "
                f"{left or 'never undoable: the write is irreversible'}); undo refuses it "
                "(see `stratus audit verify`)",
                subject=entry_id,
            )
        return entry

    def before_image(self, execution: Execution) -> dict[str, Any] | None:
        """The before-image undo writes: the stored one, or for a Secret the stored one with
        the values its keeper holds in the cluster (``tools.secrets``)."""
        stored = execution.before_image
        if not secrets.is_secret(stored) or execution.operation == "create":
            return stored
        assert stored is not None
        ref = secrets.keeper_ref(execution.id, execution.namespace)
        kept = self.executor.kube.find(ref)
        return secrets.restored(stored, kept, execution_id=execution.id)

    def undo(
        self,
        entry_id: str,
        *,
        actor: str,
        force: bool = False,
        guard: Guard | None = None,
        on_applied: OnApplied | None = None,
        proposal_id: str | None = None,
    ) -> UndoResult:
        entry = self.entry(entry_id)
        execution = entry.execution
        ref = check_record(execution, self.executor.store)
        try:
            before = self.before_image(execution)
            outcome = self.executor.run(
                ref,
                lambda current: plan_inverse(execution, current, force=force, before=before),
                action="undo",
                actor=actor,
                intent=f"Undo: {execution.intent}",
                guard=guard,
                on_applied=on_applied,
                proposal_id=proposal_id,
                incident_id=execution.incident_id,
                transaction_id=execution.transaction_id,
                inverse_of=execution.id,
            )
        except errors.UndoConflict as conflict:
            message = f"{conflict.message}; {self._who_changed(execution)}"
            self.entries.record_failure(entry_id, message)
            raise errors.UndoConflict(message, conflict.diff, subject=conflict.subject) from (
                conflict
            )
        except errors.OutcomeUnknown:
            raise  # not a failure: the inverse may have landed (recovery decides)
        except errors.ToolError as error:
            self.entries.record_failure(entry_id, error.message)
            raise
        if not outcome.applied:
            # Nothing left to restore (the object is already as it was): the entry is done.
            self.entries.mark_undone(entry_id, actor)
        finished = self.entries.get(entry_id)
        if finished is None or finished.state != UNDONE:
            raise errors.Conflict(f"{entry_id} was not marked undone", subject=entry_id)
        if secrets.is_secret(execution.before_image):
            self.executor.forget_secret(execution.id, execution.namespace)
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
