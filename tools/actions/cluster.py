"""Actions on cluster-level and namespace guard objects: nodes (cordon, uncordon, taints),
pods a controller replaces, HPAs, ResourceQuotas and unbound PersistentVolumeClaims."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from tools.actions.base import Action, WritePlan, map_at
from tools.errors import Invalid


class PatchHpa(Action):
    name = "patch-hpa"
    example = "hpa/web min-replicas=2 max-replicas=10"
    kinds = ("HorizontalPodAutoscaler",)
    min_replicas: int | None = Field(default=None, ge=1)
    max_replicas: int | None = Field(default=None, ge=1)

    def intent(self, current: dict[str, Any]) -> str:
        spec = current["spec"]
        low = self.min_replicas or _floor(spec)
        high = self.max_replicas or spec.get("maxReplicas")
        return (
            f"Set horizontalpodautoscaler/{self.target} in {self.namespace} to "
            f"{low}-{high} replicas"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        spec = obj["spec"]
        if self.min_replicas is not None:
            spec["minReplicas"] = self.min_replicas
        if self.max_replicas is not None:
            spec["maxReplicas"] = self.max_replicas
        if _floor(spec) > spec["maxReplicas"]:
            raise Invalid(f"minReplicas {_floor(spec)} is above maxReplicas {spec['maxReplicas']}")


def _floor(spec: dict[str, Any]) -> int:
    """An HPA's minReplicas: optional, one when absent or null."""
    low = spec.get("minReplicas")
    return 1 if low is None else int(low)


class Cordon(Action):
    name = "cordon"
    example = "node/node-1"
    kinds = ("Node",)

    def intent(self, current: dict[str, Any]) -> str:
        return f"Cordon node/{self.target}: no new pods are scheduled on it"

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        obj.setdefault("spec", {})["unschedulable"] = True


class Uncordon(Action):
    name = "uncordon"
    example = "node/node-1"
    kinds = ("Node",)
    risk = "low"

    def intent(self, current: dict[str, Any]) -> str:
        return f"Uncordon node/{self.target}: pods may be scheduled on it again"

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        obj.setdefault("spec", {}).pop("unschedulable", None)


class DeletePod(Action):
    """Only pods a controller will replace: the controller is the inverse."""

    name = "delete-pod"
    example = "pod/web-5d8f7c9b4-abcde"
    kinds = ("Pod",)
    risk = "low"
    reversible = False  # the controller makes a new pod; this one (and its state) is gone
    operation = "delete"

    def intent(self, current: dict[str, Any]) -> str:
        owner: dict[str, Any] = next(
            (o for o in current["metadata"].get("ownerReferences") or [] if o.get("controller")), {}
        )
        return (
            f"Delete pod/{self.target} in {self.namespace}; "
            f"{owner.get('kind', 'its controller').lower()}/{owner.get('name', '')} "
            "replaces it"
        )

    def plan(
        self, current: dict[str, Any] | None, related: list[dict[str, Any]] | None = None
    ) -> WritePlan:
        if current is not None and not any(
            o.get("controller") for o in current["metadata"].get("ownerReferences") or []
        ):
            raise Invalid(
                f"pod/{self.target} is not owned by a controller: deleting it would "
                "lose it for good"
            )
        return super().plan(current, related)


class DeleteJob(Action):
    """Only a Job a CronJob made: the CronJob runs again at its next schedule, from its own
    (possibly fixed) template. A Job's template is immutable, so a broken run cannot be
    repaired in place; deleting it takes its stuck pods with it."""

    name = "delete-job"
    example = "job/report-29012345"
    kinds = ("Job",)
    risk = "medium"
    reversible = False  # a re-created Job would run again; the CronJob is the inverse
    operation = "delete"

    def intent(self, current: dict[str, Any]) -> str:
        owner = _controller(current)
        return (
            f"Delete job/{self.target} in {self.namespace} and its pods; "
            f"cronjob/{owner.get('name', '')} runs again at its next schedule"
        )

    def plan(
        self, current: dict[str, Any] | None, related: list[dict[str, Any]] | None = None
    ) -> WritePlan:
        if current is not None and _controller(current).get("kind") != "CronJob":
            raise Invalid(
                f"job/{self.target} was not made by a CronJob: deleting it would lose its run "
                "for good"
            )
        return super().plan(current, related)


