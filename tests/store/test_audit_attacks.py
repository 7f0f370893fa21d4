"""Attacks on the audit log, each done the way someone holding the database file (and, for
some, the anchor file) would do it: a raw sqlite3 connection that drops the append-only
triggers, and plain SHA-256 to recompute a chain. The matrix says, for each attack, whether
verify detects it with ``STRATUS_AUDIT_KEY`` set and without it; both columns are asserted
exactly. What no anchor can catch (both files cut or wiped together) is asserted too, so the
limit docs/audit.md states stays true.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from store import anchor
from store.audit import AuditLog
from store.db import Store
from store.integrity import KEY_ENV
from tests.store.audit_files import (
    KEY,
    append_forged_row,
    clean_environment,
    keyed,
    log_with_rows,
    rechain,
    report_of,
    tamper,
)

__all__ = ["clean_environment", "keyed"]  # fixtures of audit_files.py (one autouse)


def _truncate_and_move_head(path: Path) -> None:
    tamper(
        path,
        "DELETE FROM audit_log WHERE seq > 3",
        "UPDATE audit_head SET seq = 3, hash = (SELECT hash FROM audit_log WHERE seq = 3)",
    )


def _delete_everything(path: Path) -> None:
    tamper(path, "DELETE FROM audit_log", "DELETE FROM audit_head")


def _rewrite_consistently(path: Path) -> None:
    def edit(rows: list[list[object]]) -> None:
        rows[1][2] = "someone-else"

    rechain(path, edit)


def _forged_row_then_stratus_appends(path: Path) -> None:
    append_forged_row(path)
    store = Store(path)
    AuditLog(store).append(actor="stratus", event="write", subject="deployment/y")
    store.close()


def _edit_a_checkpoint(path: Path) -> None:
    target = Path(str(path) + ".anchor")
    lines = target.read_text().splitlines()
    stored = json.loads(lines[5])["hash"]  # row 3's confirmed checkpoint, after its prepared one
    lines[5] = lines[5].replace(stored, stored[:-8] + "ffffffff")
    target.write_text("\n".join(lines) + "\n")


def _rewrite_database_and_anchor(path: Path) -> None:
    """Someone holding both files: rewrite the chain, then write a matching anchor file."""
    _rewrite_consistently(path)
    connection = sqlite3.connect(path)
    rows = connection.execute("SELECT seq, hash FROM audit_log ORDER BY seq").fetchall()
    connection.close()
    lines = [
        anchor.Checkpoint(seq, seq, digest, "2026-01-01T12:00:00.000000Z").encode()
        for seq, digest in rows
    ]
    Path(str(path) + ".anchor").write_bytes(b"".join(lines))


def _delete_anchor(path: Path) -> None:
    Path(str(path) + ".anchor").unlink()


def _delete_anchor_then_stratus_appends(path: Path) -> None:
    _delete_anchor(path)
    store = Store(path)
    AuditLog(store).append(actor="stratus", event="write", subject="deployment/y")
    store.close()


def _cut_both_files(path: Path) -> None:
    """Someone holding both files cuts both at the same row."""
    _truncate_and_move_head(path)
    target = Path(str(path) + ".anchor")
    target.write_text("\n".join(target.read_text().splitlines()[:6]) + "\n")  # rows 1-3


def _wipe_both_files_then_stratus_appends(path: Path) -> None:
    _delete_everything(path)
    _delete_anchor(path)
    store = Store(path)
    AuditLog(store).append(actor="stratus", event="write", subject="deployment/y")
    store.close()


# attack, words verify uses with a key, detected without a key (and the words then)
ATTACKS: list[tuple[Callable[[Path], None], str, str | None]] = [
    (_truncate_and_move_head, "rows 4-5 were removed from the end", "rows 4-5 were removed"),
    (_delete_everything, "every row was deleted", "every row was deleted"),
    (_rewrite_consistently, "the chain was rewritten", "the chain was rewritten"),
    (append_forged_row, "row 6 is not keyed", "row 6 is not anchored and not keyed"),
    (
        _forged_row_then_stratus_appends,
        "row 6 is not keyed",
        "row 6 is not anchored and not keyed",
    ),
    (_edit_a_checkpoint, "line 6 (row 3) fails its HMAC", "the chain was rewritten"),
    (_rewrite_database_and_anchor, "the newest checkpoint (row 5) is not keyed", None),
    (_delete_anchor, "anchor file", "anchor file"),
    (_delete_anchor_then_stratus_appends, "is missing", "is missing"),
]


@pytest.mark.parametrize(
    ("attack", "with_key", "without_key"), ATTACKS, ids=[a[0].__name__ for a in ATTACKS]
)
def test_attacks_on_the_audit_log(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    attack: Callable[[Path], None],
    with_key: str,
    without_key: str | None,
) -> None:
    for key in (KEY, None):
        path = tmp_path / f"{'keyed' if key else 'plain'}.db"
        if key:
            monkeypatch.setenv(KEY_ENV, key)
        else:
            monkeypatch.delenv(KEY_ENV, raising=False)
        log_with_rows(path)
        assert report_of(path) == ([], [])
        attack(path)
        problems, _ = report_of(path)
        expected = with_key if key else without_key
        if expected is None:
            assert problems == [], problems
        else:
            assert any(expected in p for p in problems), (key, problems)


@pytest.mark.parametrize("attack", [_cut_both_files, _wipe_both_files_then_stratus_appends])
def test_what_no_anchor_can_catch(
    tmp_path: Path, keyed: bool, attack: Callable[[Path], None]
) -> None:
    """Someone who can write both files can cut or wipe both, key or not (docs/audit.md:
    keep the anchor where the database's writer cannot rewrite it)."""
    path = tmp_path / "db.sqlite"
    log_with_rows(path)
    attack(path)
    assert report_of(path) == ([], [])
