"""Small cluster-wide controllers: node heartbeats and cordon taints, the HPA."""

from __future__ import annotations

from typing import Any

from lab.cluster.resources import by_kind
from lab.controllers.context import ControllerContext

_SCALE_TARGETS = {
    "Deployment": "deployments.apps",
    "StatefulSet": "statefulsets.apps",
    "ReplicaSet": "replicasets.apps",
}


class NodeController:
    """The kubelets' heartbeats: each node condition's lastHeartbeatTime stays within
    ``HEARTBEAT`` seconds of the clock.

    Like a real cluster's node lifecycle controller, it taints a cordoned node with
    ``node.kubernetes.io/unschedulable:NoSchedule`` and removes the taint when the node is
    uncordoned (Stratus's undo treats that taint as the controller's, not a person's change).
    """

    UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"

    HEARTBEAT = 40.0

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        now = self.ctx.clock.now()
        stamp = self.ctx.clock.timestamp()
        for stored in list(self.ctx.store.iter_all("nodes")):
            node = self._mirror_unschedulable(stored, stamp)
            status = node.get("status") or {}
            conditions = status.get("conditions") or []
            if not any(
                now - self.ctx.clock.parse(c.get("lastHeartbeatTime")) >= self.HEARTBEAT
                for c in conditions
            ):
                continue
            conditions = [{**c, "lastHeartbeatTime": stamp} for c in conditions]
            self.ctx.write_status("nodes", node, {**status, "conditions": conditions})

    def _mirror_unschedulable(self, node: dict[str, Any], stamp: str) -> dict[str, Any]:
        spec = node.get("spec") or {}
        taints = list(spec.get("taints") or [])
        has = any(t.get("key") == self.UNSCHEDULABLE_TAINT for t in taints)
        wanted = bool(spec.get("unschedulable"))
        if has == wanted:
            return node
        if wanted:
            taints.append(
                {"key": self.UNSCHEDULABLE_TAINT, "effect": "NoSchedule", "timeAdded": stamp}
            )
        else:
            taints = [t for t in taints if t.get("key") != self.UNSCHEDULABLE_TAINT]
        changed = {**spec}
        if taints:
            changed["taints"] = taints
        else:
            changed.pop("taints", None)
        return self.ctx.write_object("nodes", {**node, "spec": changed})


class HorizontalPodAutoscalerController:
    """Keeps the target's replicas within [minReplicas, maxReplicas] and reports status.

    Utilization is simulated as a steady 40 % of the CPU request, so the HPA holds the current
    replica count unless its bounds say otherwise — which is what the lab's faults exercise.
    """

    UTILIZATION = 40

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        for hpa in self.ctx.store.iter_all("horizontalpodautoscalers.autoscaling"):
            self._sync(hpa)

    def _sync(self, hpa: dict[str, Any]) -> None:
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        key = _SCALE_TARGETS.get(ref.get("kind", ""))
        namespace = hpa["metadata"]["namespace"]
        target = self.ctx.store.get(key, namespace, ref.get("name", "")) if key else None
        now = self.ctx.clock.timestamp()
        if target is None:
            status = {
                "currentReplicas": 0,
                "desiredReplicas": 0,
                "conditions": [
                    {
                        "type": "AbleToScale",
                        "status": "False",
                        "reason": "FailedGetScale",
                        "message": "the HPA controller was unable to get the target's current "
                        f'scale: {(ref.get("kind") or "").lower()}s "{ref.get("name")}" not found',
                        "lastTransitionTime": now,
                    }
                ],
            }
            self._write(hpa, status)
            return
        current = int(target["spec"].get("replicas", 1))
        low = int(spec.get("minReplicas", 1))
        high = int(spec.get("maxReplicas", current))
        desired = min(max(current, low), high)
        limited = desired != current
        reason = (
            "All metrics below target"
            if desired < current
            else "Current number of replicas below Spec.MinReplicas"
        )
        if limited and key is not None:
            self.ctx.api.patch(
                by_kind(target["kind"]),
                namespace,
                target["metadata"]["name"],
                f'{{"spec":{{"replicas":{desired}}}}}'.encode(),
                "application/merge-patch+json",
            )
            self.ctx.events.record(
                hpa,
                "Normal",
                "SuccessfulRescale",
                f"New size: {desired}; reason: {reason}",
                component="horizontal-pod-autoscaler",
            )
        status = {
            "currentReplicas": current,
            "desiredReplicas": desired,
            "currentMetrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "current": {"averageUtilization": self.UTILIZATION, "averageValue": "40m"},
                    },
                }
            ],
            "conditions": [
                {
                    "type": "AbleToScale",
                    "status": "True",
                    "reason": "ReadyForNewScale",
                    "message": "recommended size matches current size",
                    "lastTransitionTime": now,
                },
                {
                    "type": "ScalingActive",
                    "status": "True",
                    "reason": "ValidMetricFound",
                    "message": "the HPA was able to successfully calculate a replica count "
                    "from cpu resource utilization (percentage of request)",
                    "lastTransitionTime": now,
                },
                {
                    "type": "ScalingLimited",
                    "status": "True" if limited else "False",
                    "reason": "TooManyReplicas" if desired < current else "DesiredWithinRange",
                    "message": "the desired count is within the acceptable range",
                    "lastTransitionTime": now,
                },
            ],
        }
        self._write(hpa, status)

    def _write(self, hpa: dict[str, Any], status: dict[str, Any]) -> None:
        old = hpa.get("status") or {}
        if {k: v for k, v in old.items() if k != "conditions"} == {
            k: v for k, v in status.items() if k != "conditions"
        } and [(c["type"], c["status"]) for c in old.get("conditions") or []] == [
            (c["type"], c["status"]) for c in status.get("conditions") or []
        ]:
            return
        self.ctx.write_status("horizontalpodautoscalers.autoscaling", hpa, status)
