"""A change in the words a person reads at 3 a.m. — "memory limit 16Mi → 256Mi", "env LOG_LEVEL
debug → info" — never as JSON.

Revision diffs in the evidence, and anything else that shows a field before and after, were
``resources {"limits": …} → {…}``: exact, but a reader had to diff two blobs by eye at the
moment they can least afford to. These functions are pure (values in, sentences out); the
values they quote are the cluster's, so surfaces still show the result as quoted data.
"""

from __future__ import annotations

import shlex
from typing import Any

NONE = "(none)"
VALUE_LIMIT = 80  # one long value (a certificate in an env var) must not fill the line
MOST_LINES = 6  # more changed leaves than this in one field are counted, not listed
RESOURCE_WORDS = {"requests": "request", "limits": "limit"}
# Lists whose items are told apart by a field of theirs rather than by position.
KEYED_BY = ("name", "key", "containerPort", "mountPath", "port")
# Metadata a write always changes (or the server sets): no reader wants them listed.
NOISE = frozenset(
    {
        "metadata.resourceVersion",
        "metadata.generation",
        "metadata.managedFields",
        "metadata.uid",
        "metadata.creationTimestamp",
        "status",
    }
)


def _value(value: Any) -> str:
    if value is None:
        return NONE
    if value == "":
        return "''"
    if isinstance(value, bool):
        return "true" if value else "false"
    flat = " ".join(str(value).split())
    return flat if len(flat) <= VALUE_LIMIT else flat[: VALUE_LIMIT - 1] + "…"


