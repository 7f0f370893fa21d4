"""Undoing executed writes: exact inverses with conflict detection.

An undo re-reads the object. If what a human would see (spec, labels, annotations — not
status or server-set fields) moved since Stratus wrote it, the undo refuses with a diff of what
changed, unless forced. Otherwise it replaces the object with the before-image — a full
replace, so fields the action added disappear. Deletes are undone by re-creating the
before-image without its server-set fields; a deleted controller-owned pod needs no inverse.
Undo runs through the same executor as any write (scope, lock, dry-run, audit) — an undo is a
proposal, executed by ``proposals/execute.py`` — and an entry leaves the stack only after its
inverse succeeded.
"""

from __future__ import annotations

from typing import Any

from store import integrity
from store.audit import AuditLog
from store.db import Store
from store.records import Execution, audited_digest, entry_left
from tools import errors, secrets
from tools.actions import WritePlan
from tools.executor import Executor
from tools.objects import ObjectRef, same_object
from undo import inverse
from undo.entries import DROPPED, NO_INVERSE, UNDONE, UndoEntries, UndoEntry
from undo.inverse import IRREVERSIBLE, WrittenImages


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


def images_of(execution: Execution, before: dict[str, Any] | None = None) -> WrittenImages:
    """What ``plan_inverse`` needs from a record: ``before`` is its before-image with the
    values a Secret's stored image holds only as digests (``UndoStack.before_image``); by
    default, the stored one."""
    return WrittenImages(
        record=execution.id,
        operation=execution.operation,
        label=_label(execution),
        before=before if before is not None else execution.before_image,
        written=execution.planned_after,
        written_rv=execution.written_rv,
    )


def plan_inverse(
    execution: Execution,
    current: dict[str, Any] | None,
    *,
    force: bool,
    before: dict[str, Any] | None = None,
) -> WritePlan:
    """The write that puts the object back as it was before ``execution`` (pure:
    ``undo.inverse.plan_inverse`` over the record's images)."""
    return inverse.plan_inverse(images_of(execution, before), current, force=force)


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
    """Undo entries and what undoing one needs: the entry if it can be undone, the
    before-image to restore, who changed the object since. Deciding *whether* to undo, and
    writing the inverse, belong to the proposal service."""

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
                f"{left or 'never undoable: the write is irreversible'}); undo refuses it",
                subject=entry_id,
                details={"record": "undo entry"},
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

    def who_changed(self, execution: Execution) -> tuple[str, ...]:
        """The later Stratus writes to the same object, as ``actor (intent)``; none: it was
        changed outside Stratus."""
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
        return tuple(f"{r['actor']} ({r['intent']})" for r in later)
