"""The audit log's anchor: keyed rows and checkpoints outside the database.

How rows are keyed and checked with ``STRATUS_AUDIT_KEY`` (a wrong, missing or empty key is
named), when checkpoints are written (one per committed transaction, none for a rolled-back
one, every commit of threads appending at once), and how verify reads the anchor file: where
it is, a missing, unwritable, torn or unreadable one, and rows a crash left unanchored. The
attacks on the two files are in test_audit_attacks.py.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from store import anchor
from store.audit import AuditAnchorError, AuditLog
from store.audit import _row_hash as row_hash
from store.db import Store
from store.integrity import KEY_ENV, AuditKeyError
from tests.conftest import stratus
from tests.store.audit_files import (
    KEY,
    anchor_lines,
    clean_environment,
    keyed,
    log_with_rows,
    report_of,
    tamper,
)

__all__ = ["clean_environment", "keyed"]  # fixtures of audit_files.py (one autouse)


def test_rows_are_keyed_with_the_key(tmp_path: Path, keyed: bool) -> None:
    path = tmp_path / "db.sqlite"
    log_with_rows(path, rows=3)
    connection = sqlite3.connect(path)
    hashes = [h for (h,) in connection.execute("SELECT hash FROM audit_log ORDER BY seq")]
    connection.close()
    assert all(h.startswith("hmac-sha256:") == keyed for h in hashes)
    assert all(("mac" in line) == keyed for line in anchor_lines(path))
    store = Store(path)
    report = AuditLog(store).verify_report()
    assert (report.rows, report.anchored_seq, report.keyed, report.intact) == (3, 3, keyed, True)
    assert report.anchor_path == Path(str(path) + ".anchor")
    store.close()


def test_an_edited_keyed_row_fails_its_hmac(tmp_path: Path, keyed: bool) -> None:
    path = tmp_path / "db.sqlite"
    log_with_rows(path)
    tamper(path, "UPDATE audit_log SET actor = 'mallory' WHERE seq = 3")
    problems, _ = report_of(path)
    assert "row 3 was edited (its content no longer matches its hash)" in problems


def test_a_wrong_or_missing_key_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "db.sqlite"
    monkeypatch.setenv(KEY_ENV, KEY)
    log_with_rows(path)
    monkeypatch.setenv(KEY_ENV, "another key")
    problems, _ = report_of(path)
    assert "rows 1-5 were edited (their content no longer matches their hash)" in problems
    assert any("no keyed row matches its HMAC" in p for p in problems)
    assert sum("fails its HMAC" in p for p in problems) == 10  # 5 prepared, 5 confirmed
    monkeypatch.delenv(KEY_ENV)
    problems, _ = report_of(path)
    assert problems == [
        "the log is keyed (5 rows, 10 checkpoints) but STRATUS_AUDIT_KEY is not set: "
        "their HMACs cannot be checked"
    ]


def test_a_log_started_without_a_key_stays_verifiable_with_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.sqlite"
    log_with_rows(path, rows=3)
    monkeypatch.setenv(KEY_ENV, KEY)
    problems, _ = report_of(path)
    assert problems == [
        "the newest checkpoint (row 3) is not keyed although STRATUS_AUDIT_KEY is set: the "
        "anchor file was rewritten without the key, or nothing was appended since the key "
        "was set"
    ]
    store = Store(path)
    AuditLog(store).append(actor="stratus", event="write", subject="s")
    report = AuditLog(store).verify_report()
    assert report.intact and report.warnings == () and report.anchored_seq == 4
    assert (report.rows, report.keyed_rows, report.keyed) == (4, 1, False)
    monkeypatch.delenv(KEY_ENV)  # unsetting the key later: nothing is appended unkeyed
    with pytest.raises(AuditKeyError, match="keyed, but \\$STRATUS_AUDIT_KEY is not set"):
        AuditLog(store).append(actor="stratus", event="write", subject="s")
    assert AuditLog(store).count() == 4
    monkeypatch.setenv(KEY_ENV, KEY)
    assert AuditLog(store).verify_report().intact
    # An unkeyed row written after keyed ones (by hand) is named.
    [(prev,)] = store.db.execute("SELECT hash FROM audit_log WHERE seq = 4").fetchall()
    forged = row_hash(5, "2030-01-01T00:00:00+00:00", "stratus", "write", "s", "{}", prev)
    tamper(
        path,
        "INSERT INTO audit_log VALUES (5, '2030-01-01T00:00:00+00:00', 'stratus', 'write', "
        f"'s', '{{}}', '{prev}', '{forged}')",
    )
    tamper(path, f"UPDATE audit_head SET seq = 5, hash = '{forged}'")
    problems = AuditLog(store).verify()
    assert any("row 5 is not keyed although earlier rows are" in p for p in problems)
    store.close()


@pytest.mark.parametrize("value", ["", " ", "\t"])
def test_a_set_but_empty_key_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(KEY_ENV, value)
    with pytest.raises(AuditKeyError, match="set but empty"):
        Store(tmp_path / "db.sqlite")


def test_a_rolled_back_nested_append_leaves_neither_row_nor_checkpoint(
    tmp_path: Path, keyed: bool
) -> None:
    path = tmp_path / "db.sqlite"
    log_with_rows(path, rows=1)
    store = Store(path)
    log = AuditLog(store)
    with pytest.raises(RuntimeError), store.immediate():
        store.db.execute(
            "INSERT INTO incidents (id, namespace, state, requested_by, created_at, updated_at, "
            "data) VALUES ('i-1', 'ns', 'open', 'a', 't', 't', '')"
        )
        with store.immediate():
            log.append(actor="a", event="write", subject="s")
            log.append(actor="a", event="write", subject="s")
        raise RuntimeError("the state change failed")
    assert log.count() == 1 and len(anchor_lines(path)) == 1
    assert store.query("SELECT COUNT(*) AS n FROM incidents")[0]["n"] == 0
    assert log.append(actor="a", event="write", subject="s") == 2
    assert [(c["first"], c["seq"]) for c in anchor_lines(path)] == [(1, 1), (2, 2)]
    assert log.verify_report().warnings == () and log.verify() == []
    store.close()


def test_a_committed_transaction_gets_one_checkpoint(tmp_path: Path, keyed: bool) -> None:
    path = tmp_path / "db.sqlite"
    log_with_rows(path, rows=1)
    store = Store(path)
    with store.immediate():
        store.db.execute(
            "INSERT INTO incidents (id, namespace, state, requested_by, created_at, updated_at, "
            "data) VALUES ('i-1', 'ns', 'open', 'a', 't', 't', '')"
        )
        with store.immediate():
            AuditLog(store).append(actor="a", event="write", subject="s")
        AuditLog(store).append(actor="b", event="decide", subject="s")  # another object
        assert len(anchor_lines(path)) == 1  # nothing before the commit
    assert [(c["first"], c["seq"]) for c in anchor_lines(path)] == [(1, 1), (2, 3)]
    report = AuditLog(store).verify_report()
    assert report.intact and report.warnings == () and report.anchored_seq == 3
    store.close()


def test_threads_appending_at_once_anchor_every_commit(tmp_path: Path, keyed: bool) -> None:
    path = tmp_path / "db.sqlite"
    store = Store(path)
    log = AuditLog(store)

    def work(name: str) -> None:
        for index in range(30):
            if index % 3:
                log.append(actor=name, event="write", subject="s")
            else:
                with store.immediate():
                    log.append(actor=name, event="write", subject="s")
                    log.append(actor=name, event="write", subject="s")

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    report = log.verify_report()
    assert (report.rows, report.anchored_seq) == (160, 160)
    assert report.problems == () and report.warnings == ()
    assert len(anchor_lines(path)) == 120
    store.close()


def _append_without_anchor(path: Path, *, rows: int = 1) -> None:
    """What a crash between the commit and the anchor write leaves: committed rows, no
    checkpoint (a second Store on the same file whose log does not anchor)."""
    store = Store(path)
    log = AuditLog(store, anchor_path=None)
    with store.immediate():
        for _ in range(rows):
            log.append(actor="stratus", event="write", subject="deployment/z")
    store.close()


def test_a_crash_before_the_anchor_write_is_a_warning_when_keyed(
    tmp_path: Path, keyed: bool
) -> None:
    path = tmp_path / "db.sqlite"
    log_with_rows(path)
    _append_without_anchor(path, rows=2)
    problems, warnings = report_of(path)
    if keyed:
        assert problems == []
        assert warnings == [
            "rows 6-7 were committed but never anchored (a crash between the commit and the "
            "anchor write?); their HMACs are valid"
        ]
    else:
        assert warnings == []
        assert problems == [
            "rows 6-7 are not anchored and not keyed with a valid HMAC: appended outside "
            "Stratus, or written just before a crash"
        ]
    # the next commit is anchored; the interrupted one stays named
    later_store = Store(path)
    AuditLog(later_store).append(actor="stratus", event="write", subject="s")
    report = AuditLog(later_store).verify_report()
    assert report.anchored_seq == 8
    assert (len(report.warnings), len(report.problems)) == ((1, 0) if keyed else (0, 1))
    later_store.close()


def test_anchor_location_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.sqlite"
    elsewhere = tmp_path / "other-volume" / "stratus.anchor"
    elsewhere.parent.mkdir()
    monkeypatch.setenv(anchor.ENV, str(elsewhere))
    log_with_rows(path, rows=2)
    assert elsewhere.exists() and not Path(str(path) + ".anchor").exists()
    assert report_of(path) == ([], [])
    # a writer pointed at another anchor file leaves this one short: as after a crash
    monkeypatch.setenv(anchor.ENV, str(tmp_path / "wrong.anchor"))
    store = Store(path)
    AuditLog(store).append(actor="a", event="e", subject="s")
    store.close()
    monkeypatch.setenv(anchor.ENV, str(elsewhere))
    problems, _ = report_of(path)
    assert any("row 3 is not anchored" in p for p in problems)


def test_in_memory_logs_have_no_anchor_unless_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(anchor.ENV, str(tmp_path / "real.anchor"))
    store = Store(":memory:")
    log = AuditLog(store)
    log.append(actor="a", event="e", subject="s")
    assert log.anchor is None and not (tmp_path / "real.anchor").exists()
    assert log.verify_report().anchored_seq is None and log.verify() == []
    given = AuditLog(store, anchor_path=tmp_path / "memory.anchor")
    with pytest.raises(AuditAnchorError):
        AuditLog(store, anchor_path=None).adopt()
    given.adopt()
    given.append(actor="a", event="e", subject="s")
    report = given.verify_report()
    assert report.intact and report.anchored_seq == 2 and len(report.warnings) == 1
    store.close()


def test_a_missing_anchor_file_is_not_recreated_until_adopted(
    tmp_path: Path, keyed: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A log older than anchoring (or one whose anchor file was lost): Stratus keeps
    appending, verify keeps saying so, until someone checks the log and adopts it."""
    path = tmp_path / "db.sqlite"
    _append_without_anchor(path, rows=3)
    store = Store(path)
    log = AuditLog(store)
    with caplog.at_level(logging.ERROR, logger="stratus.audit"):
        log.append(actor="a", event="e", subject="s")
    assert "audit rows 4-4 are committed but not anchored" in caplog.text
    assert not Path(str(path) + ".anchor").exists()
    assert any("is missing although the log has rows up to 4" in p for p in log.verify())
    adopted = log.adopt()
    assert adopted is not None and adopted.seq == 4 and (adopted.mac is not None) == keyed
    log.append(actor="a", event="e", subject="s")
    report = log.verify_report()
    assert report.problems == () and report.anchored_seq == 5
    assert report.warnings == (
        "rows 1-4 were adopted on "
        f"{anchor_lines(path)[0]['at']} without a commit's checkpoint (older than "
        "anchoring, or written while the anchor file was missing)",
    )
    store.close()


