"""ReplicaSet, StatefulSet and DaemonSet controllers: keep the right pods in existence."""

from __future__ import annotations

import copy
from typing import Any

from lab.cluster.resources import by_kind
from lab.controllers.context import ControllerContext
from lab.controllers.scheduling import node_accepts
from lab.controllers.workloads import (
    create_pod,
    delete_pod,
    owned,
    pod_is_active,
    pod_is_ready,
    template_hash,
)

REVISION_LABEL = "controller-revision-hash"


def _deletion_rank(pod: dict[str, Any]) -> tuple[int, int, str]:
    """Which pods a scale-down removes first: unscheduled, then not ready, then the newest."""
    scheduled = 1 if (pod.get("spec") or {}).get("nodeName") else 0
    ready = 1 if pod_is_ready(pod) else 0
    created = pod["metadata"].get("creationTimestamp", "")
    inverted = "".join(chr(255 - ord(c)) for c in created)
    return (scheduled, ready, inverted)


def _counts(pods: list[dict[str, Any]]) -> tuple[int, int]:
    ready = sum(1 for p in pods if pod_is_ready(p))
    return len(pods), ready


class ReplicaSetController:
    KEY = "replicasets.apps"
    COMPONENT = "replicaset-controller"
    RETRY_SECONDS = 10.0

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._retry_at: dict[str, float] = {}

    def _retry_later(self, namespace: str) -> None:
        """A steady wait for the retry, cut short when a quota, the pods or the service
        accounts change."""
        refused_under = self._quota_state(namespace)

        def changed() -> bool:
            return self._quota_state(namespace) != refused_under

        self.ctx.clock.call_later(self.RETRY_SECONDS, lambda: None, steady=True, wake=changed)

    def _quota_state(self, namespace: str) -> tuple[Any, ...]:
        hard = tuple(
            (q["metadata"]["name"], sorted(((q.get("spec") or {}).get("hard") or {}).items()))
            for q in self.ctx.store.list_objects("resourcequotas", namespace)
        )
        accounts = sorted(
            a["metadata"]["name"] for a in self.ctx.store.list_objects("serviceaccounts", namespace)
        )
        return hard, len(self.ctx.store.list_objects("pods", namespace)), accounts

    def reconcile(self) -> None:
        for rs in self.ctx.store.iter_all(self.KEY):
            self._sync(rs)

    def _sync(self, rs: dict[str, Any]) -> None:
        pods = [p for p in owned(self.ctx, "pods", rs) if pod_is_active(p)]
        desired = int(rs["spec"].get("replicas", 1))
        uid = rs["metadata"]["uid"]
        failed_create = uid in self._retry_at
        if len(pods) < desired and self._retry_at.get(uid, 0.0) <= self.ctx.clock.now():
            failed_create = False
            self._retry_at.pop(uid, None)
            for _ in range(desired - len(pods)):
                pod = create_pod(
                    self.ctx,
                    rs,
                    rs["spec"]["template"],
                    generate_name=f"{rs['metadata']['name']}-",
                    component=self.COMPONENT,
                )
                if pod is None:
                    # Like the real controller, back off instead of hammering admission.
                    failed_create = True
                    self._retry_at[uid] = self.ctx.clock.now() + self.RETRY_SECONDS
                    self._retry_later(rs["metadata"]["namespace"])
                    break
                pods.append(pod)
        elif len(pods) >= desired:
            self._retry_at.pop(uid, None)
            failed_create = False
            for pod in sorted(pods, key=_deletion_rank)[: len(pods) - desired]:
                delete_pod(self.ctx, rs, pod, component=self.COMPONENT)
                pods.remove(pod)
        fresh = self.ctx.store.get(self.KEY, rs["metadata"]["namespace"], rs["metadata"]["name"])
        if fresh is None:
            return
        total, ready = _counts(pods)
        status: dict[str, Any] = {
            "replicas": total,
            "fullyLabeledReplicas": total,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": fresh["metadata"].get("generation", 1),
        }
        if failed_create:
            message = next(
                (
                    e["message"]
                    for e in self.ctx.store.list_objects("events", rs["metadata"]["namespace"])
                    if e["involvedObject"].get("uid") == rs["metadata"]["uid"]
                    and e["reason"] == "FailedCreate"
                ),
                "",
            )
            status["conditions"] = [
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "reason": "FailedCreate",
                    "message": message,
                    "lastTransitionTime": self.ctx.clock.timestamp(),
                }
            ]
        elif (fresh.get("status") or {}).get("conditions"):
            status.pop("conditions", None)
        status = {k: v for k, v in status.items() if v != 0 or k == "replicas"}
        previous = fresh.get("status") or {}
        if previous.get("conditions") and "conditions" in status:
            status["conditions"][0]["lastTransitionTime"] = previous["conditions"][0].get(
                "lastTransitionTime"
            )
        self.ctx.write_status(self.KEY, fresh, status)


