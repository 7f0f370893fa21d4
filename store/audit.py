"""The append-only, hash-chained, anchored audit log.

Each row carries the hash of the previous row and a hash of its own content, and
``audit_head`` remembers the last row. Triggers refuse UPDATE and DELETE; ``verify`` finds what
someone who went around the triggers (or edited the file) did: an edited row, a removed row, a
reordered row, or rows cut off the end.

A chain alone cannot tell the rows Stratus wrote from a chain someone recomputed, so two
things tie it to what only Stratus holds. With ``STRATUS_AUDIT_KEY`` set a row's hash is an
HMAC (stored as ``hmac-sha256:<hex>``; rows written without a key keep a bare SHA-256 hex and
stay verifiable), which nobody without the key can recompute. And after each commit that
appended rows, the new head goes to the anchor file outside the database (``store.anchor``):
once just before the commit (a prepared checkpoint, so a crash between the commit and the
confirmation cannot leave rows nobody vouched for) and once after it.
``append`` may run inside a caller's transaction: its rows commit with the caller's state
change, and the checkpoint is written once, after the outermost commit.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import hmac
import json
import logging
import threading
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store import anchor, integrity
from store.db import MEMORY, Store

GENESIS = "0" * 64
KEYED = anchor.KEYED

log = logging.getLogger("stratus.audit")


class AuditAnchorError(anchor.AnchorError):
    """The anchor file cannot be written, or no anchor file is configured."""


class _Unset(enum.Enum):
    TOKEN = 0


def _material(
    seq: int, at: str, actor: str, event: str, subject: str, payload: str, prev_hash: str
) -> bytes:
    return "\x1f".join((str(seq), at, actor, event, subject, payload, prev_hash)).encode()


def _row_hash(
    seq: int,
    at: str,
    actor: str,
    event: str,
    subject: str,
    payload: str,
    prev_hash: str,
    *,
    key: bytes | None = None,
) -> str:
    """The hash of a row; ``key`` is the row subkey (``anchor.subkey(key, anchor.ROW_KEY)``)."""
    material = _material(seq, at, actor, event, subject, payload, prev_hash)
    if key is None:
        return hashlib.sha256(material).hexdigest()
    return KEYED + hmac.digest(key, material, "sha256").hex()


@dataclass(frozen=True)
class AuditRecord:
    seq: int
    at: str
    actor: str
    event: str
    subject: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class ProvenRecord:
    """A row, and whether its hash is the one only Stratus writes (see ``AuditLog.newest``)."""

    record: AuditRecord
    proven: bool


@dataclass(frozen=True)
class AuditReport:
    """What ``verify_report`` found. ``problems`` mean tampering (or a lost protection);
    ``warnings`` are findings a crash or an upgrade explains, worth a look but not an alarm."""

    rows: int
    last_seq: int
    keyed_rows: int
    key_configured: bool
    anchor_path: Path | None
    anchored_seq: int | None  # the highest checkpoint that matches the chain
    problems: tuple[str, ...]
    warnings: tuple[str, ...]
    # The log is keyed and no keyed row verifies under the key at hand (or none is set): every
    # other finding may be that alone, so it is said first (``integrity.KEY_MISMATCH``).
    wrong_key: bool = False

    @property
    def intact(self) -> bool:
        return not self.problems

    @property
    def keyed(self) -> bool:
        """Every row carries an HMAC and the key to check it was at hand."""
        return self.key_configured and self.rows > 0 and self.keyed_rows == self.rows


@dataclass
class _Commit:
    """The rows one transaction appended, waiting for its commit to be anchored."""

    thread: int
    first: int
    seq: int
    hash: str
    prepared: bool = False
    done: bool = False


# Per store, the transaction appending now: several AuditLog objects may append inside one
# transaction of the same Store, and that commit gets one checkpoint.
_OPEN: weakref.WeakKeyDictionary[Store, _Commit] = weakref.WeakKeyDictionary()


_ROW = "SELECT seq, at, actor, event, subject, payload, prev_hash, hash FROM audit_log "
_OLDEST_KEYED = _ROW + "WHERE hash LIKE ? ORDER BY seq ASC LIMIT 1"
_NEWEST_KEYED = _ROW + "WHERE hash LIKE ? ORDER BY seq DESC LIMIT 1"


class AuditLog:
    def __init__(
        self,
        store: Store,
        *,
        key: bytes | _Unset | None = _Unset.TOKEN,
        anchor_path: str | Path | _Unset | None = _Unset.TOKEN,
    ) -> None:
        """``key`` defaults to ``$STRATUS_AUDIT_KEY`` (None: unkeyed). ``anchor_path``
        defaults to ``$STRATUS_AUDIT_ANCHOR`` or ``<database>.anchor`` (none in memory);
        None turns anchoring off for this object."""
        self.store = store
        secret = integrity.audit_key() if isinstance(key, _Unset) else key
        self.key_configured = secret is not None
        self._fits = False
        self._row_key = anchor.subkey(secret, anchor.ROW_KEY) if secret else None
        self._checkpoint_key = anchor.subkey(secret, anchor.CHECKPOINT_KEY) if secret else None
        if isinstance(anchor_path, _Unset):
            path = anchor.default_path(store.path, memory=store.path == MEMORY)
        else:
            path = Path(anchor_path) if anchor_path is not None else None
        self.anchor = anchor.AnchorFile(path, key=self._checkpoint_key) if path else None

    def append(
        self, *, actor: str, event: str, subject: str, payload: dict[str, Any] | None = None
    ) -> int:
        body = json.dumps(payload or {}, sort_keys=True, separators=(",", ":"), default=str)
        with self.store.immediate() as db:
            head = db.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
            seq, prev = (head[0] + 1, head[1]) if head else (1, GENESIS)
            if self._row_key is None and str(prev).startswith(KEYED):
                # An unkeyed row after keyed ones reads as forged from then on: the whole
                # change (this row is part of its transaction) is refused instead.
                raise integrity.AuditKeyError(
                    f"the audit log is keyed, but ${integrity.KEY_ENV} is not set in this "
                    "process: nothing was done; set it to the installation's key"
                )
            if self._row_key is not None and str(prev).startswith(KEYED) and not self.key_fits():
                # Rows under another key read as forged under the right one: refused the same.
                raise integrity.AuditKeyError(
                    f"{integrity.KEY_MISMATCH}: nothing was done; set it to the installation's key"
                )
            at = self.store.now()
            digest = _row_hash(seq, at, actor, event, subject, body, prev, key=self._row_key)
            db.execute(
                "INSERT INTO audit_log VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [seq, at, actor, event, subject, body, prev, digest],
            )
            db.execute(
                "INSERT INTO audit_head (id, seq, hash) VALUES (1, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
                [seq, digest],
            )
            if self.anchor is not None:
                self._anchor_on_commit(self.anchor, seq, digest)
        return seq

    def _anchor_on_commit(self, file: anchor.AnchorFile, seq: int, digest: str) -> None:
        # Inside the transaction, under the store's lock. Rows of one transaction are
        # consecutive and appended by one thread; a rolled-back transaction's rows are gone,
        # so the next append does not follow them and starts a new commit.
        if seq == 1:
            # The log's first row creates the file, before its commit: a later commit (another
            # thread or process, whose own checkpoint may land first) then finds it there.
            try:
                file.create()
            except OSError as error:
                log.error("cannot create the audit anchor file %s: %s", file.path, error)
        me = threading.get_ident()
        pending = _OPEN.get(self.store)
        if pending is None or pending.done or pending.thread != me or pending.seq != seq - 1:
            pending = _Commit(thread=me, first=seq, seq=seq, hash=digest)
            _OPEN[self.store] = pending
        else:
            pending.seq, pending.hash = seq, digest
        # One pair of callbacks per append; the first to run writes the whole commit, the rest
        # find it done. (A rollback drops the callbacks, which is what keeps rolled-back rows
        # out of the confirmed checkpoints; a prepared one of rolled-back rows matches no row.)
        self.store.before_commit(functools.partial(self._write_prepared, file, pending))
        self.store.on_commit(functools.partial(self._write_checkpoint, file, pending))

    def _write_prepared(self, file: anchor.AnchorFile, pending: _Commit) -> None:
        if pending.prepared:
            return
        pending.prepared = True
        checkpoint = anchor.Checkpoint(
            pending.first, pending.seq, pending.hash, self.store.now(), prepared=True
        )
        try:
            file.write(checkpoint)
        except OSError as error:
            # Not a reason to refuse the change: the confirmed checkpoint is tried after the
            # commit, and verify reports rows that neither covers.
            log.error(
                "cannot prepare the checkpoint of audit rows %d-%d in %s: %s",
                pending.first,
                pending.seq,
                file.path,
                error,
            )

    def _write_checkpoint(self, file: anchor.AnchorFile, pending: _Commit) -> None:
        if pending.done:
            return
        pending.done = True
        checkpoint = anchor.Checkpoint(pending.first, pending.seq, pending.hash, self.store.now())
        try:
            file.write(checkpoint)
        except OSError as error:
            # The caller's state change has committed: raising now would tell it otherwise.
            # verify reports the rows only the prepared checkpoint covers.
            log.error(
                "audit rows %d-%d are committed but not anchored in %s: %s",
                pending.first,
                pending.seq,
                file.path,
                error,
            )

    def adopt(self) -> anchor.Checkpoint | None:
        """Anchor every row as it is now (rows older than anchoring, or after a lost anchor
        file), creating the anchor file if needed. Check the log first: this vouches for
        rows no commit anchored. Earlier checkpoints stay, so it cannot hide rows rewritten
        or removed after they were anchored. None when the log is empty."""
        if self.anchor is None:
            raise AuditAnchorError("no anchor file is configured for this audit log")
        rows = self.store.query("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1")
        if not rows:
            return None
        checkpoint = anchor.Checkpoint(
            1, rows[0]["seq"], rows[0]["hash"], self.store.now(), adopted=True
        )
        try:
            self.anchor.write(checkpoint, create=True)
        except OSError as error:
            raise AuditAnchorError(
                f"cannot write the anchor file {self.anchor.path}: {error}",
                subject=str(self.anchor.path),
            ) from error
        return checkpoint.signed(self._checkpoint_key)

    def records(self, *, limit: int = 50, subject: str | None = None) -> list[AuditRecord]:
        sql = "SELECT * FROM audit_log"
        params: list[Any] = []
        if subject:
            sql += " WHERE subject = ?"
            params.append(subject)
        sql += " ORDER BY seq DESC LIMIT ?"
        params.append(limit)
        rows = self.store.query(sql, params)
        return [
            AuditRecord(
                r["seq"], r["at"], r["actor"], r["event"], r["subject"], json.loads(r["payload"])
            )
            for r in reversed(rows)
        ]

    def key_fits(self) -> bool:
        """False when the log is keyed and neither its oldest nor its newest keyed row
        verifies under the key at hand (or no key is set): genuine records would then read as
        tampered. Two rows, not the chain, so a refusal can afford to ask. A key that fitted
        once fits for the life of this object (the key cannot change under it)."""
        if self._fits:
            return True
        with self.store._lock:
            rows = [
                self.store.db.execute(query, [KEYED + "%"]).fetchone()
                for query in (_OLDEST_KEYED, _NEWEST_KEYED)
            ]
        keyed = [row for row in rows if row is not None]
        if not keyed:
            return True
        if self._row_key is None:
            return False
        self._fits = any(
            hmac.compare_digest(
                row[7], KEYED + hmac.digest(self._row_key, _material(*row[:7]), "sha256").hex()
            )
            for row in keyed
        )
        return self._fits

    def verify(self) -> list[str]:
        """Every problem found, one line each; an empty list means the log is intact."""
        return list(self.verify_report().problems)

    def verify_report(self) -> AuditReport:
        """The chain, the head, the keys and the anchor file, checked in one pass."""
        chain = _ChainCheck(self._row_key)
        with self.store._lock:  # one consistent read of the whole chain and its head
            own = not self.store.in_transaction
            if own:
                self.store.db.execute("BEGIN")
            try:
                cursor = self.store.db.execute(
                    "SELECT seq, at, actor, event, subject, payload, prev_hash, hash "
                    "FROM audit_log ORDER BY seq"
                )
                chain.consume(cursor)
                head = self.store.db.execute(
                    "SELECT seq, hash FROM audit_head WHERE id = 1"
                ).fetchone()
            finally:
                if own:
                    self.store.db.execute("ROLLBACK")
        problems = chain.problems()
        problems += _head_problems(head, chain.last, chain.prev_hash)
        warnings: list[str] = []
        anchored: int | None = None
        unverifiable = 0
        if self.anchor is not None:
            try:
                reading = self.anchor.read()
            except OSError as error:  # a directory, no permission, an I/O error
                problems.append(f"the anchor file {self.anchor.path} cannot be read: {error}")
            else:
                result = anchor.check(
                    reading,
                    anchor.ChainView(
                        hashes=chain.hashes,
                        last=chain.last,
                        proven=chain.proven,
                        later=self._rows_after,
                    ),
                    path=self.anchor.path,
                    key=self._checkpoint_key,
                )
                problems += result.problems
                warnings += result.warnings
                anchored = result.anchored_seq
                unverifiable = result.unverifiable
        if self._row_key is None and (chain.keyed or unverifiable):
            problems.append(
                f"the log is keyed ({_count(chain.keyed, 'row')}, "
                f"{_count(unverifiable, 'checkpoint')}) but {integrity.KEY_ENV} is not set: "
                "their HMACs cannot be checked"
            )
        wrong_key = chain.keyed > 0 and (self._row_key is None or chain.keyed_failed == chain.keyed)
        return AuditReport(
            wrong_key=wrong_key,
            rows=chain.count,
            last_seq=chain.last,
            keyed_rows=chain.keyed,
            key_configured=self.key_configured,
            anchor_path=self.anchor.path if self.anchor else None,
            anchored_seq=anchored,
            problems=tuple(problems),
            warnings=tuple(warnings),
        )

    def _rows_after(self, seq: int) -> Mapping[int, str]:
        rows = self.store.query("SELECT seq, hash FROM audit_log WHERE seq > ?", [seq])
        return {row["seq"]: row["hash"] for row in rows}

    def newest(
        self, *, field: str, value: str, having: str, event: str | None = None
    ) -> ProvenRecord | None:
        """The newest row whose payload has ``field`` = ``value`` and carries ``having``
        (``event``: of that event only), and whether its own hash proves it: an HMAC the key
        confirms when a key is configured, else a SHA-256 of its content. Records outside the
        log (proposals, grants) name the row that vouches for them; this finds it."""
        if not (field.isidentifier() and having.isidentifier()):
            raise ValueError(f"not a payload field: {field!r} / {having!r}")
        sql = (
            "SELECT seq, at, actor, event, subject, payload, prev_hash, hash FROM audit_log "
            f"WHERE json_extract(payload, '$.{field}') = ? "
            f"AND json_extract(payload, '$.{having}') IS NOT NULL"
        )
        params: list[Any] = [value]
        if event is not None:
            sql += " AND event = ?"
            params.append(event)
        rows = self.store.query(sql + " ORDER BY seq DESC LIMIT 1", params)
        return self._proven(rows[0]) if rows else None

    def newest_event(self, *, events: tuple[str, ...], subject: str) -> ProvenRecord | None:
        """The newest row of one of ``events`` about ``subject``, and whether its hash proves
        it (see ``newest``): state kept outside the log (the kill switch) names its row."""
        rows = self.store.query(
            "SELECT seq, at, actor, event, subject, payload, prev_hash, hash FROM audit_log "
            f"WHERE subject = ? AND event IN ({', '.join('?' for _ in events)}) "
            "ORDER BY seq DESC LIMIT 1",
            [subject, *events],
        )
        return self._proven(rows[0]) if rows else None

    def removed_since(self, seq: int) -> str | None:
        """Whether rows were taken out of the log from row ``seq`` on (None: none were): a gap
        in the numbers, a row that does not follow the one before it, or a head that names
        another row than the last. Reads only the rows since ``seq``, so a check made before
        each decision stays cheap; cutting rows off the end together with the head is found
        only by ``verify`` (the anchor file)."""
        span = self.store.query(
            "SELECT COUNT(*) AS n, COALESCE(MAX(seq), 0) AS last FROM audit_log WHERE seq >= ?",
            [seq],
        )[0]
        if span["n"] != span["last"] - seq + 1:
            return f"audit rows after row {seq} were removed"
        broken = self.store.query(
            "SELECT b.seq FROM audit_log a JOIN audit_log b ON b.seq = a.seq + 1 "
            "WHERE a.seq >= ? AND b.prev_hash != a.hash LIMIT 1",
            [seq],
        )
        if broken:
            return f"audit row {broken[0]['seq']} does not follow the row before it"
        head = self.store.query("SELECT seq FROM audit_head WHERE id = 1")
        if not head or head[0]["seq"] != span["last"]:
            return "the audit head does not name the last row"
        return None

    def _proven(self, r: Mapping[str, Any]) -> ProvenRecord:
        material = _material(
            r["seq"], r["at"], r["actor"], r["event"], r["subject"], r["payload"], r["prev_hash"]
        )
        if self._row_key is not None:
            proven = r["hash"] == KEYED + hmac.digest(self._row_key, material, "sha256").hex()
        else:
            proven = r["hash"] == hashlib.sha256(material).hexdigest()
        record = AuditRecord(
            r["seq"], r["at"], r["actor"], r["event"], r["subject"], json.loads(r["payload"])
        )
        return ProvenRecord(record, proven)

    def count(self) -> int:
        return int(self.store.query("SELECT COUNT(*) AS n FROM audit_log")[0]["n"])


class _ChainCheck:
    """The rows in seq order, checked in one loop; what the anchor check needs is kept."""

    def __init__(self, row_key: bytes | None) -> None:
        self.row_key = row_key
        self.count = 0
        self.keyed = 0
        self.last = 0
        self.prev_hash = GENESIS
        self.hashes: dict[int, str] = {}
        self.removed: list[str] = []
        self.misplaced: list[int] = []
        self.edited: list[int] = []
        self.keyed_failed = 0
        self.downgraded: list[int] = []
        self._edited: set[int] | None = None

    def consume(self, rows: Iterable[tuple[Any, ...]]) -> None:
        # Locals, not attributes, in the loop: it runs once per row of the log.
        row_key, hashes, edited = self.row_key, self.hashes, self.edited
        last, prev_hash, count, keyed, keyed_failed = 0, GENESIS, 0, 0, 0
        sha256, digest = hashlib.sha256, hmac.digest
        for seq, at, actor, event, subject, payload, row_prev, row_hash in rows:
            if seq != last + 1:
                gap = f"{last + 1}" if seq == last + 2 else f"{last + 1}-{seq - 1}"
                self.removed.append(f"row {gap} was removed")
            elif row_prev != prev_hash:
                self.misplaced.append(seq)
            material = _material(seq, at, actor, event, subject, payload, row_prev)
            if row_hash.startswith(KEYED):
                keyed += 1
                if (
                    row_key is not None
                    and row_hash != KEYED + digest(row_key, material, "sha256").hex()
                ):
                    keyed_failed += 1
                    edited.append(seq)
            else:
                if keyed:
                    self.downgraded.append(seq)
                if sha256(material).hexdigest() != row_hash:
                    edited.append(seq)
            count += 1
            hashes[seq] = row_hash
            last, prev_hash = seq, row_hash
        self.last, self.prev_hash, self.count = last, prev_hash, count
        self.keyed, self.keyed_failed = keyed, keyed_failed

    def proven(self, seq: int) -> bool:
        """Row ``seq`` carries an HMAC that the key confirms: only the key holder wrote it."""
        if self._edited is None:
            self._edited = set(self.edited)
        return (
            self.row_key is not None
            and self.hashes.get(seq, "").startswith(KEYED)
            and seq not in self._edited
        )

    def problems(self) -> list[str]:
        problems = list(self.removed)
        problems += [
            f"row {seq} does not follow row {seq - 1}: rows were reordered or replaced"
            for seq in self.misplaced
        ]
        for start, end in _ranges(self.edited):
            if start == end:
                problems.append(f"row {start} was edited (its content no longer matches its hash)")
            else:
                problems.append(
                    f"rows {start}-{end} were edited (their content no longer matches their hash)"
                )
        if self.row_key is not None and self.keyed > 1 and self.keyed_failed == self.keyed:
            problems.append(
                f"no keyed row matches its HMAC: is {integrity.KEY_ENV} the key they were "
                "written with?"
            )
        for start, end in _ranges(self.downgraded):
            rows = f"row {start} is" if start == end else f"rows {start}-{end} are"
            problems.append(
                f"{rows} not keyed although earlier rows are: written without the key "
                f"(forged, or {integrity.KEY_ENV} was unset)"
            )
        return problems


def _head_problems(head: tuple[int, str] | None, last: int, last_hash: str) -> list[str]:
    if head is not None and (head[0] != last or head[1] != last_hash):
        if head[0] > last:
            return [f"rows {last + 1}-{head[0]} were removed from the end"]
        return [f"the log ends at row {last} but its head says row {head[0]}"]
    if head is None and last:
        return ["the audit head is missing"]
    return []


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _ranges(seqs: list[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for seq in seqs:
        if ranges and seq == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], seq)
        else:
            ranges.append((seq, seq))
    return ranges
