"""Tool-layer benchmarks: act + undo latency per action against the lab, audit throughput.

Run with ``.venv/bin/python benchmarks/bench_tools.py``; record the figures in
docs/benchmarks.md. Goals (issue "The sandboxed tool layer"): act and undo < 100 ms median
each (excluding waiting for pods), audit verify of 100,000 rows < 2 s.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.runner import LabServer, write_kubeconfig
from store.audit import AuditLog
from store.db import Store
from tools import actions
from tools.actions import WritePlan
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from tools.write_steps import WriteRecord
from undo.entries import UndoEntries
from undo.stack import UndoStack, check_record, plan_inverse

RUNS = 15
CASES: dict[str, dict[str, Any]] = {
    "scale": {"target": "geo", "namespace": "hotel", "replicas": 2},
    "rollout-restart": {
        "target": "geo",
        "namespace": "hotel",
        "restarted_at": "2026-11-22T00:00:00Z",
    },
    "set-image": {"target": "geo", "namespace": "hotel", "image": "stratus/hotel-geo:1.1"},
    "set-env": {"target": "geo", "namespace": "hotel", "variable": "A", "value": "1"},
    "set-resources": {"target": "geo", "namespace": "hotel", "limits": {"memory": "300Mi"}},
    "set-command": {"target": "geo", "namespace": "hotel", "command": ["geo"]},
    "set-node-selector": {"target": "geo", "namespace": "hotel", "node_selector": {"zone": "a"}},
    "patch-service": {
        "kind": "Service",
        "target": "geo",
        "namespace": "hotel",
        "target_port": 9999,
    },
    "patch-configmap-key": {
        "kind": "ConfigMap",
        "target": "hotel-config",
        "namespace": "hotel",
        "key": "log-level",
        "value": "debug",
    },
    "patch-hpa": {
        "kind": "HorizontalPodAutoscaler",
        "target": "frontend",
        "namespace": "shop",
        "max_replicas": 6,
    },
    "cordon": {"kind": "Node", "target": "node-1"},
}


def write_once(
    executor: Executor,
    ref: ObjectRef,
    plan_for: Callable[[dict[str, Any] | None], WritePlan],
    record: WriteRecord,
) -> str | None:
    """The executor's whole path for one write (no proposal: this measures the tool layer):
    lock, read, plan, server dry-run, write-ahead record, write, record; the undo entry's id."""
    with executor.locked(ref, actor="bench") as held:
        plan = plan_for(held.read())
        held.check(plan)
        sent = held.apply(plan, record=record)
        with held.recording(sent) as applied:
            undo_id = UndoEntries(executor.store).follow(
                applied.execution, reversible=record.needs_inverse
            )
            applied.audit(undo_entry=undo_id)
        return undo_id


def act_and_undo() -> dict[str, tuple[list[float], list[float]]]:
    # Realtime clock: a write returns before pods move, as on a real cluster ("excluding
    # waiting for pods"); in instant mode every write would also settle the cluster.
    server = LabServer(mode="realtime", apps=["hotel", "shop"]).start()
    folder = Path(tempfile.mkdtemp())
    kube = KubeClient(kubeconfig=str(write_kubeconfig(folder / "kubeconfig", server.url)))
    executor = Executor(kube, Store(folder / "stratus.db"))
    stack = UndoStack(executor)
    results = {}
    for name, params in CASES.items():
        act_times, undo_times = [], []
        for _ in range(RUNS):
            action = actions.build(name, params)
            started = time.perf_counter()
            undo_id = write_once(
                executor,
                action.ref(),
                lambda current, action=action: executor.plan_action(action, current),
                WriteRecord(action=name, intent=name),
            )
            act_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            execution = stack.entry(undo_id or "").execution
            before = stack.before_image(execution)
            write_once(
                executor,
                check_record(execution, executor.store),
                lambda current, e=execution, b=before: plan_inverse(
                    e, current, force=False, before=b
                ),
                WriteRecord(action="undo", intent=f"Undo: {name}", inverse_of=execution.id),
            )
            undo_times.append(time.perf_counter() - started)
        results[name] = (act_times, undo_times)
    server.stop()
    return results


def audit_throughput(rows: int = 100_000) -> tuple[float, float]:
    folder = Path(tempfile.mkdtemp())
    store = Store(folder / "audit.db")
    # No anchor file here: the rows below are bulk-inserted around append(); the anchored
    # figures are benchmarks/bench_audit.py's.
    log = AuditLog(store, anchor_path=None)
    started = time.perf_counter()
    for index in range(2_000):
        log.append(
            actor="bench",
            event="write",
            subject=f"deployment/app-{index}",
            payload={"index": index, "intent": "Scale deployment/app from 1 to 2"},
        )
    append_rate = 2_000 / (time.perf_counter() - started)
    # Fill the rest in bulk through the same hash function, then verify the whole chain.
    from store import audit as audit_module

    with store.immediate() as db:
        head = db.execute("SELECT seq, hash FROM audit_head").fetchone()
        seq, prev = head
        batch = []
        for index in range(rows - 2_000):
            seq += 1
            at = "2026-11-22T00:00:00.000000Z"
            payload = f'{{"index":{index}}}'
            digest = audit_module._row_hash(seq, at, "bench", "write", "s", payload, prev)
            batch.append((seq, at, "bench", "write", "s", payload, prev, digest))
            prev = digest
        db.conn.executemany("INSERT INTO audit_log VALUES (?, ?, ?, ?, ?, ?, ?, ?)", batch)
        db.execute("UPDATE audit_head SET seq = ?, hash = ?", [seq, prev])
    times = []
    for _ in range(3):
        started = time.perf_counter()
        problems = log.verify()
        times.append(time.perf_counter() - started)
        assert problems == [], problems[:3]
    return append_rate, statistics.median(times)


def main() -> None:
    print(f"act + undo against the lab over HTTP, realtime clock; median of {RUNS} runs each")
    all_act, all_undo = [], []
    for name, (act_times, undo_times) in act_and_undo().items():
        all_act += act_times
        all_undo += undo_times
        print(
            f"  {name:<20} act {statistics.median(act_times) * 1000:6.1f} ms   "
            f"undo {statistics.median(undo_times) * 1000:6.1f} ms"
        )
    print(
        f"  all actions          act {statistics.median(all_act) * 1000:6.1f} ms   "
        f"undo {statistics.median(all_undo) * 1000:6.1f} ms  (medians)"
    )
    rate, verify = audit_throughput()
    print(f"audit append: {rate:,.0f} rows/s (one transaction per row, WAL, on disk)")
    print(f"audit verify of 100,000 rows: {verify * 1000:.0f} ms (median of 3)")


if __name__ == "__main__":
    main()
