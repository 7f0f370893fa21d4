"""Compare-and-set: the one way a stored aggregate (a proposal, an incident, a grant, an alert
group) is overwritten.

A writer reads a row, decides, and writes back only if the row still holds what it read
(``version``, or another column such as ``revoked_at``); otherwise nothing is written and
``Stale`` says so. ``retrying`` runs read-decide-write again a bounded number of times, so two
clicks, a Slack retry or two processes at once change a record exactly once and never spin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlite_utils

from store.errors import Stale

T = TypeVar("T")


def write_if(
    db: sqlite_utils.Database,
    table: str,
    *,
    where: Mapping[str, Any],
    changes: Mapping[str, Any],
) -> bool:
    """Set ``changes`` on the row of ``table`` whose columns hold ``where`` (None: NULL);
    whether a row was written. Names are ours, never a caller's input: values are bound."""
    assignments = ", ".join(f"{column} = ?" for column in changes)
    conditions = " AND ".join(
        f"{column} IS NULL" if value is None else f"{column} = ?" for column, value in where.items()
    )
    values = [*changes.values(), *(value for value in where.values() if value is not None)]
    cursor = db.execute(f"UPDATE {table} SET {assignments} WHERE {conditions}", values)
    return bool(cursor.rowcount)


@dataclass(frozen=True)
class Table:
    """A table of versioned records: which columns name a row (``key``), which a save may
    change (``changing``, ``version`` among them), what a record is called in messages, and
    the ``Stale`` its lost saves raise (the aggregate's own, such as ``StaleProposal``)."""

    name: str
    record: str
    changing: tuple[str, ...]
    key: tuple[str, ...] = ("id",)
    stale: type[Stale] = Stale

    def save(self, db: sqlite_utils.Database, row: Mapping[str, Any], *, expected: int) -> None:
        """Write ``row``'s changing columns (its ``version`` the next one) only if the stored
        row is still at version ``expected``; else ``stale`` naming the record, nothing
        written."""
        where = {column: row[column] for column in self.key}
        changes = {column: row[column] for column in self.changing}
        if not write_if(db, self.name, where={**where, "version": expected}, changes=changes):
            subject = str(row[self.key[0]])
            raise self.stale(
                f"{self.record} {subject} was changed by someone else first",
                subject=subject,
                details={"record": self.record, "expected_version": expected},
            )


def retrying(
    attempt: Callable[[], T],
    *,
    attempts: int,
    record: str,
    subject: str,
    stale: type[Stale] = Stale,
) -> T:
    """``attempt()`` (read, decide, compare-and-set) until it wins, at most ``attempts``
    times; a record that keeps changing raises ``stale`` rather than spinning."""
    for _ in range(attempts):
        try:
            return attempt()
        except stale:
            continue
    raise stale(
        f"{record} {subject} kept changing ({attempts} tries)",
        subject=subject,
        details={"record": record, "attempts": attempts},
    )
