"""What must hold after faults, read from the store, the lab's own audit log and the audit
chain — in words, so a failed test names every broken promise.

- every execution recorded applied has its undo entry (or restored the entry it undid), no
  execution is left pending, no proposal is stuck executing or applied twice, no lock is held
  (``tests.proposals.test_crashes.record_problems``);
- nothing ran twice: the writes the lab answered 2xx to (``GET /lab/v1/audit``, the lab's own
  record, not the product's) are, object by object, the applied executions plus the fences
  recovery landed in place of a write — plus, at most, one for each execution recovery found
  *overtaken*: its answer was lost, and before recovery read the object someone else moved it
  past the planned resourceVersion and no field the write changed shows it. Such a write may
  have landed and been changed back (the object keeps no history to tell); it is recorded
  not applied, with nothing of it left to undo (``test_faults_overtaken``);
- ``stratus audit verify`` passes (run in process, on the same database).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from cli.main import stratus as stratus_cli
from lab.client import LabClient
from tests.proposals.test_crashes import record_problems, rows

ObjectKey = tuple[str, str, str]  # (resource plural, namespace, name)
# Recovery's words for a lost write the object moved past without showing (``tools.executor``).
OVERTAKEN = "not applied: the object moved on"


def _plural(kind: str) -> str:
    return kind.lower() + "s"  # every kind the catalog writes in the lab's apps


def lab_writes(control: LabClient) -> Counter[ObjectKey]:
    """Writes the lab carried out (2xx, not a dry run), by object, from its audit log."""
    landed: Counter[ObjectKey] = Counter()
    for event in control.get("/lab/v1/audit")["items"]:
        if "dryRun=" in event["requestURI"] or not 200 <= event["responseStatus"]["code"] < 300:
            continue
        ref = event.get("objectRef") or {}
        landed[(ref.get("resource", "?"), ref.get("namespace", ""), ref.get("name", "?"))] += 1
    return landed


@dataclass(frozen=True)
class Ledger:
    """What the store says reached the cluster."""

    applied: Counter[ObjectKey]  # executions recorded applied (undos included)
    fenced: Counter[ObjectKey]  # executions recovery stopped by landing its fence
    overtaken: Counter[ObjectKey]  # not applied: the object moved on without them (may have landed)
    undo_entries: int
    executions: Counter[str]  # by state


def ledger(db: Path) -> Ledger:
    applied: Counter[ObjectKey] = Counter()
    fenced: Counter[ObjectKey] = Counter()
    overtaken: Counter[ObjectKey] = Counter()
    states: Counter[str] = Counter()
    for e in rows(db, "SELECT kind, namespace, name, state, error FROM executions"):
        key = (_plural(e["kind"]), e["namespace"], e["name"])
        states[e["state"]] += 1
        if e["state"] == "applied":
            applied[key] += 1
        elif e["state"] == "aborted" and "fenced it" in (e["error"] or ""):
            fenced[key] += 1
        elif e["state"] == "aborted" and OVERTAKEN in (e["error"] or ""):
            overtaken[key] += 1
    entries = rows(db, "SELECT count(*) AS n FROM undo_entries")[0]["n"]
    return Ledger(applied, fenced, overtaken, int(entries), states)


def duplicates(landed: Counter[ObjectKey], book: Ledger) -> list[str]:
    """Objects the lab changed more often than the store accounts for (a write that ran
    twice, or one nobody recorded), and fewer (an applied record with no write behind it)."""
    problems = []
    for key in sorted(set(landed) | set(book.applied) | set(book.fenced)):
        expected = book.applied[key] + book.fenced[key]
        if not expected <= landed[key] <= expected + book.overtaken[key]:
            problems.append(
                f"{key[0]}/{key[1]}/{key[2]}: the lab carried out {landed[key]} writes, the "
                f"store accounts for {expected} ({book.applied[key]} applied, "
                f"{book.fenced[key]} fenced; {book.overtaken[key]} overtaken may have landed)"
            )
    return problems


def audit_verify(db: Path, **env: str) -> str:
    """'' when ``stratus audit verify`` passes on ``db``, else what it said."""
    result = CliRunner().invoke(
        stratus_cli, ["audit", "verify"], env={"STRATUS_DB": str(db), **env}
    )
    return "" if result.exit_code == 0 else f"audit verify ({result.exit_code}): {result.output}"


def problems(db: Path, control: LabClient) -> tuple[list[str], dict[str, Any]]:
    """Every broken promise, and the figures behind them."""
    book = ledger(db)
    landed = lab_writes(control)
    twice = duplicates(landed, book)
    found = record_problems(db) + twice
    for key in sorted(set(landed) | set(book.applied)):
        if any(key[0] in line and f"/{key[1]}/{key[2]}:" in line for line in twice):
            found += story(db, control, key)
    verified = audit_verify(db)
    if verified:
        found.append(verified)
    figures = {
        "writes applied": sum(book.applied.values()),
        "undo entries": book.undo_entries,
        "writes the lab carried out": sum(landed.values()),
        "fences landed": sum(book.fenced.values()),
        "writes that may have landed, overwritten before recovery": sum(book.overtaken.values()),
        "of them landed (the lab's count beyond applied and fenced)": sum(
            max(0, landed[k] - book.applied[k] - book.fenced[k]) for k in landed
        ),
        "executions by state": dict(sorted(book.executions.items())),
    }
    return found, figures


def story(db: Path, control: LabClient, key: ObjectKey) -> list[str]:
    """What the lab and the store each say happened to one object, oldest first."""
    resource, namespace, name = key
    lines = [f"story of {resource}/{namespace}/{name}:"]
    for event in control.get("/lab/v1/audit")["items"]:
        ref = event.get("objectRef") or {}
        if (ref.get("resource"), ref.get("namespace"), ref.get("name")) == key:
            lines.append(
                f"  lab {event['requestReceivedTimestamp']} {event['verb']} "
                f"{event['responseStatus']['code']} {event['requestURI'].split('?')[-1]}"
            )
    for e in rows(
        db,
        "SELECT id, state, error, inverse_of, created_at, updated_at FROM executions "
        "WHERE namespace = ? AND name = ? ORDER BY created_at",
        (namespace, name),
    ):
        lines.append(
            f"  store {e['created_at']} {e['id']} {e['state']} inverse_of={e['inverse_of']} "
            f"{(e['error'] or '')[:160]}"
        )
    for a in rows(db, "SELECT seq, at, event, payload FROM audit_log WHERE event = 'fence'"):
        if name in a["payload"]:
            lines.append(f"  fence row {a['seq']} {a['at']} {a['payload'][:160]}")
    return lines