def test_an_unwritable_anchor_does_not_fail_the_commit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = Store(tmp_path / "db.sqlite")
    log = AuditLog(store, anchor_path=tmp_path / "no-such-directory" / "a.anchor")
    with caplog.at_level(logging.ERROR, logger="stratus.audit"):
        assert log.append(actor="a", event="e", subject="s") == 1
    assert log.count() == 1 and "not anchored" in caplog.text
    assert any("is missing" in p for p in log.verify())
    store.close()


def test_a_torn_or_foreign_line_in_the_anchor_file(tmp_path: Path, keyed: bool) -> None:
    path = tmp_path / "db.sqlite"
    log_with_rows(path, rows=2)
    target = Path(str(path) + ".anchor")
    first = target.read_text().splitlines()[0]
    with target.open("a") as handle:
        handle.write('{"v":1,"first":3,"seq":3\n')  # torn
        handle.write(json.dumps(json.loads(first)) + "\n")  # the same JSON, other spacing
    problems, _ = report_of(path)
    assert problems == [
        "the anchor file was edited: line 5 is not a checkpoint",
        "the anchor file was edited: line 6 is not a checkpoint",
    ]


def test_a_checkpoint_newer_than_the_read_is_not_a_removal() -> None:
    """verify reads the rows, then the anchor file: a commit in between leaves a checkpoint
    above the rows read, which the rows committed since must account for."""
    checkpoint = anchor.Checkpoint(1, 2, "h2", "t")
    reading = anchor.AnchorReading(checkpoints=[anchor.Checkpoint(1, 1, "h1", "t"), checkpoint])

    def chain(later: dict[int, str]) -> anchor.ChainView:
        return anchor.ChainView(
            hashes={1: "h1"}, last=1, proven=lambda _: False, later=lambda _: later
        )

    fine = anchor.check(reading, chain({2: "h2"}), path=Path("a"), key=None)
    assert fine.problems == [] and fine.anchored_seq == 1
    cut = anchor.check(reading, chain({}), path=Path("a"), key=None)
    assert cut.problems == [
        "row 2 was removed from the end (the anchor file has a checkpoint at row 2)"
    ]


