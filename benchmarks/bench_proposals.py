"""Act + undo through the proposal service, as every surface runs them: propose (read, plan,
server dry-run, policy), answer, execute (lock, re-plan, guard, dry-run, write-ahead, write,
one transaction with the undo entry, audit row and event); then the same for the undo.

Run with ``.venv/bin/python benchmarks/bench_proposals.py``; figures go in
docs/benchmarks.md. Goal (issue 7): act + undo through the service under 100 ms median per
action (each of act and undo), against the lab over HTTP, excluding waiting for pods.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench_tools import CASES  # the same cases as the tool-layer benchmark

from lab.runner import LabServer, write_kubeconfig
from policies.evaluate import CompiledPolicy
from policies.loader import Policy
from proposals.service import ProposalService, UndoRequest
from store.db import Store
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef

RUNS = 11


def run() -> dict[str, tuple[list[float], list[float]]]:
    # Realtime clock: a write returns before pods move, as on a real cluster.
    server = LabServer(mode="realtime", apps=["hotel", "shop"]).start()
    folder = Path(tempfile.mkdtemp())
    kube = KubeClient(kubeconfig=str(write_kubeconfig(folder / "kubeconfig", server.url)))
    store = Store(folder / "stratus.db")
    policy = CompiledPolicy.build(Policy())  # no rules: everything asks, a human answers
    service = ProposalService(store=store, executor=Executor(kube, store), policy=lambda: policy)
    results = {}
    for name, case in CASES.items():
        params = {k: v for k, v in case.items() if k not in ("kind", "target", "namespace")}
        kind = case.get("kind", "Deployment")
        target = ObjectRef(kind, case["target"], case.get("namespace", ""))
        act_times, undo_times = [], []
        for _ in range(RUNS):
            started = time.perf_counter()
            proposal = service.propose(
                action=name, target=target, params=params, requester="cli:bench"
            )
            service.answer(proposal.id, user="cli:approver", choice="approve")
            done = service.execute(proposal.id, actor="cli:approver")
            act_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            undo = service.propose_undo(UndoRequest(entry_id=done.undo_id), requester="cli:bench")
            service.answer(undo.id, user="cli:approver", choice="approve")
            service.execute(undo.id, actor="cli:approver")
            undo_times.append(time.perf_counter() - started)
        results[name] = (act_times, undo_times)
    server.stop()
    return results


def main() -> None:
    print(f"act + undo through the proposal service, lab over HTTP; median of {RUNS} runs")
    all_act, all_undo = [], []
    for name, (act_times, undo_times) in run().items():
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


if __name__ == "__main__":
    main()
