"""Lab benchmarks: start-up, settle after a fault, listing 1,000 pods, memory with 1,000 pods.

Prints medians over several runs. Run with ``.venv/bin/python benchmarks/bench_lab.py``;
record the figures in docs/benchmarks.md. Goals (issue "The lab cluster"): start-up with the
larger app < 2 s, settle after a fault < 200 ms (instant mode), list of 1,000 pods < 50 ms
median.
"""

from __future__ import annotations

import gc
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import urllib.parse
from pathlib import Path

from lab import scenarios
from lab.cluster.resources import by_kind
from lab.cluster_sim import Cluster
from lab.runner import LabServer

RUNS = 5


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def startup_in_process() -> list[float]:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        server = LabServer(apps=["hotel"]).start()
        times.append(time.perf_counter() - started)
        server.stop()
    return times


def startup_command() -> list[float]:
    times = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "STRATUS_HOME": home}
            started = time.perf_counter()
            process = subprocess.Popen(
                [sys.executable, "-m", "cli", "lab", "up", "--app", "hotel", "--clock", "instant"],
                stdout=subprocess.PIPE,
                text=True,
                env=env,
                cwd=Path(__file__).resolve().parent.parent,
            )
            assert process.stdout is not None
            line = process.stdout.readline()
            times.append(time.perf_counter() - started)
            assert line.startswith("lab ready"), line
            process.terminate()
            process.communicate(timeout=10)
    return times


def settle_after_fault() -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    for name in (
        "hotel-rate-buggy-image",
        "hotel-geo-target-port",
        "hotel-geo-nonexistent-node",
        "hotel-all-nodes-cordoned",
    ):
        scenario = scenarios.load_scenario(name)
        times = []
        for _ in range(RUNS):
            cluster = Cluster()
            cluster.install_app("hotel")
            for use in scenario.faults:
                scenarios.apply_fault(
                    cluster.api,
                    scenarios.load_fault(use.fault),
                    "hotel",
                    use.params,
                    cluster.clock.timestamp(),
                )
            started = time.perf_counter()
            cluster.settle()
            times.append(time.perf_counter() - started)
        results[name] = times
    return results


def _thousand_pods(cluster: Cluster) -> None:
    cluster.api.create(by_kind("Namespace"), "", {"metadata": {"name": "bench"}})
    cluster.reconcile()  # the namespace's default account exists before its pods, as on a cluster
    for index in range(1000):
        cluster.api.create(
            by_kind("Pod"),
            "bench",
            {
                "metadata": {
                    "name": f"pod-{index:04d}",
                    "labels": {"app": "bench", "shard": str(index % 10)},
                },
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "memcached:1.6.7",
                            "ports": [{"containerPort": 11211}],
                        }
                    ]
                },
            },
        )
    cluster.settle()


def list_thousand_pods() -> dict[str, list[float]]:
    server = LabServer(apps=[]).start()
    server.call(_thousand_pods)
    parsed = urllib.parse.urlparse(server.url)
    results: dict[str, list[float]] = {}
    cases = {
        "json": ("/api/v1/namespaces/bench/pods", "application/json"),
        "table": (
            "/api/v1/namespaces/bench/pods",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        ),
        "label selector (100 of 1,000)": (
            "/api/v1/namespaces/bench/pods?labelSelector=shard%3D3",
            "application/json",
        ),
    }
    for label, (path, accept) in cases.items():
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port)
        times = []
        for _ in range(20):
            started = time.perf_counter()
            connection.request("GET", path, headers={"Accept": accept})
            body = connection.getresponse().read()
            times.append(time.perf_counter() - started)
        connection.close()
        count = len(json.loads(body).get("items") or json.loads(body).get("rows") or [])
        results[f"{label}: {count} items"] = times
    server.stop()
    return results


def memory_thousand_pods() -> tuple[float, float]:
    gc.collect()
    tracemalloc.start()
    cluster = Cluster()
    baseline = tracemalloc.get_traced_memory()[0]
    _thousand_pods(cluster)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - baseline
    tracemalloc.stop()
    with open("/proc/self/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
    return used / 2**20, rss / 1024


def main() -> None:
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; medians of the runs shown")
    startup = startup_in_process()
    print(
        f"lab start-up with hotel, in process (server listening, apps installed): "
        f"median {_ms(statistics.median(startup))} over {len(startup)} runs "
        f"(min {_ms(min(startup))}, max {_ms(max(startup))})"
    )
    command = startup_command()
    print(
        f"'stratus lab up --app hotel' to its ready line (includes interpreter start): "
        f"median {_ms(statistics.median(command))} over {len(command)} runs"
    )
    for name, times in settle_after_fault().items():
        print(
            f"settle after fault {name}: median {_ms(statistics.median(times))} over "
            f"{len(times)} runs (max {_ms(max(times))})"
        )
    for label, times in list_thousand_pods().items():
        print(
            f"list pods over HTTP, {label}: median {_ms(statistics.median(times))} over "
            f"{len(times)} runs (max {_ms(max(times))})"
        )
    traced, rss = memory_thousand_pods()
    print(
        f"memory with 1,000 running pods: {traced:.1f} MiB traced by tracemalloc "
        f"(objects, events, logs, runtime state); process RSS {rss:.0f} MiB"
    )


if __name__ == "__main__":
    main()