def test_rows_after_an_adoption_are_judged_like_any_unanchored_rows(
    tmp_path: Path, keyed: bool
) -> None:
    path = tmp_path / "db.sqlite"
    _append_without_anchor(path, rows=2)
    store = Store(path)
    AuditLog(store).adopt()
    store.close()
    _append_without_anchor(path)
    problems, warnings = report_of(path)
    assert len(warnings) == 1 + keyed and "rows 1-2 were adopted on" in warnings[0]
    unanchored = warnings[1:] if keyed else problems
    assert len(unanchored) == 1 and unanchored[0].startswith("row 3 ")
    assert "never anchored" in unanchored[0] if keyed else "not keyed" in unanchored[0]


def test_an_unreadable_anchor_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    log = AuditLog(store, anchor_path=tmp_path)  # a directory
    log.append(actor="a", event="e", subject="s")
    [problem] = log.verify()
    assert problem.startswith(f"the anchor file {tmp_path} cannot be read:")
    store.close()


def test_another_writer_committing_before_the_first_checkpoint(tmp_path: Path, keyed: bool) -> None:
    """A second writer (thread or process) can commit, and write its checkpoint, between the
    log's first commit and that commit's checkpoint: the file must already be there, and
    checkpoints out of order are fine."""
    path = tmp_path / "db.sqlite"
    first, second = Store(path), Store(path)

    def other_writer_commits_in_between() -> None:
        AuditLog(second).append(actor="b", event="e", subject="s")

    with first.immediate():
        first.on_commit(other_writer_commits_in_between)  # runs before the anchor write
        AuditLog(first).append(actor="a", event="e", subject="s")
    assert [(c["first"], c["seq"]) for c in anchor_lines(path)] == [(2, 2), (1, 1)]
    report = AuditLog(first).verify_report()
    assert report.problems == () and report.warnings == () and report.anchored_seq == 2
    first.close()
    second.close()


def test_an_unkeyed_log_interrupted_before_its_anchor_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    path = tmp_path / "db.sqlite"
    log_with_rows(path)
    _append_without_anchor(path, rows=1)
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV}
    env["STRATUS_DB"] = str(path)
    broken = stratus("audit", "verify", env=env)
    assert broken.returncode == 1
    assert "stratus audit adopt" in broken.stderr and "STRATUS_AUDIT_KEY" in broken.stderr
    assert stratus("audit", "adopt", env=env).returncode == 0
    fixed = stratus("audit", "verify", env=env)
    assert fixed.returncode == 0, fixed.stderr