class ReplicationControllerController(ReplicaSetController):
    """The v1 ReplicationController: a ReplicaSet with an equality-only selector."""

    KEY = "replicationcontrollers"
    COMPONENT = "replication-controller"


class StatefulSetController:
    COMPONENT = "statefulset-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        for sts in self.ctx.store.iter_all("statefulsets.apps"):
            self._sync(sts)

    def _sync(self, sts: dict[str, Any]) -> None:
        name = sts["metadata"]["name"]
        desired = int(sts["spec"].get("replicas", 1))
        revision = f"{name}-{template_hash(sts['spec']['template'])}"
        pods = {p["metadata"]["name"]: p for p in owned(self.ctx, "pods", sts)}
        ordered = sts["spec"].get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        for ordinal in range(desired):
            pod_name = f"{name}-{ordinal}"
            pod = pods.get(pod_name)
            if pod is None:
                create_pod(
                    self.ctx,
                    sts,
                    self._template_with_claims(sts, ordinal),
                    name=pod_name,
                    extra_labels={
                        REVISION_LABEL: revision,
                        "statefulset.kubernetes.io/pod-name": pod_name,
                        "apps.kubernetes.io/pod-index": str(ordinal),
                    },
                    component=self.COMPONENT,
                )
                if ordered:
                    break
            elif ordered and not pod_is_ready(pod):
                break
        for pod_name, pod in sorted(pods.items(), reverse=True):
            ordinal = (
                int(pod_name.rsplit("-", 1)[1]) if pod_name.rsplit("-", 1)[1].isdigit() else desired
            )
            if ordinal >= desired:
                delete_pod(self.ctx, sts, pod, component=self.COMPONENT)
                if ordered:
                    break
        self._roll(sts, revision, desired)
        self._update_status(sts, revision)

    def _template_with_claims(self, sts: dict[str, Any], ordinal: int) -> dict[str, Any]:
        """The pod template with one PersistentVolumeClaim per claim template and ordinal."""
        template: dict[str, Any] = copy.deepcopy(sts["spec"]["template"])
        namespace = sts["metadata"]["namespace"]
        volumes = template.setdefault("spec", {}).setdefault("volumes", [])
        for claim in sts["spec"].get("volumeClaimTemplates") or []:
            claim_name = f"{claim['metadata']['name']}-{sts['metadata']['name']}-{ordinal}"
            if self.ctx.store.get("persistentvolumeclaims", namespace, claim_name) is None:
                pvc = {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": claim_name,
                        "namespace": namespace,
                        "labels": dict(sts["spec"]["selector"].get("matchLabels") or {}),
                    },
                    "spec": copy.deepcopy(claim.get("spec") or {}),
                }
                self.ctx.api.create(by_kind("PersistentVolumeClaim"), namespace, pvc)
            volumes.append(
                {
                    "name": claim["metadata"]["name"],
                    "persistentVolumeClaim": {"claimName": claim_name},
                }
            )
        return template

    def _roll(self, sts: dict[str, Any], revision: str, desired: int) -> None:
        pods = sorted(
            owned(self.ctx, "pods", sts), key=lambda p: p["metadata"]["name"], reverse=True
        )
        if not all(pod_is_ready(p) for p in pods) or len(pods) < desired:
            stale = [
                p
                for p in pods
                if p["metadata"].get("labels", {}).get(REVISION_LABEL) != revision
                and not pod_is_ready(p)
            ]
            # A broken pod of an old revision is replaced at once, like the real controller
            # does once the update strategy allows it.
            for pod in stale[:1]:
                delete_pod(self.ctx, sts, pod, component=self.COMPONENT)
            return
        for pod in pods:
            if pod["metadata"].get("labels", {}).get(REVISION_LABEL) != revision:
                delete_pod(self.ctx, sts, pod, component=self.COMPONENT)
                return

    def _update_status(self, sts: dict[str, Any], revision: str) -> None:
        fresh = self.ctx.store.get(
            "statefulsets.apps", sts["metadata"]["namespace"], sts["metadata"]["name"]
        )
        if fresh is None:
            return
        pods = owned(self.ctx, "pods", fresh)
        total, ready = _counts(pods)
        updated = sum(
            1 for p in pods if p["metadata"].get("labels", {}).get(REVISION_LABEL) == revision
        )
        status = {
            "observedGeneration": fresh["metadata"].get("generation", 1),
            "replicas": total,
            "readyReplicas": ready,
            "currentReplicas": updated,
            "updatedReplicas": updated,
            "availableReplicas": ready,
            "currentRevision": revision,
            "updateRevision": revision,
            "collisionCount": 0,
        }
        self.ctx.write_status("statefulsets.apps", fresh, status)


