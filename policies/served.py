"""Which policy the bot serving a database enforces, recorded in that database.

The bot and a terminal share one store, so they must share one policy: a terminal that ran
under the built-in "anyone may approve" while the bot requires ``@sre`` could execute a write
the bot would refuse. ``stratus serve`` records where its policy comes from (the directory, its
files and a digest of their content) when it starts; any other process opening the database
with no policy of its own uses the recorded one, and one told another policy refuses. A
database no bot ever served is left as it was: each process uses what it is told.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from policies.files import find_policy_files
from store.audit import AuditLog
from store.db import Store
from store.errors import Remedy, StratusError


@dataclass(frozen=True)
class PolicySource:
    """Where a policy comes from: its directory (None: no policy, everything asked), the files
    read there and a digest of their names and content."""

    directory: Path | None
    files: tuple[str, ...]
    digest: str


@dataclass(frozen=True)
class ServedPolicy:
    """The policy source a bot recorded for its database, who recorded it and when."""

    source: PolicySource
    served_by: str
    recorded_at: str


@dataclass(frozen=True)
class PolicyChoice:
    """The policy directory a process opening the database runs under, and the bot's record
    it follows (None: no bot ever served the database); ``changed``: the recorded files were
    edited since the bot recorded them (the bot reloads them too)."""

    directory: Path | None
    served: ServedPolicy | None
    changed: bool = False


class PolicyMismatch(StratusError):
    """This process was told a policy that differs from the one the database's bot serves."""

    code = "policy_mismatch"
    default_remedy = Remedy.FIX_CONFIG


class ServedPolicyGone(StratusError):
    """The files the database's bot recorded are gone: nothing may run under a guess."""

    code = "served_policy_gone"
    default_remedy = Remedy.FIX_CONFIG


def source_of(directory: Path | None) -> PolicySource:
    """The files a policy directory holds and a digest of them; a file that cannot be read
    counts by its error, so a policy that vanished never digests like one that is there."""
    if directory is None:
        return PolicySource(None, (), hashlib.blake2b(b"").hexdigest())
    found = find_policy_files([directory])
    digest = hashlib.blake2b()
    for path in found.files:
        digest.update(path.name.encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError as error:
            digest.update(f"unreadable: {error.strerror}".encode())
        digest.update(b"\0")
    for problem in found.problems:
        digest.update(f"problem: {problem}".encode() + b"\0")
    return PolicySource(
        directory.absolute(), tuple(str(p.absolute()) for p in found.files), digest.hexdigest()
    )


def record(store: Store, directory: Path | None, *, served_by: str) -> ServedPolicy:
    """Record (and audit) that the bot serving ``store`` enforces the policy in ``directory``;
    a later ``serve`` replaces the record."""
    source = source_of(directory)
    served = ServedPolicy(source, served_by, store.now())
    with store.immediate() as db:
        db.execute(
            "INSERT OR REPLACE INTO served_policy VALUES (1, ?, ?, ?, ?, ?)",
            [
                str(source.directory) if source.directory is not None else None,
                json.dumps(list(source.files)),
                source.digest,
                served_by,
                served.recorded_at,
            ],
        )
        AuditLog(store).append(
            actor=served_by,
            event="policy-served",
            subject="policy",
            payload={
                "directory": str(source.directory) if source.directory else None,
                "files": list(source.files),
                "digest": source.digest,
            },
        )
    return served


def recorded(store: Store) -> ServedPolicy | None:
    """What the database's bot recorded, or None when no bot ever served it."""
    rows = store.query("SELECT * FROM served_policy WHERE id = 1")
    if not rows:
        return None
    row = rows[0]
    directory = Path(row["directory"]) if row["directory"] is not None else None
    source = PolicySource(directory, tuple(json.loads(row["files"])), str(row["digest"]))
    return ServedPolicy(source, str(row["served_by"]), str(row["recorded_at"]))


def describe(directory: Path | None) -> str:
    return str(directory) if directory is not None else "no policy (every write asked for)"


def choose(store: Store, configured: Path | None) -> PolicyChoice:
    """The policy a process opening ``store`` runs under, told ``configured`` (None: nothing).

    No bot ever served the database: ``configured``, as before. Nothing configured: the
    bot's recorded directory, read again (refused when its files are gone). Configured: the
    same directory, or one with the same files, is fine; any other is refused, naming both."""
    served = recorded(store)
    if served is None:
        return PolicyChoice(configured, None)
    theirs = served.source.directory
    if configured is None or (theirs is not None and configured.absolute() == theirs):
        if theirs is None:
            return PolicyChoice(None, served)
        now = source_of(theirs)
        if not now.files:
            raise ServedPolicyGone(
                f"this database's bot serves the policy in {theirs} (recorded {served.recorded_at}"
                f" by {served.served_by}), and no policy file is there any more",
                subject=str(theirs),
                details={"recorded": str(theirs), "recorded_at": served.recorded_at},
            )
        return PolicyChoice(theirs, served, changed=now.digest != served.source.digest)
    if source_of(configured).digest == (
        source_of(theirs).digest if theirs is not None else served.source.digest
    ):
        # The same files in another directory: run under the bot's own directory from here
        # on, so editing the copy after this check cannot loosen what the terminal enforces.
        return PolicyChoice(theirs if theirs is not None else configured, served)
    raise PolicyMismatch(
        f"this database's bot serves {describe(theirs)} (recorded {served.recorded_at} by "
        f"{served.served_by}), but this command was told {describe(configured)}, which differs",
        subject=str(configured),
        details={
            "recorded": str(theirs) if theirs else None,
            "configured": str(configured),
            "recorded_at": served.recorded_at,
        },
    )
