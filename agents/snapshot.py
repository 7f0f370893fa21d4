"""One bounded read of a namespace that the analyzers work on.

Analyzers are pure functions of a ``Snapshot``: the cluster is read once per look (a fixed set
of list calls plus a bounded number of log tails), so analysis is repeatable in tests and its
cost does not grow with the number of analyzers.

Secret values never enter a snapshot: each key's value is replaced by a short digest, so an
analyzer can tell that two Secrets hold the same password (or that a live value differs from
the last applied one) without anyone — a person or a model — seeing it.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from agents import snapshot_metrics
from agents.snapshot_metrics import NamespaceMetrics
from tools import errors
from tools.k8s import KubeClient
from tools.objects import redacted
from tools.prometheus import PrometheusClient

# What one look reads (apiVersion, kind). Optional kinds a cluster may not serve are skipped.
NAMESPACED = (
    ("v1", "Pod"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("v1", "Service"),
    ("v1", "Endpoints"),
    ("v1", "Event"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "ResourceQuota"),
    ("v1", "LimitRange"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("apps/v1", "ControllerRevision"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
)
CLUSTER = (("v1", "Node"), ("storage.k8s.io/v1", "StorageClass"))
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
LOG_PODS = 40  # log tails read per look, at most
LOG_LINES = 30
LOG_BYTES = 8_000


@dataclass(frozen=True)
class Snapshot:
    namespace: str
    objects: dict[str, list[dict[str, Any]]]  # kind → objects as the API returned them
    cluster: dict[str, list[dict[str, Any]]]  # Node, StorageClass
    logs: dict[str, str] = field(default_factory=dict)  # "pod/container" → tail
    previous_logs: dict[str, str] = field(default_factory=dict)  # of the last terminated run
    unavailable: tuple[str, ...] = ()  # kinds the cluster does not serve or refused
    metrics: NamespaceMetrics | None = None  # from Prometheus, when one is configured
    # Pods the incident itself saw failing while an attempt of it ran (pod name → why), which
    # events may no longer say (they expire in an hour): evidence against their revision when
    # a rollback is planned (``_workloads.failed_revisions``, issue 22). Empty outside one.
    seen_failing: dict[str, str] = field(default_factory=dict)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return self.objects.get(kind) or self.cluster.get(kind) or []

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return next((o for o in self.of(kind) if o["metadata"]["name"] == name), None)

    @property
    def pods(self) -> list[dict[str, Any]]:
        return self.of("Pod")


def _needs_logs(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    return any(
        not c.get("ready") or int(c.get("restartCount") or 0) > 0
        for c in (status.get("containerStatuses") or [])
        + (status.get("initContainerStatuses") or [])
    )


def _owner(pod: dict[str, Any]) -> str:
    owners = pod["metadata"].get("ownerReferences") or [{}]
    return str(owners[0].get("name", pod["metadata"]["name"]))


def log_targets(pods: Iterable[dict[str, Any]], limit: int = LOG_PODS) -> list[dict[str, Any]]:
    """Which pods' logs to read: every unwell pod first, then one running pod per owner (callers'
    errors show in healthy-looking pods), newest first, at most ``limit``."""
    ordered = sorted(
        pods, key=lambda p: str(p["metadata"].get("creationTimestamp") or ""), reverse=True
    )
    chosen = [p for p in ordered if _needs_logs(p)]
    seen_owners = {_owner(p) for p in chosen}
    for pod in ordered:
        owner = _owner(pod)
        if owner not in seen_owners and (pod.get("status") or {}).get("phase") == "Running":
            seen_owners.add(owner)
            chosen.append(pod)
    return chosen[:limit]


def _tail(kube: KubeClient, namespace: str, pod: str, container: str, previous: bool) -> str:
    try:
        text = kube.read_log(
            namespace, pod, container=container, tail_lines=LOG_LINES, previous=previous
        )
    except errors.ToolError:
        return ""
    return text[-LOG_BYTES:]


def take(
    kube: KubeClient, namespace: str, *, prometheus: PrometheusClient | None = None
) -> Snapshot:
    """Read the namespace once (raises ``tools.errors.NotFound`` if it does not exist), and
    Prometheus' trends for it alongside when a client is given."""
    if prometheus is None:
        return _take(kube, namespace)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-metrics") as pool:
        metrics = pool.submit(snapshot_metrics.read, prometheus, namespace)
        snap = _take(kube, namespace)
        return replace(snap, metrics=metrics.result())


def _take(kube: KubeClient, namespace: str) -> Snapshot:
    from tools.objects import ObjectRef

    kube.get(ObjectRef("Namespace", namespace))
    objects: dict[str, list[dict[str, Any]]] = {}
    cluster: dict[str, list[dict[str, Any]]] = {}
    unavailable: list[str] = []
    for api_version, kind in NAMESPACED:
        try:
            objects[kind] = kube.list(api_version, kind, namespace=namespace)
        except (errors.NotFound, errors.Forbidden):
            unavailable.append(kind)
    for api_version, kind in CLUSTER:
        try:
            cluster[kind] = kube.list(api_version, kind)
        except (errors.NotFound, errors.Forbidden):
            unavailable.append(kind)
    # The tool layer's redaction, so a digest an analyzer saw is the one a card shows.
    objects["Secret"] = [redacted(s) or s for s in objects.get("Secret", [])]
    logs: dict[str, str] = {}
    previous: dict[str, str] = {}
    for pod in log_targets(objects.get("Pod", [])):
        name = pod["metadata"]["name"]
        status = pod.get("status") or {}
        for c in (status.get("initContainerStatuses") or []) + (
            status.get("containerStatuses") or []
        ):
            cname = str(c.get("name"))
            state = c.get("state") or {}
            if "running" in state or "terminated" in state:
                logs[f"pod/{name}/{cname}"] = _tail(kube, namespace, name, cname, False)
            if (c.get("lastState") or {}).get("terminated"):
                previous[f"pod/{name}/{cname}"] = _tail(kube, namespace, name, cname, True)
    return Snapshot(namespace, objects, cluster, logs, previous, tuple(unavailable))
