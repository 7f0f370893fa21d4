"""PromQL built from names, never by pasting them.

A namespace or service name goes into a query only as a quoted label value, after it passed the
same Kubernetes name validation every other tool applies (``tools.names``): a name such as
``a"} or vector(1) #`` is refused before a query exists, and the quoting below would still keep
it inside its string if validation were ever skipped. Label names are checked against
Prometheus' own grammar. Range durations are written in Prometheus' units from seconds.
"""

from __future__ import annotations

import re

from tools.errors import Invalid
from tools.names import check_name, check_namespace

_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# RE2's metacharacters: a name used inside =~ must match itself only.
_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def string(value: str) -> str:
    """``value`` as a PromQL double-quoted string literal (backslash, quote and line breaks
    escaped), so nothing in it can end the string."""
    escaped = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"'


def regex_literal(value: str) -> str:
    """An RE2 pattern matching exactly ``value`` (its metacharacters escaped)."""
    return _RE2_SPECIAL.sub(r"\\\1", value)


def label_name(name: str) -> str:
    if not _LABEL_NAME.fullmatch(name):
        raise Invalid(f"{name!r} is not a Prometheus label name")
    return name


def namespace(value: str) -> str:
    """A namespace as a quoted label value, validated first."""
    return string(check_namespace(value))


def service(value: str) -> str:
    """A Service (or workload) name as a quoted label value, validated first."""
    return string(check_name("Service", value))


def selector(*matchers: tuple[str, str, str]) -> str:
    """``{name op "value", …}`` from (label, operator, already-quoted value) triples."""
    parts = []
    for name, operator, quoted in matchers:
        if operator not in ("=", "!=", "=~", "!~"):
            raise Invalid(f"{operator!r} is not a PromQL matcher")
        if not (quoted.startswith('"') and quoted.endswith('"')):
            raise Invalid("a PromQL matcher value must be quoted with promql.string")
        parts.append(f"{label_name(name)}{operator}{quoted}")
    return "{" + ",".join(parts) + "}"


def seconds(duration: str) -> float:
    """A Prometheus-style duration (``5m``, ``90s``, ``1h``; a bare number is seconds)."""
    found = _DURATION.fullmatch(duration)
    if not found:
        raise Invalid(f"{duration!r} is not a duration such as 30s, 5m or 1h")
    return int(found.group(1)) * _UNIT_SECONDS[found.group(2) or "s"]


def duration(total_seconds: float) -> str:
    """Seconds as a PromQL range (``[…]``) duration, in whole seconds (at least 1s)."""
    whole = max(round(total_seconds), 1)
    for unit, size in (("h", 3600), ("m", 60)):
        if whole % size == 0:
            return f"{whole // size}{unit}"
    return f"{whole}s"
