"""The store: migrations, the append-only audit log and its tamper detection, leases."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from store.audit import AuditLog
from store.db import Store, StoreError
from store.locks import LeaseLocks
from store.schema import MIGRATIONS
from tests.conftest import REPO, stratus

LATEST = max(version for version, _ in MIGRATIONS)


def _log_with_rows(path: Path, rows: int = 5) -> AuditLog:
    log = AuditLog(Store(path))
    for index in range(rows):
        log.append(
            actor=f"user-{index}",
            event="write",
            subject=f"deployment/app-{index}",
            payload={"index": index},
        )
    return log


def _tamper(path: Path, *statements: str) -> None:
    connection = sqlite3.connect(path)
    connection.execute("DROP TRIGGER audit_log_no_update")
    connection.execute("DROP TRIGGER audit_log_no_delete")
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()


def test_migrations_are_recorded_and_idempotent(tmp_path: Path) -> None:
    first = Store(tmp_path / "db.sqlite")
    assert first.schema_version == LATEST
    first.close()
    again = Store(tmp_path / "db.sqlite")
    assert again.schema_version == LATEST
    applied = again.query("SELECT version FROM schema_migrations ORDER BY version")
    assert [r["version"] for r in applied] == list(range(1, LATEST + 1))  # each applied once
    assert {
        "executions",
        "undo_entries",
        "audit_log",
        "locks",
        "grants",
        "incidents",
        "proposals",
        "events",
    } <= set(again.db.table_names())
    assert "decisions" not in again.db.table_names()  # never written; dropped by migration 10
    assert again.query("PRAGMA journal_mode")[0]["journal_mode"] == "wal"
    again.close()


def test_a_version_1_database_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    old.executescript(MIGRATIONS[0][1])
    old.execute("INSERT INTO schema_migrations VALUES (1, '2026-01-01T00:00:00Z')")
    old.execute(
        "INSERT INTO proposals (id, action, target, state, created_at, updated_at) "
        "VALUES ('prop-old', 'scale', 'hotel/Deployment/geo', 'awaiting_approval', 'x', 'x')"
    )
    old.commit()
    old.close()
    store = Store(path)
    assert store.schema_version == LATEST and "events" in store.db.table_names()
    # A request stored before proposals had a body can never be answered: it expires.
    assert store.query("SELECT state FROM proposals")[0]["state"] == "expired"
    store.close()


def test_an_unusable_database_path_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises((StoreError, OSError)):
        Store(blocker / "db.sqlite")


def test_the_audit_log_refuses_updates_and_deletes(tmp_path: Path) -> None:
    log = _log_with_rows(tmp_path / "db.sqlite")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log.store.db.execute("UPDATE audit_log SET actor = 'mallory' WHERE seq = 2")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        log.store.db.execute("DELETE FROM audit_log WHERE seq = 2")
    assert log.verify() == []
    log.store.close()


@pytest.mark.parametrize(
    ("statements", "expected"),
    [
        (["UPDATE audit_log SET actor = 'mallory' WHERE seq = 3"], "row 3 was edited"),
        (["UPDATE audit_log SET payload = '{\"index\": 99}' WHERE seq = 1"], "row 1 was edited"),
        (["DELETE FROM audit_log WHERE seq = 2"], "row 2 was removed"),
        (["DELETE FROM audit_log WHERE seq = 5"], "rows 5-5 were removed from the end"),
        (
            [
                "UPDATE audit_log SET seq = 100 WHERE seq = 2",
                "UPDATE audit_log SET seq = 2 WHERE seq = 4",
                "UPDATE audit_log SET seq = 4 WHERE seq = 100",
            ],
            "row 2 does not follow row 1",
        ),
    ],
)
def test_tampering_is_detected_and_located(
    tmp_path: Path, statements: list[str], expected: str
) -> None:
    path = tmp_path / "db.sqlite"
    _log_with_rows(path).store.close()
    _tamper(path, *statements)
    store = Store(path)
    problems = AuditLog(store).verify()
    store.close()
    assert any(expected in p for p in problems), problems


def test_audit_verify_command(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    _log_with_rows(path).store.close()
    env = {**os.environ, "STRATUS_DB": str(path)}

    intact = stratus("audit", "verify", env=env)
    assert intact.returncode == 0 and "intact: 5 rows" in intact.stdout
    shown = stratus("audit", "show", "--limit", "2", env=env)
    assert shown.stdout.count("\n") == 2 and "deployment/app-4" in shown.stdout
    _tamper(path, "UPDATE audit_log SET subject = 'deployment/other' WHERE seq = 4")
    tampered = stratus("audit", "verify", env=env)
    assert tampered.returncode == 1 and "row 4 was edited" in tampered.stderr


def test_leases_are_exclusive_reentrant_and_expire(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    locks = LeaseLocks(store)
    assert locks.try_acquire("Deployment/hotel/geo", "a", ttl=30) is None
    assert locks.try_acquire("Deployment/hotel/geo", "a", ttl=30) is None
    blocker = locks.try_acquire("Deployment/hotel/geo", "b", ttl=30)
    assert blocker is not None and blocker.holder == "a"
    assert locks.try_acquire("Deployment/hotel/user", "b", ttl=30) is None
    locks.release("Deployment/hotel/geo", "a")
    assert locks.try_acquire("Deployment/hotel/geo", "b", ttl=0.01) is None
    assert locks.acquire("Deployment/hotel/geo", "c", ttl=30, wait=0.5) is None
    store.close()


def test_two_processes_share_one_database(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    script = (
        "import sys; from store.audit import AuditLog; from store.db import Store; "
        "log = AuditLog(Store(sys.argv[1]))\n"
        "for i in range(50): log.append(actor=sys.argv[2], event='e', subject='s')"
    )
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(path), name], cwd=REPO)
        for name in ("p1", "p2")
    ]
    assert all(w.wait(timeout=60) == 0 for w in workers)
    store = Store(path)
    log = AuditLog(store)
    assert log.count() == 100 and log.verify() == []
    store.close()


def test_the_store_is_safe_from_asyncio_through_threads(tmp_path: Path) -> None:
    import asyncio

    store = Store(tmp_path / "db.sqlite")
    log = AuditLog(store)

    async def append_many() -> None:
        await asyncio.gather(
            *(
                asyncio.to_thread(log.append, actor=f"task-{i}", event="e", subject="s")
                for i in range(40)
            )
        )

    asyncio.run(append_many())
    assert log.count() == 40 and log.verify() == []
    store.close()


def test_an_in_memory_store_for_tests() -> None:
    store = Store(":memory:")
    AuditLog(store).append(actor="a", event="e", subject="s")
    assert AuditLog(store).verify() == [] and store.schema_version == LATEST
