"""The one SQLite database of a Stratus installation, through sqlite-utils.

WAL mode, a busy timeout, schema migrations on open, and one lock per connection so the same
``Store`` can be shared by threads (and by asyncio code through ``asyncio.to_thread``).
Writes that must not interleave with another process use ``immediate()``, which takes
SQLite's write lock up front instead of upgrading a read transaction later. ``immediate()``
nests: an inner block joins the outer transaction, so a state change, its audit row, its event
and its undo entry commit together or not at all. Work that must follow a commit (writing the
audit anchor outside the database) is registered with ``on_commit``; work that must precede
it (the anchor's prepared checkpoint) with ``before_commit``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import sqlite_utils

from store import integrity
from store.clock import Clock, SystemClock, stamp
from store.errors import Remedy, StratusError
from store.schema import MIGRATIONS

MEMORY = ":memory:"
ENV = "STRATUS_DB"
HOME_ENV = "STRATUS_HOME"


class StoreError(StratusError, code="store", remedy=Remedy.FIX_CONFIG):
    """The database cannot be opened, migrated, read or written; the message says why."""


def default_path() -> Path:
    """``$STRATUS_DB``, else ``<data dir>/stratus.db``. A set but empty variable is an error:
    silently using another database would hide every record the user expects to see."""
    if ENV in os.environ:
        value = os.environ[ENV]
        if not value.strip():
            raise StoreError(
                f"${ENV} is set but empty; set it to a database file or unset it to use the default"
            )
        if value.strip() == MEMORY or value.strip().startswith("file:") or value == "-":
            # An in-memory database forgets every undo entry and audit row when the command
            # exits, while the write it recorded stays in the cluster.
            raise StoreError(
                f"${ENV}={value!r} is not a database file; Stratus keeps undo records and "
                "the audit log in a file that outlives the command"
            )
        return Path(value)
    return data_dir() / "stratus.db"


def data_dir() -> Path:
    """``$STRATUS_HOME``, else ``$XDG_DATA_HOME/stratus``, else ``~/.local/share/stratus``.
    A set but empty ``STRATUS_HOME`` is an error, as for ``STRATUS_DB``: the default is
    another directory, with another database and other undo records."""
    if HOME_ENV in os.environ:
        home = os.environ[HOME_ENV]
        if not home.strip():
            raise StoreError(
                f"${HOME_ENV} is set but empty; set it to Stratus's data directory or unset it "
                "to use the default"
            )
        return Path(home)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "stratus"


def _use_wal(connection: sqlite3.Connection, attempts: int = 100) -> None:
    """Switch to write-ahead logging. Two processes opening a new database at once can see
    "database is locked" here without SQLite's busy handler waiting (the switch needs the
    file to itself), so it is retried for a few seconds before it counts as an error."""
    for attempt in range(attempts):
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05)


def _explain(exc: sqlite3.Error, path: str) -> StoreError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        why = "it is locked by another process that holds it too long"
        remedy = Remedy.RETRY
    elif "readonly" in text or "read-only" in text:
        why = "it is read-only for this user"
        remedy = Remedy.FIX_CONFIG
    elif "disk is full" in text or "disk I/O" in text:
        why = "the disk is full or failing"
        remedy = Remedy.FIX_CONFIG
    elif "not a database" in text or "malformed" in text:
        why = "the file is not a Stratus database (or it is corrupt)"
        remedy = Remedy.FIX_CONFIG
    else:
        why = text
        remedy = Remedy.FIX_CONFIG
    return StoreError(f"the database {path} cannot be used: {why} ({text})", remedy=remedy)


class Store:
    def __init__(self, path: str | Path | None = None, *, clock: Clock | None = None) -> None:
        integrity.audit_key()  # a set but empty key is refused before anything is opened
        target = str(path if path is not None else default_path())
        self.path = target
        self.clock: Clock = clock or SystemClock()
        try:
            if target != MEMORY:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                target, check_same_thread=False, timeout=30.0, isolation_level=None
            )
            connection.execute("PRAGMA busy_timeout = 30000")
            if target != MEMORY:
                _use_wal(connection)
            connection.execute("PRAGMA foreign_keys = ON")
        except OSError as exc:
            raise StoreError(f"cannot open the database {target}: {exc}") from exc
        except sqlite3.Error as exc:
            raise _explain(exc, target) from exc
        self.db = sqlite_utils.Database(connection)
        self._lock = threading.RLock()
        self._depth = 0
        self._before_commit: list[Callable[[], None]] = []
        self._after_commit: list[Callable[[], None]] = []
        self._migrate()

    def now(self) -> str:
        return stamp(self.clock.now())

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
                db.execute("INSERT INTO schema_migrations VALUES (?, ?)", [version, self.now()])

    @property
    def schema_version(self) -> int:
        row = self.db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @contextlib.contextmanager
    def immediate(self) -> Iterator[sqlite_utils.Database]:
        """A write transaction that holds SQLite's write lock from its first statement.

        Nested blocks join the outermost transaction; only the outermost commits."""
        with self._lock:
            outermost = self._depth == 0
            if outermost:
                try:
                    self.db.execute("BEGIN IMMEDIATE")
                except sqlite3.Error as exc:
                    raise _explain(exc, self.path) from exc
            self._depth += 1
            try:
                yield self.db
            except BaseException:
                self._depth -= 1
                if outermost:
                    self._before_commit.clear()
                    self._after_commit.clear()
                    with contextlib.suppress(sqlite3.Error):
                        self.db.execute("ROLLBACK")
                raise
            self._depth -= 1
            if not outermost:
                return
            try:
                # Still inside the transaction: a callback that raises rolls it back.
                while self._before_commit:
                    self._before_commit.pop(0)()
                self.db.execute("COMMIT")
            except BaseException as exc:
                self._before_commit.clear()
                self._after_commit.clear()
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise _explain(exc, self.path) from exc
                raise
            callbacks, self._after_commit = self._after_commit, []
        for callback in callbacks:
            callback()

    def before_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` just before the current transaction commits, still inside it (at
        once outside one). If it raises, the transaction is rolled back."""
        with self._lock:
            if self._depth:
                self._before_commit.append(callback)
                return
        callback()

    def on_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` after the current transaction commits (at once outside one)."""
        with self._lock:
            if self._depth:
                self._after_commit.append(callback)
                return
        callback()

    def query(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._lock:
            try:
                return list(self.db.query(sql, params))
            except sqlite3.OperationalError as exc:
                raise _explain(exc, self.path) from exc

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
