"""The scheduler and the volume binder.

The scheduler filters nodes as kube-scheduler does (unschedulable, nodeSelector, required
node affinity, taints and tolerations, CPU/memory requests against allocatable) and leaves a
pod Pending with a FailedScheduling event naming every reason, worded like the real one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from lab.cluster import quantity
from lab.controllers.context import ControllerContext

COMPONENT = "default-scheduler"


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
            continue
        operator = toleration.get("operator", "Equal")
        if operator == "Exists" and (
            not toleration.get("key") or toleration["key"] == taint.get("key")
        ):
            return True
        if toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get(
            "value", ""
        ):
            return True
    return False


def _affinity_matches(node_labels: dict[str, str], pod_spec: dict[str, Any]) -> bool:
    required = (
        ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    for term in terms:
        ok = True
        for expr in term.get("matchExpressions") or []:
            value = node_labels.get(expr.get("key", ""))
            values = expr.get("values") or []
            operator = expr.get("operator")
            if operator == "In":
                ok = ok and value in values
            elif operator == "NotIn":
                ok = ok and value not in values
            elif operator == "Exists":
                ok = ok and value is not None
            elif operator == "DoesNotExist":
                ok = ok and value is None
        if ok:
            return True
    return False


def node_accepts(
    node: dict[str, Any], pod_spec: dict[str, Any], *, ignore_unschedulable: bool = False
) -> tuple[bool, str]:
    """Whether a node passes the static filters; the reason is kube-scheduler's phrase."""
    labels = node["metadata"].get("labels") or {}
    if (node.get("spec") or {}).get("unschedulable") and not ignore_unschedulable:
        return False, "node(s) were unschedulable"
    selector = pod_spec.get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()) or not _affinity_matches(
        labels, pod_spec
    ):
        return False, "node(s) didn't match Pod's node affinity/selector"
    tolerations = pod_spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(
            tolerations, taint
        ):
            value = f": {taint['value']}" if taint.get("value") else ""
            return False, f"node(s) had untolerated taint {{{taint.get('key')}{value}}}"
    return True, ""


def pod_requests(pod_spec: dict[str, Any]) -> tuple[int, float]:
    cpu, memory = 0, 0.0
    for container in pod_spec.get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += quantity.millicores(requests.get("cpu", 0))
        memory += quantity.mebibytes(requests.get("memory", 0))
    return cpu, memory


