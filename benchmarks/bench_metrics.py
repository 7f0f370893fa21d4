"""Metrics exposition benchmarks: time and size of each scrape with ~1,000 running pods.

The hotel app with its ``search`` Deployment scaled to 1,000 replicas (each one serves
through the search Service and calls geo and rate, so every pod has server and client
series). Prints the median of several scrapes over HTTP, per target, and the body sizes.
Run with ``.venv/bin/python benchmarks/bench_metrics.py``; record the figures in
docs/benchmarks.md ("Lab metrics").
"""

from __future__ import annotations

import http.client
import statistics
import time
import urllib.parse

from lab.cluster.resources import by_kind
from lab.cluster_sim import Cluster
from lab.metrics.routes import APPS_PATH, KUBE_STATE_PATH
from lab.runner import LAB_TOKEN, LabServer

RUNS = 7
REPLICAS = 1000


def _scale_search(cluster: Cluster) -> int:
    # Room for 1,000 pods: more nodes like the lab's first (each takes 110 pods).
    node_rt = by_kind("Node")
    model = cluster.api.get(node_rt, "", "node-1")
    for index in range(4, 14):
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"node-{index}",
                "labels": {"kubernetes.io/hostname": f"node-{index}"},
            },
            "spec": {k: v for k, v in (model.get("spec") or {}).items() if k != "podCIDR"}
            | {"podCIDR": f"10.244.{index}.0/24"},
            "status": model.get("status") or {},
        }
        cluster.api.create(node_rt, "", node)
    cluster.settle()
    rt = by_kind("Deployment")
    deployment = cluster.api.get(rt, "hotel", "search")
    deployment["spec"]["replicas"] = REPLICAS
    # No requests: the nodes' pod count, not their CPU, bounds how many run.
    for container in deployment["spec"]["template"]["spec"]["containers"]:
        container.get("resources", {}).pop("requests", None)
    cluster.api.update(rt, "hotel", "search", deployment)
    cluster.settle()
    cluster.settle()  # a traffic window with every replica serving
    return sum(
        1 for run in cluster.kubelet.runs.values() if any(c.state == "running" for c in run.main)
    )


def main() -> None:
    server = LabServer(apps=["hotel"]).start()
    try:
        running = server.call(_scale_search)
        nodes = server.call(lambda c: [n["metadata"]["name"] for n in c.store.iter_all("nodes")])
        parsed = urllib.parse.urlparse(server.url)
        connection = http.client.HTTPConnection(parsed.hostname or "", parsed.port)
        headers = {"Authorization": f"Bearer {LAB_TOKEN}"}
        targets = {
            "kube-state-metrics": [KUBE_STATE_PATH],
            "cAdvisor (all nodes)": [f"/api/v1/nodes/{n}/proxy/metrics/cadvisor" for n in nodes],
            "apps": [APPS_PATH],
        }
        print(f"pods running: {running} (search x{REPLICAS} + the rest of hotel)")
        for name, paths in targets.items():
            times: list[float] = []
            size = 0
            samples = 0
            for _ in range(RUNS):
                started = time.perf_counter()
                size = samples = 0
                for path in paths:
                    connection.request("GET", path, headers=headers)
                    body = connection.getresponse().read()
                    size += len(body)
                    samples += sum(
                        1 for line in body.splitlines() if line and not line.startswith(b"#")
                    )
                times.append(time.perf_counter() - started)
            print(
                f"{name}: median {statistics.median(times) * 1000:.0f} ms "
                f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}; {RUNS} scrapes), "
                f"{size / 1024:.0f} KiB, {samples} samples"
            )
        connection.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
