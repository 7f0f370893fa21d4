"""Audit log benchmarks: append rate and verify time, with and without STRATUS_AUDIT_KEY.

Run with ``.venv/bin/python benchmarks/bench_audit.py``; record the figures in
docs/benchmarks.md. Goals (issue "Anchor the audit log"): append > 1,000 rows/s with the
anchor (one transaction per row: a prepared and a confirmed checkpoint, three fsyncs),
verify of 100,000 rows and their 200,000 checkpoint lines < 2 s.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from store import anchor
from store.audit import GENESIS, AuditLog, _row_hash
from store.db import Store

APPENDS = 2_000
RUNS = 5
ROWS = 100_000
KEY = b"benchmark key"


APPEND_CASES: dict[str, tuple[bytes | None, bool]] = {
    "no anchor, unkeyed": (None, False),
    "anchored, unkeyed": (None, True),
    "anchored, keyed": (KEY, True),
}


def append_once(*, key: bytes | None, anchored: bool) -> float:
    """Rows/s for APPENDS appends to a fresh database, each append its own transaction."""
    folder = Path(tempfile.mkdtemp())
    store = Store(folder / "audit.db")
    log = AuditLog(store, key=key, anchor_path=folder / "audit.db.anchor" if anchored else None)
    started = time.perf_counter()
    for index in range(APPENDS):
        log.append(
            actor="bench",
            event="write",
            subject=f"deployment/app-{index}",
            payload={"index": index, "intent": "Scale deployment/app from 1 to 2"},
        )
    rate = APPENDS / (time.perf_counter() - started)
    store.close()
    return rate


def append_rates() -> dict[str, float]:
    """Median rows/s per case. The cases take turns, so a disk that is busier for a while
    (other processes' syncs) slows every case alike rather than one of them."""
    rates: dict[str, list[float]] = {label: [] for label in APPEND_CASES}
    for _ in range(RUNS):
        for label, (key, anchored) in APPEND_CASES.items():
            rates[label].append(append_once(key=key, anchored=anchored))
    return {label: statistics.median(values) for label, values in rates.items()}


def verify_time(*, key: bytes | None) -> tuple[float, float]:
    """Median seconds (wall clock, and CPU of this process) to verify ROWS rows with a
    prepared and a confirmed checkpoint per row (the most a log can have: every append its
    own commit), filled in bulk through the same hashes."""
    folder = Path(tempfile.mkdtemp())
    store = Store(folder / "audit.db")
    log = AuditLog(store, key=key)
    row_key = anchor.subkey(key, anchor.ROW_KEY) if key else None
    checkpoint_key = anchor.subkey(key, anchor.CHECKPOINT_KEY) if key else None
    at = "2026-11-22T00:00:00.000000Z"
    rows, lines, prev = [], [], GENESIS
    for seq in range(1, ROWS + 1):
        payload = f'{{"index":{seq}}}'
        digest = _row_hash(seq, at, "bench", "write", "s", payload, prev, key=row_key)
        rows.append((seq, at, "bench", "write", "s", payload, prev, digest))
        for prepared in (True, False):
            checkpoint = anchor.Checkpoint(seq, seq, digest, at, prepared=prepared)
            lines.append(checkpoint.signed(checkpoint_key).encode())
        prev = digest
    with store.immediate() as db:
        db.conn.executemany("INSERT INTO audit_log VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        db.execute("INSERT INTO audit_head (id, seq, hash) VALUES (1, ?, ?)", [ROWS, prev])
    (folder / "audit.db.anchor").write_bytes(b"".join(lines))
    times, cpu_times = [], []
    for _ in range(RUNS):
        started, cpu_started = time.perf_counter(), time.process_time()
        report = log.verify_report()
        times.append(time.perf_counter() - started)
        cpu_times.append(time.process_time() - cpu_started)
        assert report.intact and report.anchored_seq == ROWS, report.problems[:3]
        assert report.warnings == (), report.warnings[:3]
    store.close()
    return statistics.median(times), statistics.median(cpu_times)


def main() -> None:
    print(f"audit append, one transaction per row, WAL, on disk; median of {RUNS} x {APPENDS}")
    for label, rate in append_rates().items():
        print(f"  {label:<22} {rate:8,.0f} rows/s")
    print(f"audit verify of {ROWS:,} rows and {2 * ROWS:,} checkpoints; median of {RUNS}")
    for label, key in (("unkeyed", None), ("keyed", KEY)):
        wall, cpu = verify_time(key=key)
        print(f"  {label:<22} {wall * 1000:8.0f} ms   ({cpu * 1000:.0f} ms CPU)")


if __name__ == "__main__":
    main()
