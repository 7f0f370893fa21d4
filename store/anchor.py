"""The audit log's anchor: checkpoints of the chain's head, kept outside the database.

A hash chain proves that rows follow each other, not that they are the rows Stratus wrote:
someone who can write the database file can cut rows off the end and move the head, delete
every row, or recompute the whole chain. So after each commit that appended audit rows,
Stratus appends one JSON line to the anchor file naming the rows that commit covered and the
hash of the last one, plus an HMAC of the line when ``STRATUS_AUDIT_KEY`` is set. The same
line, marked ``"prepared":true``, is written just before the commit: the process may die
between the commit and the line after it, and the prepared line then still vouches for rows
that match it (one of rows that were rolled back matches no row and proves nothing). ``verify``
holds every checkpoint against the chain. The file lives outside the database (by default
``<database>.anchor``, or ``$STRATUS_AUDIT_ANCHOR``) so it can be kept where the database's
writer cannot rewrite it: another volume, an append-only file, a log shipper.

This module owns the file (its format, writing and reading) and the comparison of its
checkpoints with the chain; ``store.audit`` owns the rows.
"""

from __future__ import annotations

import hmac
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from store.errors import Remedy, StratusError

ENV = "STRATUS_AUDIT_ANCHOR"
VERSION = 1
KEYED = "hmac-sha256:"
SUFFIX = ".anchor"
ROW_KEY = "audit-row"  # subkey purposes
CHECKPOINT_KEY = "audit-checkpoint"


def subkey(key: bytes, purpose: str) -> bytes:
    """One key per use, so an HMAC made for a row can never pass for a checkpoint's (or for
    a record digest made with the same key in ``store.integrity``)."""
    return hmac.digest(key, b"stratus/" + purpose.encode(), "sha256")


class AnchorError(StratusError, code="audit_anchor", remedy=Remedy.FIX_CONFIG):
    """The audit log's anchor file is not configured, or cannot be used."""


class AnchorPathError(AnchorError):
    """``STRATUS_AUDIT_ANCHOR`` is set but names no file."""


def default_path(database: str, *, memory: bool) -> Path | None:
    """``$STRATUS_AUDIT_ANCHOR``, else ``<database>.anchor``; none for an in-memory database
    (the variable is ignored there: checkpoints of a throw-away log must never land in the
    anchor file of the real one)."""
    if memory:
        return None
    if ENV not in os.environ:
        return Path(database + SUFFIX)
    value = os.environ[ENV]
    if not value.strip():
        # The default file sits beside the database, where whoever can edit the one can
        # rewrite the other: an empty value must not quietly move the anchor back there.
        raise AnchorPathError(
            f"${ENV} is set but empty; set it to the anchor file, or unset it to keep the "
            f"anchor at {database + SUFFIX}"
        )
    return Path(value)


class Checkpoint(NamedTuple):
    """Rows ``first``..``seq`` were committed and row ``seq`` has hash ``hash``.

    ``adopted`` marks a checkpoint written by ``AuditLog.adopt``: a person accepted rows that
    no commit had anchored (a log older than anchoring, or a lost anchor file). ``prepared``
    marks one written before its commit: it says only that these rows were about to be
    committed, so it covers rows that match it and is never evidence that rows were removed
    or rewritten (they may have been rolled back). The MAC covers
    the line exactly as written, without its ``mac`` member: ``text`` keeps those bytes for a
    line read back from the file."""

    first: int
    seq: int
    hash: str
    at: str
    adopted: bool = False
    mac: str | None = None
    line: int = 0
    text: bytes = b""
    prepared: bool = False

    def unsigned(self) -> bytes:
        if self.text:
            return self.text
        body: dict[str, Any] = {
            "v": VERSION,
            "first": self.first,
            "seq": self.seq,
            "hash": self.hash,
            "at": self.at,
        }
        if self.adopted:
            body["adopted"] = True
        if self.prepared:
            body["prepared"] = True
        return json.dumps(body, separators=(",", ":")).encode()

    def signed(self, key: bytes | None) -> Checkpoint:
        if key is None:
            return self
        return self._replace(mac=_mac(key, self.unsigned()))

    def mac_matches(self, key: bytes) -> bool:
        return self.mac == _mac(key, self.unsigned())

    def encode(self) -> bytes:
        unsigned = self.unsigned()
        if self.mac is None:
            return unsigned + b"\n"
        return unsigned[:-1] + b',"mac":"' + self.mac.encode() + b'"}\n'


