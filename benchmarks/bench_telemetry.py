"""Telemetry benchmark: the telemetry summary of one proposal card (cluster signals plus the
five Prometheus range queries) against a realtime lab scraped by a real Prometheus.

Run with ``.venv/bin/python benchmarks/bench_telemetry.py``; record the figures in
docs/benchmarks.md. Goal (issue 11): < 200 ms median with Prometheus on this machine. Also
measured: the cluster-only summary (no metrics source) and the Prometheus part alone.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agents import telemetry_metrics as tm
from agents.telemetry import summarize
from lab.cluster.clock import REALTIME
from lab.prometheus import PrometheusStack
from lab.runner import LAB_TOKEN, LabServer, write_kubeconfig
from policies.evaluate import CompiledPolicy
from policies.loader import Policy
from proposals.service import ProposalService
from store.db import Store
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient, PrometheusConfig
from tools.reads import ClusterReader

RUNS = 21


def _ms(func: Callable[[], Any]) -> list[float]:
    func()  # warm up (connections, first query)
    out = []
    for _ in range(RUNS):
        started = time.perf_counter()
        func()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _line(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"{label:<40} median {statistics.median(samples):7.1f} ms   p90 {p90:7.1f} ms"


def main() -> None:
    os.environ.setdefault("STRATUS_TELEMETRY_WINDOW", "5m")
    lab = LabServer(mode=REALTIME, apps=["hotel"]).start()
    folder = Path(tempfile.mkdtemp(prefix="bench-telemetry-"))
    kubeconfig = write_kubeconfig(folder / "config", lab.url, "hotel")
    kube = KubeClient(kubeconfig=str(kubeconfig))
    store = Store(folder / "bench.db")
    policy = CompiledPolicy.build(Policy())
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=lambda: policy
    )
    proposal = service.propose(
        action="scale",
        kind="Deployment",
        name="geo",
        namespace="hotel",
        params={"replicas": 2},
        requester="bench",
    )
    reader = ClusterReader(kube)
    try:
        with PrometheusStack(lab_url=lab.url, token=LAB_TOKEN, workdir=folder / "prom") as prom:
            client = PrometheusClient(PrometheusConfig(url=prom.prometheus_url))
            time.sleep(15)  # some history for the window
            scope = tm.scope_for(kube, "hotel", "Deployment", "geo")
            assert scope is not None
            summary = summarize(reader, proposal, prometheus=client)
            assert summary.metrics_source == "prometheus", summary.metrics_reason
            print(
                _line(
                    "summary with Prometheus (one card)",
                    _ms(lambda: summarize(reader, proposal, prometheus=client)),
                )
            )
            print(
                _line("summary without a metrics source", _ms(lambda: summarize(reader, proposal)))
            )
            print(
                _line("Prometheus figures alone (5 queries)", _ms(lambda: tm.read(client, scope)))
            )
    finally:
        kube.close()
        store.close()
        lab.stop()


if __name__ == "__main__":
    main()
