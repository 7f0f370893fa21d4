"""The inverse of a write, as a pure function: the images Stratus stored and the object as it
is now in, the write that puts the object back out (or an ``UndoConflict`` saying what moved).

No cluster, no store, no clock: the undo use-case reads the object and the record, calls
``plan_inverse`` and hands the plan to the executor, so every case (a replace overtaken by
someone, a delete re-created since, a create already gone) is testable as dicts in, dicts out.
Whether a write has an inverse at all (``IRREVERSIBLE``) is decided here too.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tools import secrets
from tools.actions import CATALOG, WritePlan
from tools.errors import Invalid
from tools.objects import for_create, yaml_diff
from undo.conflicts import DELETED, MOVED, RECREATED, UndoConflict

# Actions whose write has no inverse: they stay on the record, never on the undo stack.
IRREVERSIBLE = frozenset(name for name, cls in CATALOG.items() if not cls.reversible)


def is_reversible(action: str) -> bool:
    """Whether a write of ``action`` gets an undo entry that can be undone."""
    return action not in IRREVERSIBLE


@dataclass(frozen=True, kw_only=True)
class WrittenImages:
    """What the record of one write holds, as undo needs it: the operation, the object's label
    (``deployment/geo``), the before-image to restore, the after-image Stratus wrote and the
    resourceVersion the write produced."""

    record: str  # the execution id, for errors
    operation: str  # replace, create or delete
    label: str
    before: dict[str, Any] | None
    written: dict[str, Any] | None
    written_rv: str | None = None


def plan_inverse(
    images: WrittenImages, current: dict[str, Any] | None, *, force: bool
) -> WritePlan:
    """The write that undoes ``images`` given the object ``current`` (None: it is gone).

    Creates are undone by deleting what is there; deletes by re-creating the before-image
    without its server-set fields; replaces by a full replace with the before-image (fields
    the action added disappear). When what a human would see moved since Stratus wrote it,
    an ``UndoConflict`` carries the diff — unless ``force``."""
    label = images.label
    if images.operation == "create":
        if current is None:
            return WritePlan("replace", None, None, "")  # already gone: nothing to do
        return WritePlan("delete", current, None, yaml_diff(current, None, label=label))
    before = images.before
    if before is None:
        raise Invalid(f"execution {images.record} has no before-image to restore")
    if images.operation == "delete":
        restored = for_create(before)
        if current is not None:
            if not force:
                raise UndoConflict(
                    situation=RECREATED,
                    label=label,
                    diff=yaml_diff(
                        restored, current, label=label, old="deleted by Stratus", new="now"
                    ),
                    current_rv=_rv(current),
                )
            restored["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            return WritePlan(
                "replace", current, restored, yaml_diff(current, restored, label=label)
            )
        return WritePlan("create", None, restored, yaml_diff(None, restored, label=label))
    if current is None:
        if not force:
            raise UndoConflict(situation=DELETED, label=label, written_rv=images.written_rv)
        restored = for_create(before)
        return WritePlan("create", None, restored, yaml_diff(None, restored, label=label))
    # A Secret's stored images carry digests: compare what is there as it would be stored.
    if not secrets.same_stored(current, images.written) and not force:
        raise UndoConflict(
            situation=MOVED,
            label=label,
            diff=yaml_diff(
                images.written, current, label=label, old="as Stratus wrote it", new="now"
            ),
            written_rv=images.written_rv,
            current_rv=_rv(current),
        )
    restored = copy.deepcopy(before)
    restored.pop("status", None)
    restored["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    return WritePlan("replace", current, restored, yaml_diff(current, restored, label=label))


def _rv(obj: dict[str, Any]) -> str | None:
    found = (obj.get("metadata") or {}).get("resourceVersion")
    return str(found) if found is not None else None
