"""What the model's client stack may write to the log: bounded, with what was left out counted.

autogen's OpenAI client logs every call at INFO (the level ``stratus serve`` logs at): the
whole request and the whole answer, twice over for a structured answer (its text and its parsed
form). One 4 MB answer added about 40 MB of log (issue 16, item 25) — a model, or anyone who
can put text in front of one, could fill the disk. The filter below keeps every record: each
string in it (a message, a tool result, the answer) is cut to ``MESSAGE_CHARS``, the record as
a whole to ``RECORD_CHARS``, and the cut says how many bytes it left out. ``dropped`` counts
the records cut and the bytes left out since the process started.

Installed on the loggers of the model stack only (a filter on a logger sees the records logged
there), by ``install``, which making a model client calls: without a model nothing is logged.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from typing import Any

# One message, tool result or answer in a log record (characters).
MESSAGE_CHARS = 2_000
# One whole record: a request with its messages and tools, and the answer (characters).
RECORD_CHARS = 16_000
# Where the model stack logs: autogen's events and traces, and the OpenAI client's debug log
# (which holds the request body).
LOGGERS = (
    "autogen_core.events",
    "autogen_core.trace",
    "autogen_core",
    "autogen_agentchat.events",
    "autogen_agentchat",
    "openai._base_client",
)


@dataclass(frozen=True)
class Dropped:
    records: int = 0  # records that were cut
    bytes: int = 0  # bytes (UTF-8) left out of them


class _Tally:
    """The running count behind ``dropped`` (records are cut on any thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.total = Dropped()

    def add(self, left_out: int) -> None:
        with self.lock:
            self.total = Dropped(self.total.records + 1, self.total.bytes + left_out)


_tally = _Tally()


def dropped() -> Dropped:
    """What the log has not been given so far, in this process."""
    with _tally.lock:
        return _tally.total


def _cut(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters, and the bytes left out."""
    if len(text) <= limit:
        return text, 0
    left_out = len(text[limit:].encode("utf-8", "replace"))
    return f"{text[:limit]}…[{left_out} bytes left out]", left_out


def _bounded(value: Any) -> tuple[Any, int]:
    """``value`` with every string cut to ``MESSAGE_CHARS``, and the bytes left out."""
    if isinstance(value, str):
        return _cut(value, MESSAGE_CHARS)
    if isinstance(value, dict):
        total, out = 0, {}
        for key, item in value.items():
            out[key], left = _bounded(item)
            total += left
        return out, total
    if isinstance(value, list | tuple):
        total, items = 0, []
        for item in value:
            bounded, left = _bounded(item)
            items.append(bounded)
            total += left
        return items, total
    return value, 0


def bound(record: logging.LogRecord) -> str:
    """The record's message within the bounds (what ``BoundedRecords`` puts in its place)."""
    fields = getattr(record.msg, "kwargs", None)  # autogen's events keep theirs in ``kwargs``
    left_out = 0
    if isinstance(fields, dict):
        bounded, left_out = _bounded(fields)
        text = json.dumps(bounded, default=str, ensure_ascii=False)
    else:
        text = record.getMessage()
    text, rest = _cut(text, RECORD_CHARS)
    left_out += rest
    if left_out:
        _tally.add(left_out)
        if not rest:
            text += f" …[{left_out} bytes left out of this record]"
    return text


class BoundedRecords(logging.Filter):
    """Rewrites each record of the model stack to its bounded text (it never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = bound(record)
        record.args = None
        return True


_installed: set[str] = set()


def install() -> None:
    """Bound the model stack's loggers (once per process)."""
    with _tally.lock:
        for name in LOGGERS:
            if name not in _installed:
                logging.getLogger(name).addFilter(BoundedRecords())
                _installed.add(name)
