"""``KEY=VALUE`` parameters of a catalog action, parsed by each parameter's declared type.

Values are never guessed (YAML would read ``no`` as false, ``010`` as 8, ``~`` as null):
strings stay strings, integers are decimal, lists and maps have one explicit syntax each, and
anything else is an error that names the parameter and its type. The object a write goes to —
kind, name, namespace — comes from the target, never from a parameter.
"""

from __future__ import annotations

import json
import re
import types
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from tools.actions import Action
from tools.errors import Invalid

RESERVED = {"kind", "target", "namespace", "name"}
_DECIMAL = re.compile(r"^[+-]?[0-9]+$")


@dataclass(frozen=True)
class ParamSpec:
    """One parameter as a person reads it in ``stratus act ACTION --help``."""

    name: str  # as typed: with dashes
    type: str
    required: bool
    description: str


def _strip_none(annotation: Any) -> tuple[Any, bool]:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        optional = len(members) < len(get_args(annotation))
        if len(members) == 1:
            return members[0], optional
        return Union[tuple(members)], optional  # noqa: UP007 - rebuilt at run time
    return annotation, False


def type_name(annotation: Any) -> str:
    inner, _ = _strip_none(annotation)
    origin = get_origin(inner)
    if inner is int:
        return "integer"
    if inner is str:
        return "string"
    if inner is bool:
        return "true|false"
    if origin is Literal:
        return "one of " + "|".join(str(a) for a in get_args(inner))
    if origin in (Union, types.UnionType):
        return " or ".join(type_name(a) for a in get_args(inner))
    if origin is list:
        item = get_args(inner)[0] if get_args(inner) else None
        model = _item_model(item)
        if model is not None:
            return f"list: {model.text_syntax}, comma-separated, or a JSON array of objects"
        return "list (JSON array)"
    if origin is dict:
        return "map (k=v,k2=v2 or a JSON object)"
    return str(inner)


def _with_article(name: str) -> str:
    """``integer`` → ``an integer``; ``one of a|b`` and ``true|false`` read without one."""
    if name == "true|false":
        return "true or false"
    if name.startswith("one of "):
        return name
    return ("an " if name[:1] in "aeiou" else "a ") + name


def _fields(cls: type[Action]) -> dict[str, FieldInfo]:
    return {k: v for k, v in cls.model_fields.items() if k not in RESERVED}


def specs(cls: type[Action]) -> list[ParamSpec]:
    return [
        ParamSpec(
            key.replace("_", "-"),
            type_name(info.annotation),
            info.is_required(),
            info.description or "",
        )
        for key, info in _fields(cls).items()
    ]


def _integer(text: str) -> int:
    if not _DECIMAL.fullmatch(text.strip()):
        raise ValueError("expected a decimal integer")
    return int(text.strip(), 10)


def _convert(annotation: Any, text: str) -> Any:
    inner, _ = _strip_none(annotation)
    origin = get_origin(inner)
    if inner is str:
        return text
    if inner is int:
        return _integer(text)
    if inner is bool:
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        raise ValueError("expected true or false")
    if origin is Literal:
        if text in get_args(inner):
            return text
        raise ValueError(f"expected {type_name(inner)}")
    if origin in (Union, types.UnionType):
        members = get_args(inner)
        if int in members and _DECIMAL.fullmatch(text.strip()):
            return _integer(text)
        if str in members:
            return text
        raise ValueError(f"expected {type_name(inner)}")
    if origin is list and get_args(inner) and _item_model(get_args(inner)[0]) is not None:
        return _model_list(get_args(inner)[0], text)
    if origin is list:
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError('expected a JSON array, e.g. ["/bin/app","--flag"]') from exc
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError('expected a JSON array of strings, e.g. ["/bin/app","--flag"]')
        return value
    if origin is dict:
        return _mapping(text)
    raise ValueError(f"unsupported parameter type {inner}")


def _item_model(item: Any) -> Any:
    """A pydantic model that reads its own one-line text form (``from_text``), or None."""
    if isinstance(item, type) and issubclass(item, BaseModel) and hasattr(item, "from_text"):
        return item
    return None


def _model_list(item: Any, text: str) -> list[Any]:
    """Items of a model list: a JSON array of objects, or text forms separated by commas."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            value = json.loads(stripped)
        except ValueError as exc:
            raise ValueError("expected a JSON array of objects") from exc
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise ValueError("expected a JSON array of objects")
        return value
    return [item.from_text(part) for part in stripped.split(",") if part.strip()]


def _mapping(text: str) -> dict[str, Any]:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except ValueError as exc:
            raise ValueError("expected a JSON object") from exc
        if not isinstance(value, dict):
            raise ValueError("expected a JSON object")
        return value
    result: dict[str, Any] = {}
    for part in stripped.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ValueError("expected k=v,k2=v2 or a JSON object")
        result[key.strip()] = value
    return result


def parse(cls: type[Action], pairs: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` pairs for ``cls``; keys may use ``-`` or ``_``."""
    fields = _fields(cls)
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        field = key.strip().replace("-", "_")
        if not sep or not field:
            raise Invalid(f"expected KEY=VALUE, got {pair!r}")
        if field in RESERVED:
            raise Invalid(
                f"{key!r} cannot be a parameter: the target and -n NAMESPACE say which object "
                "is written"
            )
        info = fields.get(field)
        if info is None:
            known = ", ".join(k.replace("_", "-") for k in fields) or "none"
            raise Invalid(f"{cls.name} has no parameter {key!r}; its parameters: {known}")
        if field in params:
            raise Invalid(f"parameter {key!r} is given twice")
        try:
            params[field] = _convert(info.annotation, value)
        except ValueError as exc:
            raise Invalid(
                f"parameter {key!r} of {cls.name} is {_with_article(type_name(info.annotation))}"
                f": {exc} "
                f"(got {value!r})"
            ) from exc
    return params


def parse_labels(pairs: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``KEY=VALUE`` label pairs: values are always strings."""
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise Invalid(f"expected KEY=VALUE, got {pair!r}")
        labels[key] = value
    return labels