def _mac(key: bytes, text: bytes) -> str:
    return KEYED + hmac.digest(key, text, "sha256").hex()


# The one shape the writer produces. A line in any other shape (even one a JSON parser would
# read the same way) was not written by Stratus: it counts as an edit.
_LINE = re.compile(
    rb'(\{"v":' + str(VERSION).encode() + rb',"first":([1-9][0-9]{0,18}),"seq":([1-9][0-9]{0,18}),'
    rb'"hash":"([0-9a-z:-]{1,128})","at":"([0-9A-Za-z:.+-]{1,64})"(,"adopted":true)?(,"prepared":true)?)'
    rb'(?:,"mac":"(hmac-sha256:[0-9a-f]{64})")?\}'
)


@dataclass
class AnchorReading:
    checkpoints: list[Checkpoint] = field(default_factory=list)
    malformed: list[int] = field(default_factory=list)  # line numbers


class AnchorFile:
    """The anchor file at ``path``; checkpoints are signed with ``key`` when one is given
    (the checkpoint subkey, not the raw ``STRATUS_AUDIT_KEY``)."""

    def __init__(self, path: Path, *, key: bytes | None) -> None:
        self.path = path
        self.key = key

    def create(self) -> None:
        """Make sure the file exists, durably (its name synced into the directory)."""
        os.close(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def write(self, checkpoint: Checkpoint, *, create: bool = False) -> None:
        """Append one line with O_APPEND (one ``write``, so lines from several processes never
        interleave) and sync it. The file is created only when ``create`` says so: a missing
        anchor file must stay missing (and reported) rather than be quietly replaced by one
        that vouches only for what comes next."""
        if create:
            self.create()
        data = checkpoint.signed(self.key).encode()
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(descriptor, data)
            _sync(descriptor)
        finally:
            os.close(descriptor)

    def read(self) -> AnchorReading | None:
        """Every checkpoint in file order, or None when the file does not exist."""
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return None
        reading = AnchorReading()
        match = _LINE.fullmatch
        for number, raw in enumerate(text.split(b"\n"), start=1):
            found = match(raw)
            if found is None:
                if raw.strip():
                    reading.malformed.append(number)
                continue
            unsigned, first, seq, digest, at, adopted, prepared, mac = found.groups()
            if int(first) > int(seq):
                reading.malformed.append(number)
                continue
            reading.checkpoints.append(
                Checkpoint(
                    int(first),
                    int(seq),
                    digest.decode(),
                    at.decode(),
                    adopted is not None,
                    mac.decode() if mac else None,
                    number,
                    unsigned + b"}",
                    prepared is not None,
                )
            )
        return reading


def _sync(descriptor: int) -> None:
    # fdatasync where there is one: the appended bytes and the new size, without the mtime.
    sync = getattr(os, "fdatasync", os.fsync)
    sync(descriptor)


@dataclass(frozen=True)
class ChainView:
    """What ``verify`` read from the database, as the anchor check needs it."""

    hashes: Mapping[int, str]  # seq -> stored hash, one consistent read
    last: int  # highest seq read (0: no rows)
    proven: Callable[[int], bool]  # keyed with an HMAC the key confirms
    later: Callable[[int], Mapping[int, str]]  # rows committed after the read, above a seq


@dataclass
class AnchorCheck:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    anchored_seq: int | None = None
    unverifiable: int = 0  # keyed checkpoints that could not be checked (no key)


def check(
    reading: AnchorReading | None, chain: ChainView, *, path: Path, key: bytes | None
) -> AnchorCheck:
    """Hold the anchor file's checkpoints against the chain. ``key`` is the checkpoint subkey
    (None: HMACs are not checked)."""
    result = AnchorCheck()
    if reading is None:
        if chain.last:
            result.problems.append(
                f"the anchor file {path} is missing although the log has rows up to "
                f"{chain.last}: it was deleted or moved, or the log is older than anchoring"
            )
        return result
    for number in reading.malformed:
        result.problems.append(f"the anchor file was edited: line {number} is not a checkpoint")
    trusted = _trusted_checkpoints(reading, key, result)
    if not trusted:
        if chain.last:
            _uncovered(1, chain.last, chain, result, before_anchor=True)
        return result
    if key is not None:
        newest = max(trusted, key=lambda c: c.seq)
        if newest.mac is None:
            result.problems.append(
                f"the newest checkpoint (row {newest.seq}) is not keyed although "
                "STRATUS_AUDIT_KEY is set: the anchor file was rewritten without the key, or "
                "nothing was appended since the key was set"
            )
    confirmed = [c for c in trusted if not c.prepared]
    # A prepared checkpoint whose row is not there (or differs) was most likely rolled back:
    # it proves nothing either way. One that matches vouches for its rows.
    matched = [c for c in trusted if c.prepared and chain.hashes.get(c.seq) == c.hash]
    _against_rows(confirmed, chain, result)
    for checkpoint in matched:
        if result.anchored_seq is None or checkpoint.seq > result.anchored_seq:
            result.anchored_seq = checkpoint.seq
    _coverage(confirmed, matched, chain, result)
    return result


def _trusted_checkpoints(
    reading: AnchorReading, key: bytes | None, result: AnchorCheck
) -> list[Checkpoint]:
    trusted: list[Checkpoint] = []
    keyed_seen = False
    for checkpoint in reading.checkpoints:  # file order: keyed lines never go back to unkeyed
        if checkpoint.mac is None:
            if keyed_seen:
                result.problems.append(
                    f"the anchor file was edited: the checkpoint on line {checkpoint.line} "
                    f"(row {checkpoint.seq}) is not keyed although earlier ones are"
                )
                continue
        else:
            keyed_seen = True
            if key is None:
                result.unverifiable += 1
            elif not checkpoint.mac_matches(key):
                result.problems.append(
                    f"the anchor file was edited: the checkpoint on line {checkpoint.line} "
                    f"(row {checkpoint.seq}) fails its HMAC"
                )
                continue
        trusted.append(checkpoint)
    return trusted


def _against_rows(trusted: list[Checkpoint], chain: ChainView, result: AnchorCheck) -> None:
    disagree: list[int] = []
    beyond: list[Checkpoint] = []
    for checkpoint in trusted:
        if checkpoint.seq > chain.last:
            beyond.append(checkpoint)
            continue
        stored = chain.hashes.get(checkpoint.seq)
        if stored is None:
            continue  # a removed row, reported by the chain check
        if stored != checkpoint.hash:
            disagree.append(checkpoint.seq)
        elif result.anchored_seq is None or checkpoint.seq > result.anchored_seq:
            result.anchored_seq = checkpoint.seq
    if len(disagree) == 1:
        result.problems.append(
            f"the chain was rewritten: the anchor's checkpoint for row {disagree[0]} records "
            "another hash"
        )
    elif disagree:
        result.problems.append(
            f"the chain was rewritten: {len(disagree)} of the anchor's checkpoints record "
            f"other hashes, the first for row {min(disagree)}"
        )
    if beyond:
        # A checkpoint above the rows read may belong to a commit that landed after the read.
        newer = chain.later(chain.last)
        removed = [c.seq for c in beyond if newer.get(c.seq) != c.hash]
        if removed:
            top = max(removed)
            if chain.last == 0:
                result.problems.append(
                    f"every row was deleted (the anchor file has checkpoints up to row {top})"
                )
            else:
                result.problems.append(
                    f"{_rows(chain.last + 1, top)} {_were(chain.last + 1, top)} removed from "
                    f"the end (the anchor file has a checkpoint at row {top})"
                )


def _coverage(
    trusted: list[Checkpoint], matched: list[Checkpoint], chain: ChainView, result: AnchorCheck
) -> None:
    committed = _merge([(c.first, c.seq) for c in trusted if not c.adopted], chain.last)
    adopted = _merge([(c.first, c.seq) for c in trusted if c.adopted], chain.last)
    prepared = _merge([(c.first, c.seq) for c in matched], chain.last)
    spans = committed + adopted + prepared
    lowest = min(span[0] for span in spans) if spans else 1
    for start, end in _gaps(committed, chain.last):
        for part_start, part_end, is_adopted in _split(start, end, adopted):
            if is_adopted:
                when = min(c.at for c in trusted if c.adopted and c.seq >= part_end)
                result.warnings.append(
                    f"{_rows(part_start, part_end)} {_were(part_start, part_end)} adopted on "
                    f"{when} without a commit's checkpoint (older than anchoring, or written "
                    "while the anchor file was missing)"
                )
                continue
            for low, high, is_prepared in _split(part_start, part_end, prepared):
                if is_prepared:
                    result.warnings.append(
                        f"{_rows(low, high)} {_were(low, high)} committed but their checkpoint "
                        "was never confirmed (Stratus stopped between the commit and the anchor "
                        "write); they match the checkpoint prepared just before the commit"
                    )
                else:
                    _uncovered(low, high, chain, result, before_anchor=high < lowest)


def _uncovered(
    start: int, end: int, chain: ChainView, result: AnchorCheck, *, before_anchor: bool
) -> None:
    present = [seq for seq in range(start, end + 1) if seq in chain.hashes]
    if not present:
        return  # removed rows, reported by the chain check
    rows = _rows(start, end)
    if before_anchor:
        result.problems.append(
            f"{rows} {_are(start, end)} older than every checkpoint: the anchor file was "
            "replaced, or the log is older than anchoring and was never adopted"
        )
    elif all(chain.proven(seq) for seq in present):
        result.warnings.append(
            f"{rows} {_were(start, end)} committed but never anchored (a crash between the "
            f"commit and the anchor write?); {'its HMAC is' if start == end else 'their HMACs are'}"
            " valid"
        )
    else:
        result.problems.append(
            f"{rows} {_are(start, end)} not anchored and not keyed with a valid HMAC: "
            "appended outside Stratus, or written just before a crash"
        )


def _merge(spans: list[tuple[int, int]], last: int) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(spans):
        end = min(stop, last)
        if start > end:
            continue
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _gaps(spans: list[tuple[int, int]], last: int) -> list[tuple[int, int]]:
    gaps: list[tuple[int, int]] = []
    cursor = 1
    for start, end in spans:
        if start > cursor:
            gaps.append((cursor, start - 1))
        cursor = end + 1
    if cursor <= last:
        gaps.append((cursor, last))
    return gaps


def _split(start: int, end: int, spans: list[tuple[int, int]]) -> list[tuple[int, int, bool]]:
    """``start``..``end`` cut into parts inside and outside ``spans``."""
    parts: list[tuple[int, int, bool]] = []
    cursor = start
    for span_start, span_end in spans:
        if span_end < cursor or span_start > end:
            continue
        if span_start > cursor:
            parts.append((cursor, span_start - 1, False))
        parts.append((max(cursor, span_start), min(end, span_end), True))
        cursor = min(end, span_end) + 1
    if cursor <= end:
        parts.append((cursor, end, False))
    return parts


def _rows(start: int, end: int) -> str:
    return f"row {start}" if start == end else f"rows {start}-{end}"


def _are(start: int, end: int) -> str:
    return "is" if start == end else "are"


def _were(start: int, end: int) -> str:
    return "was" if start == end else "were"
