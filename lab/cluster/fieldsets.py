"""Field paths and field sets, the vocabulary of server-side apply's ownership model.

A field set is the set of paths a manager owns, as sigs.k8s.io/structured-merge-diff models it:
``f:name`` steps into a field, ``k:{"name":"web"}`` into the item of an associative list with
those key values, ``v:"x"`` names a member of a set-like list of scalars. The set travels in
``metadata.managedFields[].fieldsV1`` as a tree whose ``"."`` entry marks a node that is itself
a member. Which lists are associative, and under which keys, follows the list-map keys of the
built-in types' OpenAPI schema; everything else (``args``, ``tolerations``, label selectors) is
atomic: owned, compared and replaced as one value.
"""

from __future__ import annotations

import copy
import json
from typing import Any

Path = tuple[str, ...]
FieldSet = set[Path]

# Metadata the server sets, and the identity of the object: never owned by a manager.
_UNMANAGED_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)
_LIST_MAP_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "imagePullSecrets": ("name",),
    "hostAliases": ("ip",),
    "ownerReferences": ("uid",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "resourceClaims": ("name",),
    "conditions": ("type",),
}
_SET_LISTS = frozenset({"finalizers"})
# Maps and structs the schema marks atomic (x-kubernetes-map-type: atomic).
_ATOMIC_MAPS = frozenset({"selector", "nodeSelector", "labelSelector", "namespaceSelector"})
# A key field the server defaults: an item that leaves it out is keyed by the default.
_KEY_DEFAULTS = {"protocol": "TCP"}


def list_keys(names: tuple[str, ...], kind: str) -> tuple[str, ...] | None:
    """The list-map keys of the list at ``names`` (field names only), None when it has none."""
    field = names[-1] if names else ""
    if field == "ports":
        if kind == "Service" and names == ("spec", "ports"):
            return ("port", "protocol")
        if len(names) >= 2 and names[-2] in ("containers", "initContainers", "ephemeralContainers"):
            return ("containerPort", "protocol")
        return None
    return _LIST_MAP_KEYS.get(field)


def _atomic_map(names: tuple[str, ...], kind: str) -> bool:
    # A Service's selector is a plain label map, atomic too; a Deployment's is a LabelSelector.
    return bool(names) and names[-1] in _ATOMIC_MAPS


def key_element(item: Any, keys: tuple[str, ...]) -> str:
    """The ``k:`` path element of one associative-list item (its key fields, sorted)."""
    values = item if isinstance(item, dict) else {}
    key = {k: values.get(k, _KEY_DEFAULTS.get(k)) for k in sorted(keys)}
    present = {k: v for k, v in key.items() if v is not None}
    return "k:" + json.dumps(present, separators=(",", ":"), sort_keys=True)


def value_element(value: Any) -> str:
    return "v:" + json.dumps(value, separators=(",", ":"), sort_keys=True)


def _children(obj: dict[str, Any], top: bool) -> dict[str, Any]:
    """The fields of ``obj`` that may be owned (at the top: no identity, no status)."""
    if not top:
        return obj
    result = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "status")}
    meta = result.get("metadata")
    if isinstance(meta, dict):
        result["metadata"] = {k: v for k, v in meta.items() if k not in _UNMANAGED_METADATA}
    return result


def applied_set(obj: dict[str, Any], kind: str) -> FieldSet:
    """The fields an apply configuration sets: its leaves and its list items."""
    out: FieldSet = set()
    for key, value in _children(obj, True).items():
        _collect(value, (f"f:{key}",), (key,), kind, out, with_nodes=False)
    return {p for p in out if p}


def _collect(
    value: Any, path: Path, names: tuple[str, ...], kind: str, out: FieldSet, *, with_nodes: bool
) -> None:
    """Add the paths of ``value`` at ``path``; ``with_nodes`` also adds maps and lists themselves
    (what an update that created them owns, the ``".": {}`` of its entry)."""
    if isinstance(value, dict):
        if not value or _atomic_map(names, kind):
            out.add(path)
            return
        if with_nodes and len(path) > 1:
            out.add(path)
        for key, child in value.items():
            _collect(child, (*path, f"f:{key}"), (*names, key), kind, out, with_nodes=with_nodes)
        return
    if isinstance(value, list):
        keys = list_keys(names, kind)
        if keys is not None and all(isinstance(i, dict) for i in value):
            if with_nodes:
                out.add(path)
            for item in value:
                item_path = (*path, key_element(item, keys))
                out.add(item_path)
                for key, child in item.items():
                    _collect(
                        child,
                        (*item_path, f"f:{key}"),
                        (*names, key),
                        kind,
                        out,
                        with_nodes=with_nodes,
                    )
            return
        if names and names[-1] in _SET_LISTS:
            if with_nodes:
                out.add(path)
            out.update((*path, value_element(v)) for v in value)
            return
    out.add(path)


def compare(old: dict[str, Any], new: dict[str, Any], kind: str) -> tuple[FieldSet, FieldSet]:
    """(changed, removed): the paths whose value ``new`` adds or changes, and those it drops."""
    changed: FieldSet = set()
    removed: FieldSet = set()
    before, after = _children(old, True), _children(new, True)
    for key in before.keys() | after.keys():
        _compare(before.get(key), after.get(key), (f"f:{key}",), (key,), kind, changed, removed)
    return changed, removed


