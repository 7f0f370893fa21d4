"""Which incident and proposal the current work is about, for every log line it writes.

A ``ContextVar`` rather than ``extra=`` at each call: the lines that matter most (a client
library's warning, a retried request, a traceback) are written by code that knows neither id.
The structured formatter (``operations.logs``) adds both fields to each line. ``about`` sets
them for a block and restores the previous values after it, which matters in pooled worker
threads: a thread keeps its context between tasks, so a value left set would label the next
task's lines with another incident.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

incident_id: ContextVar[str | None] = ContextVar("stratus_incident_id", default=None)
proposal_id: ContextVar[str | None] = ContextVar("stratus_proposal_id", default=None)


@contextmanager
def about(*, incident: str | None = None, proposal: str | None = None) -> Iterator[None]:
    """Label the lines written inside the block; an id not given keeps the outer one."""
    tokens = []
    if incident:
        tokens.append((incident_id, incident_id.set(incident)))
    if proposal:
        tokens.append((proposal_id, proposal_id.set(proposal)))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def current() -> dict[str, str]:
    """The ids in force, only those set."""
    found = {"incident_id": incident_id.get(), "proposal_id": proposal_id.get()}
    return {key: value for key, value in found.items() if value}