def _item_key(item: Any, index: int) -> str:
    if isinstance(item, dict):
        for key in KEYED_BY:
            if key in item and not isinstance(item[key], (dict, list)):
                return str(item[key])
    return str(index)


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Every leaf of a nested value by its path (``limits.memory``, ``ports[http].port``); a
    list of plain values is one leaf, read as words."""
    if isinstance(value, dict):
        if not value:
            return {}
        leaves: dict[str, str] = {}
        for key in sorted(value, key=str):
            path = f"{prefix}.{key}" if prefix else str(key)
            leaves.update(flatten(value[key], path))
        return leaves
    if isinstance(value, list):
        if value and all(not isinstance(v, (dict, list)) for v in value):
            return {prefix: _value(" ".join(_value(v) for v in value))}
        leaves = {}
        for index, item in enumerate(value):
            leaves.update(flatten(item, f"{prefix}[{_item_key(item, index)}]"))
        return leaves
    return {prefix: _value(value)}


def _leaves(field: str, before: Any, after: Any) -> list[str]:
    old, new = flatten(before, field), flatten(after, field)
    lines = [
        f"{path} {old.get(path, NONE)} → {new.get(path, NONE)}"
        for path in sorted(set(old) | set(new))
        if old.get(path) != new.get(path) and not any(path.startswith(n) for n in NOISE)
    ]
    if len(lines) > MOST_LINES:
        lines = [*lines[: MOST_LINES - 1], f"and {len(lines) - MOST_LINES + 1} more in {field}"]
    return lines


def _resources(before: Any, after: Any) -> list[str]:
    lines = []
    for section, word in RESOURCE_WORDS.items():
        old = (before or {}).get(section) or {}
        new = (after or {}).get(section) or {}
        for name in sorted(set(old) | set(new)):
            if old.get(name) != new.get(name):
                lines.append(f"{name} {word} {_value(old.get(name))} → {_value(new.get(name))}")
    others = {k: v for k, v in (before or {}).items() if k not in RESOURCE_WORDS}
    more = {k: v for k, v in (after or {}).items() if k not in RESOURCE_WORDS}
    return lines + _leaves("resources", others, more)


def _source(variable: dict[str, Any]) -> str:
    if "value" in variable or "valueFrom" not in variable:
        return _value(variable.get("value", ""))
    source = variable.get("valueFrom") or {}
    for ref, kind in (("configMapKeyRef", "configmap"), ("secretKeyRef", "secret")):
        if ref in source:
            picked = source[ref] or {}
            return f"from {kind}/{_value(picked.get('name'))} key {_value(picked.get('key'))}"
    return "from " + "; ".join(f"{k} {v}" for k, v in flatten(source).items())


def _env(before: Any, after: Any) -> list[str]:
    old = {str(v.get("name")): v for v in before or [] if isinstance(v, dict)}
    new = {str(v.get("name")): v for v in after or [] if isinstance(v, dict)}
    lines = []
    for name in sorted(set(old) | set(new)):
        if name not in new:
            lines.append(f"env {name} removed (was {_source(old[name])})")
        elif name not in old:
            lines.append(f"env {name} set to {_source(new[name])}")
        elif old[name] != new[name]:
            lines.append(f"env {name} {_source(old[name])} → {_source(new[name])}")
    return lines


def _argv(value: Any) -> str:
    if not value:
        return NONE
    return _value(shlex.join(str(v) for v in value))


def _labels(field: str, before: Any, after: Any) -> list[str]:
    old, new = before or {}, after or {}
    lines = []
    for key in sorted(set(old) | set(new), key=str):
        if str(key).endswith(LAST_APPLIED_SUFFIX):
            # A whole configuration as JSON (a Secret's values in it): said, never shown.
            if old.get(key) != new.get(key):
                lines.append(f"{field} {key} changed")
        elif key not in new:
            lines.append(f"{field} {key}={_value(old[key])} removed")
        elif key not in old:
            lines.append(f"{field} {key}={_value(new[key])} added")
        elif old[key] != new[key]:
            lines.append(f"{field} {key} {_value(old[key])} → {_value(new[key])}")
    return lines


LAST_APPLIED_SUFFIX = "last-applied-configuration"
WORDS = {"nodeSelector": "node selector", "serviceAccountName": "service account"}


def field_changes(field: str, before: Any, after: Any) -> list[str]:
    """What changed in one field of a container or a pod, one phrase per change."""
    if before == after:
        return []
    if field == "resources":
        return _resources(before, after)
    if field == "env":
        return _env(before, after)
    if field in ("command", "args"):
        return [f"{field} {_argv(before)} → {_argv(after)}"]
    if field in ("nodeSelector", "labels", "annotations", "data"):
        return _labels(WORDS.get(field, field), before, after)
    if not isinstance(before, (dict, list)) and not isinstance(after, (dict, list)):
        return [f"{WORDS.get(field, field)} {_value(before)} → {_value(after)}"]
    return _leaves(field, before, after)


def object_changes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    """What a write changes in an object (any kind), one phrase per change: a workload's
    containers by name and field, everything else by the path of each changed leaf."""
    if before is None or after is None:
        return ["created" if before is None else "deleted"] if before != after else []
    lines: list[str] = []
    for section in sorted(set(before) | set(after)):
        if section in ("apiVersion", "kind", "status"):
            continue
        old, new = before.get(section), after.get(section)
        if old == new:
            continue
        if after.get("kind") == "Secret" and section in ("data", "stringData"):
            lines += _secret_keys(old or {}, new or {})  # a credential's value stays unsaid
        elif section == "metadata":
            for key in ("labels", "annotations"):
                lines += field_changes(key, (old or {}).get(key), (new or {}).get(key))
        elif section == "spec" and isinstance(old, dict) and isinstance(new, dict):
            lines += _spec(old, new)
        else:
            lines += field_changes(section, old, new)
    return lines


def _secret_keys(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    lines = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            how = "set" if key not in old else "removed" if key not in new else "changed"
            lines.append(f"secret key {key} {how}")
    return lines


def _spec(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    template_old = (old.get("template") or {}).get("spec")
    template_new = (new.get("template") or {}).get("spec")
    lines: list[str] = []
    if isinstance(template_old, dict) and isinstance(template_new, dict):
        lines += template_changes(template_old, template_new)
        for key in ("labels", "annotations"):
            lines += field_changes(
                "template " + key,
                ((old.get("template") or {}).get("metadata") or {}).get(key),
                ((new.get("template") or {}).get("metadata") or {}).get(key),
            )
        old = {k: v for k, v in old.items() if k != "template"}
        new = {k: v for k, v in new.items() if k != "template"}
    for key in sorted(set(old) | set(new)):
        lines += field_changes(key, old.get(key), new.get(key))
    return lines


def template_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """A pod spec's changes: each container's by name, then the pod's own fields."""
    lines: list[str] = []
    for group, word in (("initContainers", "init container"), ("containers", "container")):
        old = {str(c.get("name")): c for c in before.get(group) or []}
        new = {str(c.get("name")): c for c in after.get(group) or []}
        for name in sorted(set(old) | set(new)):
            if name not in old or name not in new:
                lines.append(f"{word} {name} {'added' if name not in old else 'removed'}")
                continue
            for field in sorted(set(old[name]) | set(new[name])):
                for phrase in field_changes(field, old[name].get(field), new[name].get(field)):
                    lines.append(f"{word} {name}: {phrase}")
    for field in sorted(set(before) | set(after)):
        if field not in ("containers", "initContainers"):
            lines += field_changes(field, before.get(field), after.get(field))
    return lines
