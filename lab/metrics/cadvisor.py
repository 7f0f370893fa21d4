"""cAdvisor (the kubelet's container metrics) for one node: memory, CPU and limits.

Usage comes from ``lab.controllers.usage``: a container's working set ramps up to its
image's footprint and creeps to its limit before an OOM kill; CPU time grows at what the
image uses, capped by its limit (the rest is throttled). Only running containers have
series, as only they have a cgroup.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from lab.controllers import usage
from lab.controllers.kubelet import Kubelet

_LABELS = ["namespace", "pod", "container"]


class CadvisorCollector:
    """A prometheus_client collector over the containers the kubelet runs on ``node``."""

    def __init__(self, kubelet: Kubelet, node: str, now: float) -> None:
        self.kubelet = kubelet
        self.node = node
        self.now = now

    def collect(self) -> Iterator[Metric]:
        working_set = GaugeMetricFamily(
            "container_memory_working_set_bytes", "Current working set in bytes.", labels=_LABELS
        )
        limit = GaugeMetricFamily(
            "container_spec_memory_limit_bytes", "Memory limit for the container.", labels=_LABELS
        )
        cpu = CounterMetricFamily(
            "container_cpu_usage_seconds_total",
            "Cumulative cpu time consumed in seconds.",
            labels=[*_LABELS, "cpu"],
        )
        throttled = CounterMetricFamily(
            "container_cpu_cfs_throttled_seconds_total",
            "Total time duration the container has been throttled.",
            labels=_LABELS,
        )
        for run in self.kubelet.runs.values():
            if run.node != self.node:
                continue
            for container in run.all():
                if container.state != "running" or container.started_at is None:
                    continue
                labels = [run.namespace, run.name, container.name]
                working_set.add_metric(labels, usage.working_set_bytes(container, self.now))
                limit.add_metric(labels, usage.memory_limit_bytes(container))
                seconds = usage.cpu_seconds(container, self.now)
                cpu.add_metric([*labels, "total"], seconds)
                elapsed = max(self.now - container.started_at, 0.0)
                demand = usage.cpu_demand_cores(container) * elapsed
                throttled.add_metric(labels, max(demand - seconds, 0.0))
        yield from (working_set, limit, cpu, throttled)
