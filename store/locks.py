"""One writer per resource: leases with a time-to-live, taken by compare-and-set in SQLite.

A lease expires on its own, so a crashed holder does not block a resource forever.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass

from store.db import Store


@dataclass(frozen=True)
class LockHolder:
    resource: str
    holder: str
    expires_at: float


@dataclass(frozen=True)
class Lease:
    """A lease someone means to hold (or holds): whose, on what, for how long at a time."""

    resource: str
    holder: str
    ttl: float


def holder_name(actor: str) -> str:
    """A holder id that names the actor, this host and this process (``actor@host:pid/…``)."""
    return f"{actor}@{socket.gethostname()}:{os.getpid()}/{uuid.uuid4().hex[:8]}"


def holder_alive(holder: str, host: str | None = None) -> bool | None:
    """Whether the process behind a holder id still runs: True, False, or None when it ran on
    another host (only its lease's expiry can tell then)."""
    _, _, place = holder.rpartition("@")
    holder_host, _, rest = place.partition(":")
    pid = rest.split("/", 1)[0]
    if holder_host != (host or socket.gethostname()) or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by another user
    return True


class LeaseLocks:
    def __init__(self, store: Store) -> None:
        self.store = store

    def try_acquire(self, resource: str, holder: str, ttl: float) -> LockHolder | None:
        """Take the lease, or return who holds it. Re-entrant for the same holder."""
        now = self.store.clock.now().timestamp()
        with self.store.immediate() as db:
            row = db.execute(
                "SELECT holder, expires_at FROM locks WHERE resource = ?", [resource]
            ).fetchone()
            if row is not None and row[0] != holder and row[1] > now:
                return LockHolder(resource, row[0], row[1])
            db.execute(
                "INSERT INTO locks VALUES (?, ?, ?, ?) ON CONFLICT(resource) DO UPDATE "
                "SET holder = excluded.holder, acquired_at = excluded.acquired_at, "
                "expires_at = excluded.expires_at",
                [resource, holder, now, now + ttl],
            )
        return None

    def acquire(
        self, resource: str, holder: str, *, ttl: float = 60.0, wait: float = 0.0
    ) -> LockHolder | None:
        """Try for up to ``wait`` seconds; None when acquired, else the current holder."""
        deadline = time.monotonic() + wait
        while True:
            blocker = self.try_acquire(resource, holder, ttl)
            if blocker is None or time.monotonic() >= deadline:
                return blocker
            time.sleep(0.02)

    def renew(self, resource: str, holder: str, ttl: float) -> bool:
        """Extend a lease its holder still holds by ``ttl`` from now (a heartbeat): False when
        it ran out or someone else holds it — it is not taken back."""
        now = self.store.clock.now().timestamp()
        with self.store.immediate() as db:
            changed = db.execute(
                "UPDATE locks SET expires_at = ? WHERE resource = ? AND holder = ? "
                "AND expires_at > ?",
                [now + ttl, resource, holder, now],
            ).rowcount
        return bool(changed == 1)

    def holds(self, resource: str, holder: str) -> bool:
        """Whether ``holder`` holds an unexpired lease on ``resource``; inside a write
        transaction (``Store.immediate``) nobody can take it before that transaction ends."""
        rows = self.store.query(
            "SELECT 1 FROM locks WHERE resource = ? AND holder = ? AND expires_at > ?",
            [resource, holder, self.store.clock.now().timestamp()],
        )
        return bool(rows)

    def release(self, resource: str, holder: str) -> None:
        with self.store.immediate() as db:
            db.execute("DELETE FROM locks WHERE resource = ? AND holder = ?", [resource, holder])

    def release_dead(self, host: str | None = None) -> list[str]:
        """Release leases whose holder (``actor@host:pid/…``) was a process on this host that
        no longer runs, so a crash does not block a resource until its lease expires."""
        released = []
        for row in self.store.query("SELECT resource, holder FROM locks"):
            if holder_alive(row["holder"], host) is False:
                self.release(row["resource"], row["holder"])
                released.append(row["resource"])
        return released

    def held_by(self, holder: str) -> list[LockHolder]:
        """Unexpired leases of one holder."""
        rows = self.store.query(
            "SELECT * FROM locks WHERE holder = ? AND expires_at > ?",
            [holder, self.store.clock.now().timestamp()],
        )
        return [LockHolder(r["resource"], r["holder"], r["expires_at"]) for r in rows]

    def holder_of(self, resource: str) -> LockHolder | None:
        rows = self.store.query(
            "SELECT * FROM locks WHERE resource = ? AND expires_at > ?",
            [resource, self.store.clock.now().timestamp()],
        )
        return (
            LockHolder(rows[0]["resource"], rows[0]["holder"], rows[0]["expires_at"])
            if rows
            else None
        )
