"""Alert rules written for real clusters, loaded on the lab's faster clock.

Shipped rules say ``for: 5m`` and ``rate(x[5m])``; a test or a demo cannot wait that long.
Loading divides every duration that is about time passing (``for``, ``keep_firing_for``,
a group's ``interval``, and in PromQL range selectors, subqueries and ``offset``) by the
time scale, so 5m becomes 10 s at the default scale of 30. A range never shrinks below a
few scrape intervals (``rate()`` needs two samples in its window).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

DEFAULT_TIME_SCALE = 30.0  # 5m -> 10s
_UNITS = {
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
    "y": 31536000.0,
}
_DURATION = r"(?:\d+(?:ms|s|m|h|d|w|y))+"
_PART = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")
_RANGE = re.compile(rf"\[\s*({_DURATION})\s*(?::\s*({_DURATION})?\s*)?\]")
_OFFSET = re.compile(rf"\boffset\s+(-?)({_DURATION})")
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`")


class RuleFileError(ValueError):
    """A rule file that cannot be read or is not in Prometheus' rule file shape."""


def parse_duration(text: str) -> float:
    """Seconds in a Prometheus duration (``1h30m``, ``500ms``)."""
    text = text.strip()
    if not re.fullmatch(_DURATION, text):
        raise ValueError(f"not a Prometheus duration: {text!r}")
    return sum(int(n) * _UNITS[unit] for n, unit in _PART.findall(text))


def format_duration(seconds: float) -> str:
    """A Prometheus duration for ``seconds``, in whole milliseconds."""
    millis = max(round(seconds * 1000), 0)
    if millis == 0:
        return "0s"
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"


def scale_duration(text: str, scale: float, floor: float = 0.0) -> str:
    seconds = parse_duration(text)
    if seconds == 0:
        return "0s"
    return format_duration(max(seconds / scale, floor))


def scale_expr(expr: str, scale: float, min_range: float) -> str:
    """The PromQL expression with its range selectors, subquery steps and offsets scaled;
    string literals (label matchers) are left alone."""

    def code(part: str) -> str:
        def ranged(match: re.Match[str]) -> str:
            window = scale_duration(match[1], scale, min_range)
            if ":" not in match[0]:
                return f"[{window}]"
            step = scale_duration(match[2], scale, 1.0) if match[2] else ""
            return f"[{window}:{step}]"

        part = _RANGE.sub(ranged, part)
        return _OFFSET.sub(lambda m: f"offset {m[1]}{scale_duration(m[2], scale)}", part)

    pieces: list[str] = []
    last = 0
    for literal in _STRING.finditer(expr):
        pieces += [code(expr[last : literal.start()]), literal[0]]
        last = literal.end()
    pieces.append(code(expr[last:]))
    return "".join(pieces)


def scale_rule_groups(document: Any, scale: float, min_range: float) -> dict[str, Any]:
    """A rule file's content (``groups: [...]``) on the lab's clock."""
    if not isinstance(document, dict) or not isinstance(document.get("groups"), list):
        raise RuleFileError("a rule file needs a top-level 'groups' list")
    groups: list[dict[str, Any]] = []
    for group in document["groups"]:
        if not isinstance(group, dict) or not isinstance(group.get("rules"), list):
            raise RuleFileError("each group needs a name and a 'rules' list")
        scaled = dict(group)
        if "interval" in group:
            scaled["interval"] = scale_duration(str(group["interval"]), scale, 1.0)
        rules: list[dict[str, Any]] = []
        for rule in group["rules"]:
            if not isinstance(rule, dict) or "expr" not in rule:
                raise RuleFileError(f"a rule in group {group.get('name')!r} has no 'expr'")
            new = dict(rule)
            new["expr"] = scale_expr(str(rule["expr"]), scale, min_range)
            for key in ("for", "keep_firing_for"):
                if key in rule:
                    new[key] = scale_duration(str(rule[key]), scale)
            rules.append(new)
        scaled["rules"] = rules
        groups.append(scaled)
    return {**document, "groups": groups}


def load_scaled(path: Path, scale: float, min_range: float) -> dict[str, Any]:
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise RuleFileError(f"cannot read rule file {path}: {exc}") from exc
    try:
        return scale_rule_groups(document, scale, min_range)
    except (RuleFileError, ValueError) as exc:
        raise RuleFileError(f"{path}: {exc}") from exc
