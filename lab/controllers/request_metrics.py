"""Per-pod request counters kept by the traffic model, as each app's own /metrics would.

Server side: what a pod answered through a Service, by HTTP status, with a latency
histogram. Client side: the calls a pod made to other Services, by the status it saw.
Counters only grow (in realtime mode with wall time, so ``rate()`` works); a pod's series
go when the pod does, as a per-pod scrape target would.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

from lab.cluster.selectors import matches_map

# prometheus_client's default buckets, which most instrumented services keep.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
# How one window's requests spread around their mean latency: (share, multiple of the mean).
# The shares' weighted mean is 1, so ``_sum / _count`` is the model's mean; p95 is ~1.8x it.
_SPREAD = tuple(
    (share, multiple / 1.1)
    for share, multiple in ((0.5, 0.8), (0.4, 1.2), (0.09, 2.0), (0.01, 4.0))
)


@dataclass
class ServerSeries:
    """One pod's answers through one Service."""

    by_code: dict[str, float] = field(default_factory=dict)
    bucket_counts: list[float] = field(default_factory=lambda: [0.0] * (len(BUCKETS) + 1))
    latency_sum: float = 0.0
    count: float = 0.0

    def observe(self, requests: float, code: str, latency: float) -> None:
        if requests <= 0:
            return
        self.by_code[code] = self.by_code.get(code, 0.0) + requests
        for share, multiple in _SPREAD:
            self.bucket_counts[bisect_left(BUCKETS, latency * multiple)] += requests * share
        self.latency_sum += requests * latency
        self.count += requests

    def cumulative_buckets(self) -> list[tuple[str, float]]:
        """``(le, count)`` pairs as the histogram exposes them, ending with ``+Inf``."""
        pairs: list[tuple[str, float]] = []
        running = 0.0
        for bound, count in zip((*map(repr, BUCKETS), "+Inf"), self.bucket_counts, strict=True):
            running += count
            pairs.append((bound, running))
        return pairs


@dataclass
class PodRequests:
    """Everything one pod's application metrics say."""

    namespace: str
    pod: str
    service: str  # the Service that selects the pod (its workload's name without one)
    server: dict[str, ServerSeries] = field(default_factory=dict)  # by Service called
    client: dict[tuple[str, str], float] = field(default_factory=dict)  # (destination, code)

    def served(self, service: str) -> ServerSeries:
        return self.server.setdefault(service, ServerSeries())

    def called(self, destination: str, code: str, requests: float) -> None:
        if requests > 0:
            key = (destination, code)
            self.client[key] = self.client.get(key, 0.0) + requests


def service_label(
    pod: dict[str, Any], services: list[dict[str, Any]], owners: dict[tuple[str, str], str]
) -> str:
    """The Service whose selector matches the pod (first by name), else its Deployment's
    (or other owner's) name, else the pod's own name."""
    labels = pod["metadata"].get("labels") or {}
    for service in services:
        selector = (service.get("spec") or {}).get("selector")
        if selector and matches_map(selector, labels):
            return str(service["metadata"]["name"])
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(owners.get((ref.get("kind", ""), ref.get("name", "")), ref.get("name", "")))
    return str(pod["metadata"]["name"])
