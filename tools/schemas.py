"""The action catalog as JSON Schema, and parameters checked against it before anything else.

An outside agent (an MCP client, docs/mcp.md) sends parameters as JSON, not ``KEY=VALUE``
text: each action's typed parameters are exported from its model (the object written —
kind, name, namespace — comes from the target, never from a parameter), with an example, and
a call is checked here field by field, so an unknown action, an unknown or mistyped parameter
or a name that is not a Kubernetes name is an error that names the field before anything is
read, planned or proposed.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from pydantic import ValidationError

from tools import names, params
from tools.actions import CATALOG, Action
from tools.errors import Invalid

# Stamped by the propose use-case (``proposals.propose``), never asked of a caller.
STAMPED = frozenset({"restarted_at"})


class FieldInvalid(Invalid, code="invalid_field"):
    """One field of a call is wrong; ``details["field"]`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}", subject=field, details={"field": field})
        self.field = field


def _hidden(key: str) -> bool:
    return key in params.RESERVED or key in STAMPED


def params_schema(cls: type[Action]) -> dict[str, Any]:
    """The JSON Schema of ``cls``'s parameters (target and namespace are separate)."""
    full = cls.model_json_schema()
    properties = {k: v for k, v in full.get("properties", {}).items() if not _hidden(k)}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    required = [k for k in full.get("required", []) if not _hidden(k)]
    if required:
        schema["required"] = required
    if "$defs" in full:
        schema["$defs"] = full["$defs"]
    return schema


def example(cls: type[Action]) -> dict[str, Any]:
    """The catalog's example (``deployment/web replicas=3``) as a call's arguments."""
    words = shlex.split(cls.example.split("   ")[0]) if cls.example else []
    written, _, name = (words[0] if words else "").partition("/")
    kind = next((k for k in cls.kinds if k.lower() == written.lower()), cls.kinds[0])
    try:
        values = params.parse(cls, words[1:])
    except Invalid:
        values = {}
    plain = json.loads(json.dumps(values, default=lambda v: v.model_dump(mode="json")))
    return {"action": cls.name, "target": f"{kind}/{name or 'NAME'}", "params": plain}


def catalog() -> list[dict[str, Any]]:
    """Every action: name, description, kinds, risk, reversibility, schema and example."""
    return [
        {
            "action": name,
            "description": " ".join((cls.__doc__ or "").split()),
            "kinds": list(cls.kinds),
            "risk": cls.risk,
            "reversible": cls.reversible,
            "params_schema": params_schema(cls),
            "example": example(cls),
        }
        for name, cls in sorted(CATALOG.items())
    ]


def kind_of(cls: type[Action], written: str) -> str:
    """A target's kind as a caller wrote it (``deployment``, ``Deployment``) in the catalog's
    spelling, or an error naming ``target``."""
    for kind in cls.kinds:
        if written.lower() == kind.lower():
            return kind
    raise FieldInvalid("target", f"{cls.name} acts on {', '.join(cls.kinds)}, not {written!r}")


def checked(
    *, action: str, kind: str, name: str, namespace: str, given: dict[str, Any]
) -> tuple[type[Action], Action]:
    """The action class and the validated action of a call, or ``FieldInvalid``."""
    cls = CATALOG.get(action)
    if cls is None:
        raise FieldInvalid(
            "action", f"unknown action {action!r}; known actions: {', '.join(sorted(CATALOG))}"
        )
    for key in given:
        if _hidden(key) or key.replace("-", "_") not in cls.model_fields:
            known = ", ".join(k for k in cls.model_fields if not _hidden(k)) or "none"
            raise FieldInvalid(
                f"params.{key}", f"{action} has no parameter {key!r}; its parameters: {known}"
            )
    try:
        names.check_name(kind, name)
    except Invalid as exc:
        raise FieldInvalid("target", exc.message) from exc
    if kind != "Node":
        try:
            names.check_namespace(namespace)
        except Invalid as exc:
            raise FieldInvalid("namespace", exc.message) from exc
    values = {**given, "kind": kind, "target": name, "namespace": namespace}
    # Checked with a stand-in stamp: the propose use-case stamps the real one.
    values.update({k: "1970-01-01T00:00:00Z" for k in STAMPED if k in cls.model_fields})
    try:
        # Strict, as JSON: a wrong type is an error naming the field, never coerced ("1",
        # 1.0 and true were all taken as replicas 1, an outside tester found); JSON's own
        # strings still stand for times and enums.
        built = cls.model_validate_json(json.dumps(values), strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "params"
        field = where if where in ("target", "namespace", "kind") else f"params.{where}"
        raise FieldInvalid(field, str(first["msg"])) from exc
    return cls, built
