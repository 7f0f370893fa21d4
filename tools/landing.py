"""Did a write land? Pure answers from the object as it is now and the images a write was
planned with: recovery (``tools.executor``) decides from them whether a write whose answer was
lost was applied, can still land, or was overtaken.
"""

from __future__ import annotations

from typing import Any

from store.records import Execution
from tools import secrets
from tools.objects import normalized


def was_applied(
    operation: str,
    current: dict[str, Any] | None,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> str:
    """'yes', 'unsure' (neither before nor after: someone changed it since) or ''."""
    if operation == "delete":
        same = (
            current is not None
            and before is not None
            and current["metadata"].get("uid") == before["metadata"].get("uid")
        )
        return "" if same else "yes"
    if operation == "create":
        return "yes" if current is not None else ""
    if current is None:
        return "unsure"
    # Stored images of a Secret carry digests, so objects are compared as stored.
    now = normalized(secrets.stored_image(current))
    wanted = normalized(secrets.stored_image(after))
    was = normalized(secrets.stored_image(before))
    if now == wanted:
        return "yes"
    if now == was:
        return ""
    # Someone else changed the object too. If none of the fields the write changes shows
    # its value, the object bears no trace of it (it was overtaken, or undone by hand).
    changed = _changed_paths(was, wanted, ())
    if changed and all(_at(now, path) == _at(was, path) for path in changed):
        return ""
    return "unsure"


_MISSING = object()


def _changed_paths(before: Any, after: Any, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The paths of the leaves that differ (a list is one leaf)."""
    if isinstance(before, dict) and isinstance(after, dict):
        paths: list[tuple[str, ...]] = []
        for key in sorted(before.keys() | after.keys()):
            paths += _changed_paths(
                before.get(key, _MISSING), after.get(key, _MISSING), (*prefix, key)
            )
        return paths
    return [] if before == after else [prefix]


def _at(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def planned_rv(execution: Execution) -> str:
    """The resourceVersion a write was planned on, from its sealed before-image (the
    ``before_rv`` column is a copy the record's digest does not cover)."""
    meta = (execution.before_image or {}).get("metadata") or {}
    return str(meta.get("resourceVersion") or "")


def moved_past(operation: str, current: dict[str, Any] | None, before_rv: str | None) -> str:
    """The object's resourceVersion when it moved past the one a replace or delete was
    planned on (both carry it as a precondition, so such a write can no longer land); ''
    otherwise. A create has no precondition: only time settles it."""
    if operation == "create" or current is None or not before_rv:
        return ""
    now = str((current.get("metadata") or {}).get("resourceVersion") or "")
    return now if now and now != before_rv else ""
