"""What a container script's loop costs the lab now that it runs pass by pass (issue 21).

A ``while`` loop in a container's command stops between passes and goes on at its next
second (``lab.controllers.script_runs``): each pass is a timer on the lab's clock. This
measures one in-process cluster (instant clock) with ``--pods`` pods of ``while true; do
echo tick; sleep S; done`` letting ``--horizon`` seconds pass in one settle, and prints the
median settle time, the passes it ran and the cost of one pass, over ``--runs`` runs.

Run: ``.venv/bin/python -m benchmarks.bench_script_passes [--pods N] [--sleep S]
[--horizon H] [--runs R]``. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from lab.cluster.resources import by_kind
from lab.cluster_sim import Cluster


def _one(pods: int, sleep: float, horizon: float) -> tuple[float, int]:
    cluster = Cluster()
    cluster.api.create(by_kind("Namespace"), "", {"metadata": {"name": "bench"}})
    cluster.settle()
    script = f"while true; do echo tick; sleep {sleep}; done"
    for index in range(pods):
        container = {"name": "loop", "image": "busybox:1.36", "command": ["sh", "-c", script]}
        body = {"metadata": {"name": f"loop-{index}"}, "spec": {"containers": [container]}}
        cluster.api.create(by_kind("Pod"), "bench", body)
    cluster.settle()
    runs = [r for r in cluster.kubelet.runs.values() if r.namespace == "bench"]
    before = sum(r.main[0].log_total for r in runs)
    started = time.perf_counter()
    cluster.settle(horizon=horizon)
    seconds = time.perf_counter() - started
    return seconds, sum(r.main[0].log_total for r in runs) - before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=10)
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--horizon", type=float, default=600.0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = [_one(args.pods, args.sleep, args.horizon) for _ in range(args.runs)]
    settle = statistics.median(s for s, _ in results)
    passes = statistics.median(p for _, p in results)
    print(
        json.dumps(
            {
                "pods": args.pods,
                "sleep_s": args.sleep,
                "horizon_s": args.horizon,
                "runs": args.runs,
                "median_settle_s": round(settle, 3),
                "median_passes": passes,
                "ms_per_pass": round(1000 * settle / passes, 3) if passes else None,
            }
        )
    )


if __name__ == "__main__":
    main()