def _compare(
    old: Any,
    new: Any,
    path: Path,
    names: tuple[str, ...],
    kind: str,
    changed: FieldSet,
    removed: FieldSet,
) -> None:
    if old is None and new is None:
        return
    if old is None:
        _collect(new, path, names, kind, changed, with_nodes=True)
        return
    if new is None:
        _collect(old, path, names, kind, removed, with_nodes=True)
        return
    if isinstance(old, dict) and isinstance(new, dict) and not _atomic_map(names, kind):
        if bool(old) != bool(new):
            changed.add(path)
        for key in old.keys() | new.keys():
            _compare(
                old.get(key),
                new.get(key),
                (*path, f"f:{key}"),
                (*names, key),
                kind,
                changed,
                removed,
            )
        return
    if isinstance(old, list) and isinstance(new, list):
        keys = list_keys(names, kind)
        if keys is not None and all(isinstance(i, dict) for i in old + new):
            before = {key_element(i, keys): i for i in old}
            after = {key_element(i, keys): i for i in new}
            for element in before.keys() | after.keys():
                item_path = (*path, element)
                if element not in before:
                    changed.add(item_path)
                elif element not in after:
                    removed.add(item_path)
                for key in (before.get(element) or {}).keys() | (after.get(element) or {}).keys():
                    _compare(
                        (before.get(element) or {}).get(key),
                        (after.get(element) or {}).get(key),
                        (*item_path, f"f:{key}"),
                        (*names, key),
                        kind,
                        changed,
                        removed,
                    )
            return
        if names and names[-1] in _SET_LISTS:
            olds = {value_element(v) for v in old}
            news = {value_element(v) for v in new}
            changed.update((*path, e) for e in news - olds)
            removed.update((*path, e) for e in olds - news)
            return
    if old != new:
        changed.add(path)


# ------------------------------------------------------------------ merge and removal


def merge(live: Any, config: Any, names: tuple[str, ...], kind: str) -> Any:
    """Structured merge of an apply configuration onto the live value."""
    if isinstance(live, dict) and isinstance(config, dict) and not _atomic_map(names, kind):
        result = dict(live)
        for key, value in config.items():
            if value is None:
                result.pop(key, None)
            else:
                result[key] = merge(live.get(key), value, (*names, key), kind)
        return result
    if isinstance(live, list) and isinstance(config, list):
        keys = list_keys(names, kind)
        if keys is not None and all(isinstance(i, dict) for i in live + config):
            merged = [copy.deepcopy(i) for i in live]
            index = {key_element(i, keys): n for n, i in enumerate(merged)}
            for item in config:
                element = key_element(item, keys)
                if element in index:
                    merged[index[element]] = merge(merged[index[element]], item, names, kind)
                else:
                    index[element] = len(merged)
                    merged.append(copy.deepcopy(item))
            return merged
        if names and names[-1] in _SET_LISTS:
            return list(live) + [v for v in config if v not in live]
    return copy.deepcopy(config)


def remove(obj: dict[str, Any], path: Path) -> None:
    """Take the field at ``path`` out of ``obj`` (nothing happens when it is not there)."""
    parent: Any = obj
    for element in path[:-1]:
        parent = _step(parent, element)
        if parent is None:
            return
    last = path[-1]
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif isinstance(parent, list):
        parent[:] = [i for i in parent if not _matches(i, last)]


def _step(node: Any, element: str) -> Any:
    if element.startswith("f:"):
        return node.get(element[2:]) if isinstance(node, dict) else None
    if isinstance(node, list):
        return next((i for i in node if _matches(i, element)), None)
    return None


def _matches(item: Any, element: str) -> bool:
    if element.startswith("v:"):
        return bool(value_element(item) == element)
    if element.startswith("k:") and isinstance(item, dict):
        keys = tuple(json.loads(element[2:]))
        return key_element(item, keys) == element
    return False


# ------------------------------------------------------------------ the wire forms


def to_fields_v1(paths: FieldSet) -> dict[str, Any]:
    """The ``fieldsV1`` tree of a set: a member with children carries ``".": {}``."""
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for element in path:
            node = node.setdefault(element, {})
    for path in paths:
        node = tree
        for element in path:
            node = node[element]
        if node:
            node["."] = {}
    return tree


def from_fields_v1(tree: Any, prefix: Path = ()) -> FieldSet:
    out: FieldSet = set()
    if not isinstance(tree, dict):
        return out
    if prefix and (not tree or "." in tree):
        out.add(prefix)
    for element, child in tree.items():
        if element != ".":
            out |= from_fields_v1(child, (*prefix, element))
    return out


def describe(path: Path) -> str:
    """A path as the server prints it in a conflict: ``.spec.containers[name="web"].image``."""
    text = []
    for element in path:
        if element.startswith("f:"):
            text.append(f".{element[2:]}")
        elif element.startswith("k:"):
            key = json.loads(element[2:])
            inner = ",".join(f"{k}={json.dumps(v)}" for k, v in key.items())
            text.append(f"[{inner}]")
        elif element.startswith("v:"):
            text.append(f"[={element[2:]}]")
        else:
            text.append(f"[{element[2:]}]")
    return "".join(text)
