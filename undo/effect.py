"""What an undo does to its object, as fields: which values go back to what, or that the object
is deleted or re-created. A pure function of the object as it is and as undo would write it.

Why: an undo proposal's intent is the original write's ("Undo: Scale deployment/geo to 3"),
which names what Stratus once meant, not what approving the undo does now. A person deciding
whether to approve needs the effect ("replicas back to 0"); surfaces word these fields
(``bot.text``), this module only finds them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tools.objects import normalized

REPLACE, CREATE, DELETE, NOTHING = "replace", "create", "delete", "nothing"
# Prefixes a person does not say: "replicas", not "spec.replicas".
_SPOKEN_PREFIXES = ("spec.template.spec.", "spec.template.", "spec.")
VALUE_CHARS = 60


@dataclass(frozen=True)
class FieldChange:
    """One field undo sets: ``path`` as a person reads it (``replicas``,
    ``containers[app].image``), its value now and the value it goes back to (None: unset)."""

    path: str
    now: str | None
    back_to: str | None


@dataclass(frozen=True)
class UndoEffect:
    """What an undo writes: ``operation`` is replace (``changes`` lists the fields), create
    (the object Stratus deleted comes back), delete (the object Stratus created goes) or
    nothing (it already is as before)."""

    operation: str
    label: str  # deployment/geo
    changes: tuple[FieldChange, ...] = ()


def effect_of(
    now: dict[str, Any] | None, restored: dict[str, Any] | None, *, label: str
) -> UndoEffect:
    """The effect of writing ``restored`` over ``now`` (either None: absent)."""
    if now is None and restored is None:
        return UndoEffect(NOTHING, label)
    if now is None:
        return UndoEffect(CREATE, label)
    if restored is None:
        return UndoEffect(DELETE, label)
    changes = tuple(_changes(normalized(now) or {}, normalized(restored) or {}, ""))
    return UndoEffect(REPLACE if changes else NOTHING, label, changes)


def _changes(now: Any, back: Any, path: str) -> list[FieldChange]:
    if isinstance(now, dict) and isinstance(back, dict):
        found: list[FieldChange] = []
        for key in sorted(set(now) | set(back), key=str):
            if key == "metadata" and not path:
                found += _metadata(now.get(key) or {}, back.get(key) or {})
                continue
            sub = f"{path}.{key}" if path else str(key)
            found += _changes(now.get(key), back.get(key), sub)
        return found
    if _named_list(now) and _named_list(back):
        found = []
        mine = {item["name"]: item for item in now}
        theirs = {item["name"]: item for item in back}
        for name in sorted(set(mine) | set(theirs)):
            found += _changes(mine.get(name), theirs.get(name), f"{path}[{name}]")
        return found
    if now == back:
        return []
    return [FieldChange(_spoken(path), _shown(now), _shown(back))]


def _metadata(now: dict[str, Any], back: dict[str, Any]) -> list[FieldChange]:
    """Only labels and annotations: the rest of metadata is the server's or the name."""
    found: list[FieldChange] = []
    for part in ("labels", "annotations"):
        found += _changes(now.get(part) or {}, back.get(part) or {}, part)
    return found


def _named_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, dict) and isinstance(item.get("name"), str) for item in value)
        and len({item["name"] for item in value}) == len(value)
    )


def _spoken(path: str) -> str:
    for prefix in _SPOKEN_PREFIXES:
        if path.startswith(prefix):
            return path.removeprefix(prefix)
    return path


def _shown(value: Any) -> str | None:
    if value is None:
        return None
    shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return shown if len(shown) <= VALUE_CHARS else shown[: VALUE_CHARS - 1] + "…"