class Scheduler:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._last_reason: dict[str, str] = {}

    def reconcile(self) -> None:
        pending = [
            p
            for p in self.ctx.store.iter_all("pods")
            if not (p.get("spec") or {}).get("nodeName")
            and (p.get("spec") or {}).get("schedulerName", "default-scheduler")
            == "default-scheduler"
        ]
        if not pending:
            return
        nodes = self.ctx.store.list_objects("nodes")
        usage = self._node_usage()
        for pod in sorted(pending, key=lambda p: p["metadata"].get("creationTimestamp", "")):
            self._schedule(pod, nodes, usage)

    def _node_usage(self) -> dict[str, tuple[int, float]]:
        usage: dict[str, tuple[int, float]] = {}
        for pod in self.ctx.store.iter_all("pods"):
            node = (pod.get("spec") or {}).get("nodeName")
            if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                cpu, memory = pod_requests(pod["spec"])
                used = usage.get(node, (0, 0.0))
                usage[node] = (used[0] + cpu, used[1] + memory)
        return usage

    def _volume_problem(self, pod: dict[str, Any]) -> str:
        namespace = pod["metadata"]["namespace"]
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim:
                continue
            pvc = self.ctx.store.get("persistentvolumeclaims", namespace, claim)
            if pvc is None:
                return f'persistentvolumeclaim "{claim}" not found'
            if (pvc.get("status") or {}).get("phase") != "Bound":
                return "pod has unbound immediate PersistentVolumeClaims"
        return ""

    def _schedule(
        self, pod: dict[str, Any], nodes: list[dict[str, Any]], usage: dict[str, tuple[int, float]]
    ) -> None:
        spec = pod["spec"]
        problem = self._volume_problem(pod)
        if problem:
            self._unschedulable(
                pod,
                f"0/{len(nodes)} nodes are available: {problem}. "
                "preemption: 0/{n} nodes are available: {n} Preemption is "
                "not helpful for scheduling.".replace("{n}", str(len(nodes))),
            )
            return
        cpu, memory = pod_requests(spec)
        reasons: Counter[str] = Counter()
        feasible = []
        for node in nodes:
            ok, reason = node_accepts(node, spec)
            if ok:
                allocatable = (node.get("status") or {}).get("allocatable") or {}
                used_cpu, used_memory = usage.get(node["metadata"]["name"], (0, 0.0))
                if used_cpu + cpu > quantity.millicores(allocatable.get("cpu", "0")):
                    ok, reason = False, "Insufficient cpu"
                elif used_memory + memory > quantity.mebibytes(allocatable.get("memory", "0")):
                    ok, reason = False, "Insufficient memory"
            if ok:
                feasible.append(node)
            else:
                reasons[reason] += 1
        if not feasible:
            detail = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
            message = (
                f"0/{len(nodes)} nodes are available: {detail}. preemption: "
                f"0/{len(nodes)} nodes are available: {len(nodes)} Preemption is not "
                "helpful for scheduling."
            )
            self._unschedulable(pod, message)
            return
        chosen = min(
            feasible,
            key=lambda n: (usage.get(n["metadata"]["name"], (0, 0.0))[0], n["metadata"]["name"]),
        )
        name = chosen["metadata"]["name"]
        used = usage.get(name, (0, 0.0))
        usage[name] = (used[0] + cpu, used[1] + memory)
        status = dict(pod.get("status") or {})
        status["phase"] = status.get("phase", "Pending")
        status["conditions"] = [
            c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"
        ] + [
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": self.ctx.clock.timestamp(),
            }
        ]
        self.ctx.write_object("pods", {**pod, "spec": {**spec, "nodeName": name}, "status": status})
        self._last_reason.pop(pod["metadata"]["uid"], None)
        self.ctx.events.record(
            pod,
            "Normal",
            "Scheduled",
            f"Successfully assigned {pod['metadata']['namespace']}/"
            f"{pod['metadata']['name']} to {name}",
            component=COMPONENT,
        )

    def _unschedulable(self, pod: dict[str, Any], message: str) -> None:
        uid = pod["metadata"]["uid"]
        if self._last_reason.get(uid) == message:
            return
        self._last_reason[uid] = message
        status = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": self.ctx.clock.timestamp(),
                    "reason": "Unschedulable",
                    "message": message,
                }
            ],
            "qosClass": "BestEffort",
        }
        self.ctx.write_status("pods", pod, status)
        self.ctx.events.record(pod, "Warning", "FailedScheduling", message, component=COMPONENT)

    def forget(self) -> None:
        self._last_reason.clear()


class VolumeBinder:
    """Binds claims whose storage class exists; others stay Pending with ProvisioningFailed."""

    COMPONENT = "persistentvolume-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._reported: set[str] = set()

    def reconcile(self) -> None:
        classes = {
            c["metadata"]["name"]: c
            for c in self.ctx.store.iter_all("storageclasses.storage.k8s.io")
        }
        default = next(
            (
                name
                for name, c in classes.items()
                if (c["metadata"].get("annotations") or {}).get(
                    "storageclass.kubernetes.io/is-default-class"
                )
                == "true"
            ),
            None,
        )
        for pvc in self.ctx.store.iter_all("persistentvolumeclaims"):
            if (pvc.get("status") or {}).get("phase") == "Bound":
                continue
            wanted = (pvc.get("spec") or {}).get("storageClassName") or default
            if wanted and wanted in classes:
                size = ((pvc["spec"].get("resources") or {}).get("requests") or {}).get(
                    "storage", "1Gi"
                )
                spec = {
                    **pvc["spec"],
                    "storageClassName": wanted,
                    "volumeName": f"pvc-{pvc['metadata']['uid']}",
                }
                status = {
                    "phase": "Bound",
                    "accessModes": pvc["spec"].get("accessModes", ["ReadWriteOnce"]),
                    "capacity": {"storage": size},
                }
                self.ctx.write_object(
                    "persistentvolumeclaims", {**pvc, "spec": spec, "status": status}
                )
                self.ctx.events.record(
                    pvc,
                    "Normal",
                    "ProvisioningSucceeded",
                    f"Successfully provisioned volume pvc-{pvc['metadata']['uid']}",
                    component=self.COMPONENT,
                )
            elif pvc["metadata"]["uid"] not in self._reported:
                self._reported.add(pvc["metadata"]["uid"])
                if (pvc.get("status") or {}).get("phase") != "Pending":
                    self.ctx.write_status("persistentvolumeclaims", pvc, {"phase": "Pending"})
                self.ctx.events.record(
                    pvc,
                    "Warning",
                    "ProvisioningFailed",
                    f'storageclass.storage.k8s.io "{wanted}" not found',
                    component=self.COMPONENT,
                )
