"""The audit anchor across a crash: a process SIGKILLed between its commit and the anchor line
after it, or between the prepared line and the commit, leaves a log that verifies.

Each crash is real: a child process appends through ``AuditLog`` inside a transaction and
kills itself with SIGKILL from a commit callback registered around the audit log's own, so it
dies exactly at the moment named (``Store.on_commit`` callbacks run in the order registered,
``before_commit`` ones likewise). Until prepared checkpoints, the first case read as tampering
without ``STRATUS_AUDIT_KEY`` (CI saw it in the random-kill test, tests/reliability).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from store.audit import AuditLog
from store.db import Store
from tests.store.audit_files import (
    KEY,
    anchor_lines,
    append_forged_row,
    keyed,
    log_with_rows,
    rechain,
    report_of,
)

__all__ = ["keyed"]  # the keyed/unkeyed fixture (tests/store/audit_files.py)

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import os, signal, sys
from store.audit import AuditLog
from store.db import Store

store = Store(sys.argv[1])
log = AuditLog(store)
die = lambda: os.kill(os.getpid(), signal.SIGKILL)
with store.immediate():
    if sys.argv[2] == "after-commit":
        store.on_commit(die)  # runs before the audit log's own callback: no confirmed line
    log.append(actor="stratus", event="write", subject="deployment/a")
    log.append(actor="stratus", event="write", subject="deployment/b")
    if sys.argv[2] == "before-commit":
        store.before_commit(die)  # after the prepared line, before COMMIT: rolled back
print("not killed")
"""

NEVER_CONFIRMED = (
    "rows 6-7 were committed but their checkpoint was never confirmed (Stratus stopped between "
    "the commit and the anchor write); they match the checkpoint prepared just before the commit"
)


def crash(path: Path, moment: str) -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), moment],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -signal.SIGKILL, (child.stdout, child.stderr)


def rows(path: Path) -> int:
    store = Store(path)
    try:
        return AuditLog(store).count()
    finally:
        store.close()


def test_killed_after_its_commit_the_rows_are_vouched_for_by_the_prepared_line(
    tmp_path: Path, keyed: bool
) -> None:
    path = tmp_path / "db.sqlite"
    log_with_rows(path)
    crash(path, "after-commit")
    assert rows(path) == 7
    assert [(c["first"], c["seq"]) for c in anchor_lines(path, prepared=True)][-1] == (6, 7)
    assert [c["seq"] for c in anchor_lines(path)][-1] == 5  # never confirmed
    assert report_of(path) == ([], [NEVER_CONFIRMED])
    # the next process appends and anchors as usual; the crash stays named
    store = Store(path)
    AuditLog(store).append(actor="stratus", event="write", subject="deployment/c")
    report = AuditLog(store).verify_report()
    store.close()
    assert (report.problems, report.warnings, report.anchored_seq) == ((), (NEVER_CONFIRMED,), 8)


def test_killed_before_its_commit_the_prepared_line_proves_nothing(
    tmp_path: Path, keyed: bool
) -> None:
    path = tmp_path / "db.sqlite"
    log_with_rows(path)
    crash(path, "before-commit")
    assert rows(path) == 5  # rolled back
    assert [(c["first"], c["seq"]) for c in anchor_lines(path, prepared=True)][-1] == (6, 7)
    assert report_of(path) == ([], [])  # not "rows 6-7 were removed"
    # the next commit takes rows 6 and 7 with other hashes: the stale prepared line is ignored
    store = Store(path)
    log = AuditLog(store)
    log.append(actor="stratus", event="write", subject="deployment/c")
    log.append(actor="stratus", event="write", subject="deployment/d")
    report = log.verify_report()
    store.close()
    assert (report.problems, report.warnings, report.anchored_seq) == ((), (), 7)


def test_rows_only_a_prepared_line_vouches_for_are_still_guarded(
    tmp_path: Path, keyed: bool
) -> None:
    """The prepared line covers exactly the rows it names, as written: an edit of them, or a
    row forged after them, is found as before."""
    path = tmp_path / "edited.sqlite"
    log_with_rows(path)
    crash(path, "after-commit")

    def edit(table: list[list[object]]) -> None:
        table[6][2] = "mallory"  # row 7's actor

    rechain(path, edit)
    problems, _ = report_of(path)
    assert (
        "rows 6-7 are not anchored and not keyed with a valid HMAC: appended outside Stratus, "
        "or written just before a crash" in problems
    ), problems

    path = tmp_path / "forged.sqlite"
    log_with_rows(path)
    crash(path, "after-commit")
    append_forged_row(path)
    problems, warnings = report_of(path)
    assert warnings == [NEVER_CONFIRMED]
    expected = "row 8 is not keyed" if keyed else "row 8 is not anchored and not keyed"
    assert any(expected in p for p in problems), problems


def test_a_prepared_line_cannot_be_passed_off_as_confirmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the key, dropping the ``prepared`` mark (to claim a commit that may have been
    rolled back) breaks the line's HMAC."""
    monkeypatch.setenv("STRATUS_AUDIT_KEY", KEY)
    path = tmp_path / "db.sqlite"
    log_with_rows(path, rows=2)
    target = Path(str(path) + ".anchor")
    lines = target.read_text().splitlines()
    assert json.loads(lines[0]).get("prepared") is True
    lines[0] = lines[0].replace(',"prepared":true', "")
    target.write_text("\n".join(lines) + "\n")
    problems, _ = report_of(path)
    assert problems == [
        "the anchor file was edited: the checkpoint on line 1 (row 1) fails its HMAC"
    ]
