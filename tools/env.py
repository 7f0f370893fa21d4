"""Numbers from the environment — timeouts, intervals, ports, caps — read one way everywhere.

A variable that is not set takes its default. One that is set, even to nothing, must be a plain
decimal number inside its range, or the command stops with one line naming the variable and the
range. Silently falling back is how ``STRATUS_KUBE_TIMEOUT=0`` came to mean 30 seconds and
``1e999`` failed only at the first write; ``nan`` and ``inf`` pass a naive bounds check, and
``float`` also reads ``1_0`` and non-ASCII digits, which nobody means in a setting.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping

from store.errors import Remedy, StratusError

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WHOLE = re.compile(r"[+-]?[0-9]+")


class SettingError(StratusError, code="setting", remedy=Remedy.FIX_CONFIG):
    """A variable of the environment holds a value Stratus does not accept."""


def _raw(name: str, env: Mapping[str, str] | None) -> str | None:
    values = os.environ if env is None else env
    return values.get(name)


def refuse(name: str, raw: str, accepted: str) -> SettingError:
    """The one-line error for ``name=raw``; ``accepted`` says what it takes (with its range)."""
    return SettingError(f"{name}={raw!r} is not accepted: {accepted}", subject=name)


def number(
    name: str,
    *,
    default: float,
    low: float,
    high: float,
    unit: str = "seconds",
    env: Mapping[str, str] | None = None,
) -> float:
    """``name`` as a finite number from ``low`` to ``high`` (both included), or ``default``
    when it is not set."""
    raw = _raw(name, env)
    if raw is None:
        return default
    text = raw.strip()
    value = float(text) if _DECIMAL.fullmatch(text) else math.nan
    if not math.isfinite(value) or not low <= value <= high:
        raise refuse(name, raw, f"give a number of {unit} from {low:g} to {high:g}")
    return value


def integer(
    name: str,
    *,
    default: int,
    low: int,
    high: int,
    what: str = "a whole number",
    env: Mapping[str, str] | None = None,
) -> int:
    """``name`` as a decimal integer from ``low`` to ``high`` (both included), or ``default``
    when it is not set."""
    raw = _raw(name, env)
    if raw is None:
        return default
    text = raw.strip()
    value = int(text) if _WHOLE.fullmatch(text) and len(text) <= 20 else None
    if value is None or not low <= value <= high:
        raise refuse(name, raw, f"give {what} from {low} to {high}")
    return value
