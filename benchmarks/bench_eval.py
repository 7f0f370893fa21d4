"""``stratus eval`` of every bundled scenario, as a user runs it: a fresh process, each
scenario on a lab of its own in worker processes, the offline planner, auto-approved.

Run with ``.venv/bin/python benchmarks/bench_eval.py``; figures and the table go in
docs/benchmarks.md. Goal (issue 9): all bundled scenarios in < 2 min; ≥ 90 % mitigated, no
collateral damage, no false positive.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 3
REPO = Path(__file__).resolve().parent.parent


def run_eval(out: Path) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cli", "eval", "--json", str(out)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")},
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"stratus eval failed ({done.returncode}): {done.stderr}")
    return elapsed, done.stdout


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-eval-"))
    times = []
    table = ""
    totals: dict[str, object] = {}
    for run in range(RUNS):
        out = folder / f"eval-{run}.json"
        elapsed, table = run_eval(out)
        times.append(elapsed)
        totals = json.loads(out.read_text())["totals"]
        print(
            f"run {run + 1}: {elapsed:.1f} s, {totals['mitigated']}/{totals['fault_scenarios']} "
            f"mitigated, {totals['false_positives']} false positive(s), "
            f"{totals['collateral_damage']} with collateral damage"
        )
    print(
        f"\nstratus eval, all {totals['scenarios']} bundled scenarios, {os.cpu_count()} CPUs: "
        f"median {statistics.median(times):.1f} s of {RUNS} (min {min(times):.1f}, "
        f"max {max(times):.1f})\n"
    )
    print(table)


if __name__ == "__main__":
    main()
