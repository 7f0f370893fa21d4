"""Alert text as Stratus reads it: labels and annotations from a payload are free text that
anyone able to create a PrometheusRule, or to forge a request, writes — bounded, stripped of
control characters and bidirectional overrides, and only ever shown as quoted data."""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, Any

from pydantic import AfterValidator

MAX_LABELS = 64  # per label set; more are dropped (the ones read below first, then by name)
LABEL_VALUE = 256  # characters per label value
ANNOTATION = 2000  # characters per annotation
ELLIPSIS = "…"
_ALERT_NAME = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]{0,127}$")
_LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def clean(text: str, limit: int) -> str:
    """Free text from an alert, safe to store and show: control characters (a carriage return
    can fake a line) and bidirectional overrides become spaces, and it is bounded."""
    printable = "".join(
        " " if unicodedata.category(ch) in ("Cc", "Cf") else ch for ch in text
    ).strip()
    return printable if len(printable) <= limit else printable[: limit - 1] + ELLIPSIS


# Labels and annotations the intake reads: kept first when a set has more than MAX_LABELS.
READ_KEYS = (
    "namespace",
    "alertname",
    "severity",
    "pod",
    "container",
    "deployment",
    "service",
    "node",
    "job",
    "summary",
    "description",
    "runbook_url",
)


def _value(key: str, value: str, limit: int) -> str:
    """A label value, cleaned — except ``namespace``, which names where Stratus acts: one that
    cleaning would change (a bidirectional override, a space, a control character) is kept
    escaped, so it is validated as sent and refused, never read as the namespace it imitates."""
    cleaned = clean(value, limit)
    if key != "namespace" or cleaned == value:
        return cleaned
    return value.encode("unicode_escape").decode("ascii")[:limit]


def _bounded(limit: int) -> Any:
    def check(value: dict[str, str]) -> dict[str, str]:
        names = [k for k in value if _LABEL_NAME.fullmatch(k)]
        read = [k for k in READ_KEYS if k in value]
        kept = (read + sorted(k for k in names if k not in READ_KEYS))[:MAX_LABELS]
        return {k: _value(k, value[k], limit) for k in sorted(kept)}

    return AfterValidator(check)


Labels = Annotated[dict[str, str], _bounded(LABEL_VALUE)]
Annotations = Annotated[dict[str, str], _bounded(ANNOTATION)]


def alert_name(labels: dict[str, str]) -> str:
    """The alert's name when it looks like one (Prometheus allows metric-name characters),
    else a neutral stand-in: the name is put into sentences and a forged one must not read
    as something else."""
    name = labels.get("alertname", "")
    return name if _ALERT_NAME.fullmatch(name) else "unnamed alert"
