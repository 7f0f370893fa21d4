"""The bot's link tables come from the store's migrations (no socket): a fresh database has
them before any bot runs, and a database whose bot created them itself opens unchanged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.links import Links, MessageRef
from store.db import Store
from store.schema import MIGRATIONS

BOT_TABLES = {"bot_threads", "bot_cards", "bot_state", "bot_parked"}


def test_a_fresh_database_has_the_bot_tables_from_its_migrations(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    assert set(store.db.table_names()) >= BOT_TABLES
    store.close()


def test_a_database_whose_bot_made_its_tables_keeps_its_links(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    for version, script in MIGRATIONS:
        if version < 12:
            old.executescript(script)
            old.execute("INSERT INTO schema_migrations VALUES (?, 'x')", [version])
    # What ``Links`` created itself before the tables were a migration:
    old.execute(
        "CREATE TABLE bot_threads (incident_id TEXT PRIMARY KEY, channel TEXT NOT NULL,"
        " ts TEXT NOT NULL, requester TEXT NOT NULL DEFAULT '')"
    )
    old.execute("CREATE UNIQUE INDEX bot_threads_ts ON bot_threads (channel, ts)")
    old.execute("INSERT INTO bot_threads VALUES ('inc-0123456789', 'C1', '1.0', 'U1')")
    old.commit()
    old.close()
    store = Store(path)
    assert set(store.db.table_names()) >= BOT_TABLES
    assert Links(store).thread("inc-0123456789") == MessageRef("C1", "1.0")
    store.close()