# What the DaemonSet controller adds to its pods, so they stay on troubled or cordoned nodes.
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)


def daemon_template(template: dict[str, Any]) -> dict[str, Any]:
    spec = dict(template.get("spec") or {})
    tolerations = list(spec.get("tolerations") or [])
    for key, effect in DAEMON_TOLERATIONS:
        if not any(t.get("key") == key and t.get("effect") == effect for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    return {**template, "spec": {**spec, "tolerations": tolerations}}


class DaemonSetController:
    COMPONENT = "daemonset-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        for ds in self.ctx.store.iter_all("daemonsets.apps"):
            self._sync(ds)

    def _sync(self, ds: dict[str, Any]) -> None:
        template = ds["spec"]["template"]
        revision = template_hash(template)
        template = daemon_template(template)
        nodes = [
            n
            for n in self.ctx.store.list_objects("nodes")
            if node_accepts(n, template.get("spec") or {}, ignore_unschedulable=True)[0]
        ]
        pods = owned(self.ctx, "pods", ds)
        by_node: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            by_node.setdefault((pod.get("spec") or {}).get("nodeName", ""), []).append(pod)
        wanted = {n["metadata"]["name"] for n in nodes}
        for node in sorted(wanted):
            current = by_node.get(node, [])
            if not current:
                create_pod(
                    self.ctx,
                    ds,
                    template,
                    generate_name=f"{ds['metadata']['name']}-",
                    extra_labels={REVISION_LABEL: revision},
                    node_name=node,
                    component=self.COMPONENT,
                )
            elif current[0]["metadata"].get("labels", {}).get(REVISION_LABEL) != revision:
                delete_pod(self.ctx, ds, current[0], component=self.COMPONENT)
        for node, node_pods in by_node.items():
            if node not in wanted:
                for pod in node_pods:
                    delete_pod(self.ctx, ds, pod, component=self.COMPONENT)
        fresh = self.ctx.store.get(
            "daemonsets.apps", ds["metadata"]["namespace"], ds["metadata"]["name"]
        )
        if fresh is None:
            return
        pods = owned(self.ctx, "pods", fresh)
        scheduled = [p for p in pods if (p.get("spec") or {}).get("nodeName") in wanted]
        ready = sum(1 for p in scheduled if pod_is_ready(p))
        updated = sum(
            1 for p in scheduled if p["metadata"].get("labels", {}).get(REVISION_LABEL) == revision
        )
        status = {
            "currentNumberScheduled": len(scheduled),
            "desiredNumberScheduled": len(wanted),
            "numberMisscheduled": len(pods) - len(scheduled),
            "numberReady": ready,
            "numberAvailable": ready,
            "updatedNumberScheduled": updated,
            "observedGeneration": fresh["metadata"].get("generation", 1),
        }
        if len(wanted) - ready:
            status["numberUnavailable"] = len(wanted) - ready
        self.ctx.write_status("daemonsets.apps", fresh, status)
