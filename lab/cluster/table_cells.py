"""Shared pieces of the lab's Table printers: column and printer types, the AGE cell, and the
container and selector cells several kinds print."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

Column = tuple[str, str, int]  # name, type, priority
Printer = tuple[list[Column], Callable[[dict[str, Any], float], list[Any]]]


def age(timestamp: str | None, now: float) -> str:
    if not timestamp:
        return "<unknown>"
    moment = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").timestamp()
    seconds = int(now - moment)
    if seconds < 0:
        return "<invalid>"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 48:
        return f"{hours}h{minutes % 60}m" if hours < 8 and minutes % 60 else f"{hours}h"
    return f"{hours // 24}d"


def containers_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list(
        (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    )


def selector_text(obj: dict[str, Any]) -> str:
    selector = (obj.get("spec") or {}).get("selector") or {}
    labels = selector.get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in labels.items()) or "<none>"
