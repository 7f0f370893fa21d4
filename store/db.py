"""The one SQLite database of a Stratus installation, through sqlite-utils.

WAL mode, a busy timeout, schema migrations on open, and one lock per connection so the same
``Store`` can be shared by threads (and by asyncio code through ``asyncio.to_thread``).
Writes that must not interleave with another process use ``immediate()``, which takes
SQLite's write lock up front instead of upgrading a read transaction later.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlite_utils

from store.schema import MIGRATIONS

MEMORY = ":memory:"


class StoreError(Exception):
    """The database cannot be opened or migrated; the message says why."""


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_path() -> Path:
    if os.environ.get("STRATUS_DB"):
        return Path(os.environ["STRATUS_DB"])
    home = os.environ.get("STRATUS_HOME") or str(
        Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "stratus"
    )
    return Path(home) / "stratus.db"


class Store:
    def __init__(self, path: str | Path | None = None) -> None:
        target = str(path if path is not None else default_path())
        self.path = target
        if target != MEMORY:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        try:
            connection = sqlite3.connect(
                target, check_same_thread=False, timeout=30.0, isolation_level=None
            )
            connection.execute("PRAGMA busy_timeout = 30000")
            if target != MEMORY:
                connection.execute("PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the database {target}: {exc}") from exc
        self.db = sqlite_utils.Database(connection)
        self._lock = threading.RLock()
        self._migrate()

    def _migrate(self) -> None:
        with self.immediate() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            applied = {row[0] for row in db.execute("SELECT version FROM schema_migrations")}
            for version, script in MIGRATIONS:
                if version in applied:
                    continue
                for statement in _statements(script):
                    db.execute(statement)
                db.execute("INSERT INTO schema_migrations VALUES (?, ?)", [version, utc_now()])

    @property
    def schema_version(self) -> int:
        row = self.db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    @contextlib.contextmanager
    def immediate(self) -> Iterator[sqlite_utils.Database]:
        """A write transaction that holds SQLite's write lock from its first statement."""
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def query(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.db.query(sql, params))

    def close(self) -> None:
        with self._lock:
            self.db.close()


def _statements(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    current: list[str] = []
    for line in script.strip().splitlines():
        current.append(line)
        joined = "\n".join(current).strip()
        if joined.endswith(";") and sqlite3.complete_statement(joined):
            statements.append(joined)
            current = []
    if "\n".join(current).strip():
        statements.append("\n".join(current).strip())
    return statements