def _controller(obj: dict[str, Any]) -> dict[str, Any]:
    owners = obj["metadata"].get("ownerReferences") or []
    found: dict[str, Any] = next((o for o in owners if o.get("controller")), {})
    return found


class RemoveTaint(Action):
    """Remove a taint a person put on a node (the node controller's own taints mirror the
    node's state and are not removed this way: uncordon a cordoned node instead)."""

    name = "remove-taint"
    example = "node/node-1 key=dedicated effect=NoSchedule"
    kinds = ("Node",)
    risk = "high"
    key: str = Field(min_length=1, max_length=316, pattern=r"^[-._/a-zA-Z0-9]+$")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        default=None, description="default: every effect of that key"
    )

    def intent(self, current: dict[str, Any]) -> str:
        which = f"{self.key}:{self.effect}" if self.effect else self.key
        return f"Remove the taint {which} from node/{self.target}"

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        if self.key.startswith("node.kubernetes.io/"):
            raise Invalid(
                f"{self.key} is set by the node controller from the node's state; fix the "
                "state (uncordon a cordoned node) instead"
            )
        spec = obj.setdefault("spec", {})
        taints = spec.get("taints") or []
        kept = [
            t
            for t in taints
            if not (t.get("key") == self.key and self.effect in (None, t.get("effect")))
        ]
        if len(kept) == len(taints):
            raise Invalid(f"node/{self.target} has no taint {self.key}")
        if kept:
            spec["taints"] = kept
        else:
            spec.pop("taints")


class SetQuota(Action):
    name = "set-quota"
    example = "resourcequota/compute resource=pods value=20"
    kinds = ("ResourceQuota",)
    resource: str = Field(
        min_length=1, pattern=r"^[-._/a-zA-Z0-9]+$", description="a spec.hard key"
    )
    value: str = Field(pattern=r"^[0-9]+(\.[0-9]+)?([numkMGTPE]i?|[eE][0-9]+)?$")

    def intent(self, current: dict[str, Any]) -> str:
        before = ((current.get("spec") or {}).get("hard") or {}).get(self.resource)
        return (
            f"Set the {self.resource} limit of resourcequota/{self.target} in {self.namespace}"
            f"{f' from {before}' if before is not None else ''} to {self.value}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        map_at(obj.setdefault("spec", {}), "hard")[self.resource] = self.value


class DeleteResourceQuota(Action):
    name = "delete-resourcequota"
    example = "resourcequota/pod-limit"
    kinds = ("ResourceQuota",)
    risk = "high"
    operation = "delete"

    def intent(self, current: dict[str, Any]) -> str:
        return (
            f"Delete resourcequota/{self.target} in {self.namespace}: nothing limits the "
            "namespace any more (re-created on undo)"
        )


class DeletePvc(Action):
    """Only a claim that is not bound: it holds no data, and its owner (a StatefulSet) makes
    it again from its template when its pod is re-created."""

    name = "delete-pvc"
    example = "persistentvolumeclaim/data-db-0"
    kinds = ("PersistentVolumeClaim",)
    operation = "delete"

    def intent(self, current: dict[str, Any]) -> str:
        phase = (current.get("status") or {}).get("phase") or "Pending"
        return (
            f"Delete the {phase.lower()} claim persistentvolumeclaim/{self.target} in "
            f"{self.namespace} (it holds no volume; re-created on undo)"
        )

    def plan(
        self, current: dict[str, Any] | None, related: list[dict[str, Any]] | None = None
    ) -> WritePlan:
        if current is not None and (
            (current.get("status") or {}).get("phase") == "Bound"
            or (current.get("spec") or {}).get("volumeName")
        ):
            raise Invalid(
                f"persistentvolumeclaim/{self.target} is bound to a volume: deleting it could "
                "lose data, and Stratus deletes only claims that were never bound"
            )
        return super().plan(current, related)
