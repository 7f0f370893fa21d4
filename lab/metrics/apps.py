"""The sample apps' own request metrics, as each pod's ``/metrics`` would expose them.

Server side, ``http_requests_total`` and ``http_request_duration_seconds`` count what a
pod answered through a Service; client side, ``http_client_requests_total`` counts the
calls it made by destination Service and the status it saw. The numbers are the traffic
model's (``lab.controllers.request_metrics``). Only pods with a running container are
exposed: a pod that is not running has no endpoint to scrape.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

from lab.controllers.kubelet import Kubelet
from lab.controllers.traffic import TrafficSimulator

_SERVER = ["namespace", "service", "pod"]


class AppsCollector:
    """A prometheus_client collector over the traffic model's per-pod counters."""

    def __init__(self, traffic: TrafficSimulator, kubelet: Kubelet) -> None:
        self.traffic = traffic
        self.kubelet = kubelet

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "http_requests_total",
            "Requests the pod answered, by HTTP status code.",
            labels=[*_SERVER, "code"],
        )
        duration = HistogramMetricFamily(
            "http_request_duration_seconds",
            "Time the pod took to answer a request, its own calls included.",
            labels=_SERVER,
        )
        client = CounterMetricFamily(
            "http_client_requests_total",
            "Requests the pod made to other services, by the status it saw.",
            labels=[*_SERVER, "destination_service", "code"],
        )
        for uid, pod in self.traffic.pods.items():
            run = self.kubelet.runs.get(uid)
            if run is None or not any(c.state == "running" for c in run.main):
                continue
            for service, series in sorted(pod.server.items()):
                labels = [pod.namespace, service, pod.pod]
                for code, count in sorted(series.by_code.items()):
                    requests.add_metric([*labels, code], count)
                duration.add_metric(labels, series.cumulative_buckets(), series.latency_sum)
            for (destination, code), count in sorted(pod.client.items()):
                client.add_metric([pod.namespace, pod.service, pod.pod, destination, code], count)
        yield from (requests, duration, client)
