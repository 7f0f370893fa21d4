"""Stress probe of ``kubectl exec`` output over the websocket protocol (issue 21).

client-go's websocket reader (kubectl 1.30+) starts before the client has created its
streams and drops a message for a stream it does not know yet ("Unknown stream id 1,
discarding message"): when the lab sent a command's output the instant the socket opened,
a busy machine could lose it while the exit code, sent later, still arrived. The lab now
waits ``lab.cluster.remotecommand.START_SECONDS`` (a real CRI exec's start-up) before it
starts the command. This probe runs many ``kubectl exec box -- echo hi`` at once, with two
CPU burners beside them, and counts the answers that lost their output and the ones whose
kubectl said "Unknown stream".

Run: ``.venv/bin/python -m benchmarks.bench_exec_output [--execs N] [--runs R]``. Prints JSON:
per run the lost and "Unknown stream" counts, and the median exec time.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from lab.runner import LabServer


def _burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _run(env: dict[str, str], kubectl: str, execs: int) -> dict[str, Any]:
    def one(_: int) -> tuple[str, str, float]:
        started = time.perf_counter()
        done = subprocess.run(
            [kubectl, "-n", "hotel", "exec", "box", "--", "echo", "hi"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout, done.stderr, time.perf_counter() - started

    burners = [multiprocessing.Process(target=_burn, args=(600.0,)) for _ in range(2)]
    for burner in burners:
        burner.start()
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(one, range(execs)))
    finally:
        for burner in burners:
            burner.terminate()
    return {
        "execs": execs,
        "lost_output": sum(1 for out, _, _ in answers if out != "hi\n"),
        "unknown_stream": sum(1 for _, err, _ in answers if "Unknown stream" in err),
        "median_exec_ms": round(statistics.median(t for _, _, t in answers) * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--execs", type=int, default=400)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SystemExit("no kubectl on PATH: scripts/setup installs it")
    home = Path(tempfile.mkdtemp())
    server = LabServer(apps=["hotel"]).start()
    try:
        env = {**os.environ, "KUBECONFIG": str(server.write_kubeconfig(home / "kc"))}
        env["HOME"] = str(home)
        subprocess.run(
            [kubectl, "-n", "hotel", "run", "box", "--image=busybox:1.36", "--", "sleep", "1h"],
            env=env,
            check=True,
            capture_output=True,
        )
        runs = [_run(env, kubectl, args.execs) for _ in range(args.runs)]
    finally:
        server.stop()
    print(json.dumps({"runs": runs}, indent=2))


if __name__ == "__main__":
    main()
