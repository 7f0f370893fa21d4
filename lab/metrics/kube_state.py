"""kube-state-metrics: the state of pods, deployments, replica sets and nodes as series.

Read from the API objects (what ``kubectl get`` shows), with kube-state-metrics' names,
labels and types, so the community rules (kubernetes-mixin) query them unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from lab.cluster.quantity import parse
from lab.cluster.resources import by_kind
from lab.cluster.store import ObjectStore

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_POD = ["namespace", "pod", "uid"]
_CONTAINER = [*_POD, "container"]
_RESOURCE = [*_CONTAINER, "node", "resource", "unit"]
_DEPLOYMENT = ["namespace", "deployment"]


def _unit(resource: str) -> str:
    if resource == "cpu":
        return "core"
    if resource in ("memory", "ephemeral-storage", "storage") or resource.startswith("hugepages-"):
        return "byte"
    return "integer"


def _controller(obj: dict[str, Any]) -> dict[str, Any] | None:
    refs = obj["metadata"].get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), refs[0] if refs else None)


class _Families:
    def __init__(self) -> None:
        def gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=labels)

        self.pod_info = gauge(
            "kube_pod_info",
            "Information about pod.",
            [*_POD, "node", "created_by_kind", "created_by_name"],
        )
        self.pod_owner = gauge(
            "kube_pod_owner",
            "Information about the Pod's owner.",
            [*_POD, "owner_kind", "owner_name"],
        )
        self.phase = gauge("kube_pod_status_phase", "The pods current phase.", [*_POD, "phase"])
        self.ready = gauge(
            "kube_pod_status_ready",
            "Describes whether the pod is ready to serve requests.",
            [*_POD, "condition"],
        )
        self.restarts = CounterMetricFamily(
            "kube_pod_container_status_restarts_total",
            "The number of container restarts per container.",
            labels=_CONTAINER,
        )
        self.container_info = gauge(
            "kube_pod_container_info",
            "Information about a container in a pod.",
            [*_CONTAINER, "image"],
        )
        self.waiting = gauge(
            "kube_pod_container_status_waiting",
            "Describes whether the container is currently in waiting state.",
            _CONTAINER,
        )
        self.running = gauge(
            "kube_pod_container_status_running",
            "Describes whether the container is currently in running state.",
            _CONTAINER,
        )
        self.container_ready = gauge(
            "kube_pod_container_status_ready",
            "Describes whether the containers readiness check succeeded.",
            _CONTAINER,
        )
        self.waiting_reason = gauge(
            "kube_pod_container_status_waiting_reason",
            "Describes the reason the container is currently in waiting state.",
            [*_CONTAINER, "reason"],
        )
        self.last_terminated = gauge(
            "kube_pod_container_status_last_terminated_reason",
            "Describes the last reason the container was in terminated state.",
            [*_CONTAINER, "reason"],
        )
        self.limits = gauge(
            "kube_pod_container_resource_limits",
            "The number of requested limit resource by a container.",
            _RESOURCE,
        )
        self.requests = gauge(
            "kube_pod_container_resource_requests",
            "The number of requested request resource by a container.",
            _RESOURCE,
        )
        self.spec_replicas = gauge(
            "kube_deployment_spec_replicas",
            "Number of desired pods for a deployment.",
            _DEPLOYMENT,
        )
        self.status_replicas = gauge(
            "kube_deployment_status_replicas",
            "The number of replicas per deployment.",
            _DEPLOYMENT,
        )
        self.available = gauge(
            "kube_deployment_status_replicas_available",
            "The number of available replicas per deployment.",
            _DEPLOYMENT,
        )
        self.unavailable = gauge(
            "kube_deployment_status_replicas_unavailable",
            "The number of unavailable replicas per deployment.",
            _DEPLOYMENT,
        )
        self.updated = gauge(
            "kube_deployment_status_replicas_updated",
            "The number of updated replicas per deployment.",
            _DEPLOYMENT,
        )
        self.observed_generation = gauge(
            "kube_deployment_status_observed_generation",
            "The generation observed by the deployment controller.",
            _DEPLOYMENT,
        )
        self.generation = gauge(
            "kube_deployment_metadata_generation",
            "Sequence number representing a specific generation of the desired state.",
            _DEPLOYMENT,
        )
        self.rs_owner = gauge(
            "kube_replicaset_owner",
            "Information about the ReplicaSet's owner.",
            ["namespace", "replicaset", "owner_kind", "owner_name"],
        )
        self.node_info = gauge("kube_node_info", "Information about a cluster node.", ["node"])
        self.unschedulable = gauge(
            "kube_node_spec_unschedulable",
            "Whether a node can schedule new pods.",
            ["node"],
        )

    def all(self) -> list[Metric]:
        return list(vars(self).values())


def _pod(f: _Families, pod: dict[str, Any]) -> None:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    status = pod.get("status") or {}
    base = [meta["namespace"], meta["name"], meta["uid"]]
    node = spec.get("nodeName") or ""
    owner = _controller(pod)
    kind, name = (owner.get("kind", ""), owner.get("name", "")) if owner else ("<none>", "<none>")
    f.pod_info.add_metric([*base, node, kind, name], 1)
    f.pod_owner.add_metric([*base, kind, name], 1)
    phase = status.get("phase") or "Pending"
    for candidate in PHASES:
        f.phase.add_metric([*base, candidate], 1 if candidate == phase else 0)
    ready = next(
        (c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"),
        "Unknown",
    )
    for condition in ("true", "false", "unknown"):
        f.ready.add_metric([*base, condition], 1 if str(ready).lower() == condition else 0)
    statuses = {c.get("name"): c for c in status.get("containerStatuses") or []}
    for container in spec.get("containers") or []:
        cname = container.get("name", "")
        labels = [*base, cname]
        cs = statuses.get(cname) or {}
        state = cs.get("state") or {}
        f.container_info.add_metric([*labels, container.get("image", "")], 1)
        f.restarts.add_metric(labels, float(cs.get("restartCount") or 0))
        f.waiting.add_metric(labels, 1 if "waiting" in state or not cs else 0)
        f.running.add_metric(labels, 1 if "running" in state else 0)
        f.container_ready.add_metric(labels, 1 if cs.get("ready") else 0)
        waiting = state.get("waiting")
        if waiting is not None and waiting.get("reason"):
            f.waiting_reason.add_metric([*labels, waiting["reason"]], 1)
        last = (cs.get("lastState") or {}).get("terminated")
        if last is not None and last.get("reason"):
            f.last_terminated.add_metric([*labels, last["reason"]], 1)
        resources = container.get("resources") or {}
        for family, values in ((f.limits, "limits"), (f.requests, "requests")):
            for resource, value in (resources.get(values) or {}).items():
                try:
                    amount = float(parse(value))
                except ValueError:
                    continue
                family.add_metric([*labels, node, resource, _unit(resource)], amount)


def _deployment(f: _Families, deployment: dict[str, Any]) -> None:
    meta, status = deployment["metadata"], deployment.get("status") or {}
    labels = [meta["namespace"], meta["name"]]
    replicas = (deployment.get("spec") or {}).get("replicas")
    f.spec_replicas.add_metric(labels, 1 if replicas is None else replicas)
    f.status_replicas.add_metric(labels, status.get("replicas") or 0)
    f.available.add_metric(labels, status.get("availableReplicas") or 0)
    f.unavailable.add_metric(labels, status.get("unavailableReplicas") or 0)
    f.updated.add_metric(labels, status.get("updatedReplicas") or 0)
    f.observed_generation.add_metric(labels, status.get("observedGeneration") or 0)
    f.generation.add_metric(labels, meta.get("generation") or 0)


class KubeStateCollector:
    """A prometheus_client collector over the lab's object store."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        f = _Families()
        for pod in self.store.iter_all("pods"):
            _pod(f, pod)
        for deployment in self.store.iter_all(by_kind("Deployment").key):
            _deployment(f, deployment)
        for rs in self.store.iter_all(by_kind("ReplicaSet").key):
            owner = _controller(rs)
            kind, name = (owner.get("kind", ""), owner.get("name", "")) if owner else ("", "")
            f.rs_owner.add_metric(
                [rs["metadata"]["namespace"], rs["metadata"]["name"], kind, name], 1
            )
        for node in self.store.iter_all("nodes"):
            name = node["metadata"]["name"]
            f.node_info.add_metric([name], 1)
            f.unschedulable.add_metric(
                [name], 1 if (node.get("spec") or {}).get("unschedulable") else 0
            )
        yield from f.all()
