"""The audit log's files as someone holding them sees them: a log written with rows, its
verify report, its anchor file's lines, and the raw edits of the database an attacker would
make (a sqlite3 connection that drops the append-only triggers, plain SHA-256 to recompute
a chain). Shared by the anchor's tests, the attack matrix and the crash tests.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from store import anchor
from store.audit import AuditLog
from store.audit import _row_hash as row_hash
from store.clock import ManualClock
from store.db import Store
from store.integrity import KEY_ENV

KEY = "correct horse battery staple"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv(anchor.ENV, raising=False)


@pytest.fixture(params=[True, False], ids=["keyed", "unkeyed"])
def keyed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    if request.param:
        monkeypatch.setenv(KEY_ENV, KEY)
    return bool(request.param)


def log_with_rows(path: Path, rows: int = 5) -> None:
    """``rows`` rows, one commit (and one checkpoint) each."""
    store = Store(path, clock=ManualClock())
    log = AuditLog(store)
    for index in range(rows):
        log.append(
            actor=f"user-{index}",
            event="write",
            subject=f"deployment/app-{index}",
            payload={"index": index},
        )
    store.close()


def report_of(path: Path) -> tuple[list[str], list[str]]:
    store = Store(path)
    report = AuditLog(store).verify_report()
    store.close()
    return list(report.problems), list(report.warnings)


def anchor_lines(path: Path, *, prepared: bool = False) -> list[dict[str, object]]:
    """The confirmed checkpoints (written after their commits), or the prepared ones."""
    target = Path(str(path) + ".anchor")
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    return [line for line in lines if bool(line.get("prepared")) == prepared]


def tamper(path: Path, *statements: str) -> None:
    connection = sqlite3.connect(path)
    connection.execute("DROP TRIGGER IF EXISTS audit_log_no_update")
    connection.execute("DROP TRIGGER IF EXISTS audit_log_no_delete")
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()


def rechain(path: Path, edit: Callable[[list[list[object]]], None]) -> None:
    """Edit the rows, then recompute the whole chain and the head with plain SHA-256: all
    someone without the key can do."""
    connection = sqlite3.connect(path)
    connection.execute("DROP TRIGGER IF EXISTS audit_log_no_update")
    connection.execute("DROP TRIGGER IF EXISTS audit_log_no_delete")
    rows = [list(r) for r in connection.execute("SELECT * FROM audit_log ORDER BY seq")]
    edit(rows)
    prev = "0" * 64
    for row in rows:
        row[6] = prev
        row[7] = prev = row_hash(*row[:7])  # type: ignore[arg-type]
    connection.execute("DELETE FROM audit_log")
    connection.executemany("INSERT INTO audit_log VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    connection.execute("UPDATE audit_head SET seq = ?, hash = ?", [rows[-1][0], prev])
    connection.commit()
    connection.close()


def append_forged_row(path: Path) -> None:
    connection = sqlite3.connect(path)
    seq, prev = connection.execute("SELECT seq, hash FROM audit_head").fetchone()
    row = [seq + 1, "2026-01-01T13:00:00.000000Z", "mallory", "write", "deployment/x", "{}", prev]
    digest = row_hash(*row)  # type: ignore[arg-type]
    connection.execute("INSERT INTO audit_log VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [*row, digest])
    connection.execute("UPDATE audit_head SET seq = ?, hash = ?", [seq + 1, digest])
    connection.commit()
    connection.close()
