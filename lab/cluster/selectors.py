"""Label and field selectors: parsing the query-string syntax and matching objects.

Label selectors support ``=``, ``==``, ``!=``, ``in``, ``notin``, ``key`` and ``!key``; field
selectors ``=``, ``==`` and ``!=`` on the fields each resource type declares.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lab.cluster.errors import bad_request

_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # one of: =, !=, in, notin, exists, !exists
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "exists":
            return present
        if self.operator == "!exists":
            return not present
        if self.operator in ("=", "in"):
            return present and labels[self.key] in self.values
        # != and notin also match objects that lack the key, as in Kubernetes.
        return not present or labels[self.key] not in self.values


LabelSelector = tuple[Requirement, ...]


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _check_key(key: str, source: str) -> str:
    if not _KEY.match(key) or len(key.rsplit("/", maxsplit=1)[-1]) > 63:
        raise bad_request(f'unable to parse requirement: invalid label key "{key}" in "{source}"')
    return key


def _check_value(value: str, source: str) -> str:
    if not _VALUE.match(value) or len(value) > 63:
        raise bad_request(
            f'unable to parse requirement: invalid label value: "{value}" in "{source}"'
        )
    return value


_SET_EXPR = re.compile(r"^(?P<key>[^\s!=()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse ``?labelSelector=``; raises a 400 ApiError naming the bad part."""
    if not text:
        return ()
    requirements: list[Requirement] = []
    for part in _split_top_level(text):
        set_expr = _SET_EXPR.match(part)
        if set_expr:
            values = tuple(
                _check_value(v.strip(), text) for v in set_expr["values"].split(",") if v.strip()
            )
            if not values:
                raise bad_request(f'unable to parse requirement: empty value set in "{text}"')
            requirements.append(
                Requirement(_check_key(set_expr["key"], text), set_expr["op"], values)
            )
            continue
        for op, name in (("!=", "!="), ("==", "="), ("=", "=")):
            if op in part:
                key, _, value = part.partition(op)
                requirements.append(
                    Requirement(
                        _check_key(key.strip(), text), name, (_check_value(value.strip(), text),)
                    )
                )
                break
        else:
            if part.startswith("!"):
                requirements.append(Requirement(_check_key(part[1:].strip(), text), "!exists"))
            else:
                requirements.append(Requirement(_check_key(part, text), "exists"))
    return tuple(requirements)


def label_selector_from_object(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``metav1.LabelSelector`` (matchLabels + matchExpressions) to requirements."""
    if not selector:
        return ()
    reqs = [Requirement(k, "=", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
    operators = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in selector.get("matchExpressions") or []:
        reqs.append(
            Requirement(expr["key"], operators[expr["operator"]], tuple(expr.get("values") or ()))
        )
    return tuple(reqs)


def matches_labels(selector: LabelSelector, labels: Mapping[str, str] | None) -> bool:
    labels = labels or {}
    return all(req.matches(labels) for req in selector)


def matches_map(selector: Mapping[str, str] | None, labels: Mapping[str, str] | None) -> bool:
    """Service-style selectors: every key/value pair must be present. Empty matches nothing."""
    if not selector:
        return False
    labels = labels or {}
    return all(labels.get(k) == v for k, v in selector.items())


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    negate: bool
    value: str


FieldSelector = tuple[FieldRequirement, ...]


def parse_field_selector(text: str | None, allowed: tuple[str, ...], kind: str) -> FieldSelector:
    if not text:
        return ()
    fields = {"metadata.name", "metadata.namespace", *allowed}
    reqs: list[FieldRequirement] = []
    for part in _split_top_level(text):
        for op, negate in (("!=", True), ("==", False), ("=", False)):
            if op in part:
                path, _, value = part.partition(op)
                path = path.strip()
                if path not in fields:
                    raise bad_request(f"field label not supported: {path}")
                reqs.append(FieldRequirement(path, negate, value.strip()))
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
    return tuple(reqs)


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    node: Any = obj
    for step in path.split("."):
        if not isinstance(node, Mapping):
            return ""
        node = node.get(step)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    if path == "source" and isinstance(node, Mapping):
        return str(node.get("component", ""))
    return str(node)


def matches_fields(selector: FieldSelector, obj: Mapping[str, Any]) -> bool:
    return all((_field_value(obj, req.path) == req.value) != req.negate for req in selector)


def object_filter(
    labels: LabelSelector, fields: FieldSelector
) -> Callable[[Mapping[str, Any]], bool]:
    def accept(obj: Mapping[str, Any]) -> bool:
        return matches_labels(labels, obj.get("metadata", {}).get("labels")) and matches_fields(
            fields, obj
        )

    return accept
