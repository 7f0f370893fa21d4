"""Actions on workloads (Deployments, StatefulSets, DaemonSets): scale, restart, roll back,
and change one field of the pod template (image, env, resources, command, node selector)."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import Field, field_validator

from tools.actions.base import WORKLOADS, Action, container_of, pod_spec
from tools.errors import Invalid

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"


class Scale(Action):
    name = "scale"
    example = "deployment/web replicas=3"
    kinds = ("Deployment", "StatefulSet")
    replicas: int = Field(ge=0, le=1000)

    def intent(self, current: dict[str, Any]) -> str:
        before = current["spec"].get("replicas", 1)
        noun = "replica" if self.replicas == 1 else "replicas"
        return (
            f"Scale {self.kind.lower()}/{self.target} in {self.namespace} from {before} to "
            f"{self.replicas} {noun}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        obj["spec"]["replicas"] = self.replicas


class RolloutRestart(Action):
    name = "rollout-restart"
    example = "deployment/web"
    kinds = WORKLOADS
    risk = "low"
    restarted_at: str = Field(description="the timestamp stamped on the pod template")

    def intent(self, current: dict[str, Any]) -> str:
        return f"Restart the pods of {self.kind.lower()}/{self.target} in {self.namespace}"

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        meta = obj["spec"]["template"].setdefault("metadata", {})
        meta.setdefault("annotations", {})["kubectl.kubernetes.io/restartedAt"] = self.restarted_at


class RolloutUndo(Action):
    name = "rollout-undo"
    example = "deployment/web to-revision=2"
    kinds = ("Deployment",)
    to_revision: int | None = Field(default=None, ge=1)

    def related(self) -> tuple[str, str]:
        return ("apps/v1", "ReplicaSet")

    def _revisions(
        self, current: dict[str, Any], related: list[dict[str, Any]]
    ) -> dict[int, dict[str, Any]]:
        uid = current["metadata"]["uid"]
        found = {}
        for rs in related:
            owners = rs["metadata"].get("ownerReferences") or []
            if any(o.get("uid") == uid for o in owners):
                revision = int((rs["metadata"].get("annotations") or {}).get(REVISION, "0"))
                found[revision] = rs
        return found

    def intent(self, current: dict[str, Any]) -> str:
        where = f"revision {self.to_revision}" if self.to_revision else "the previous revision"
        return f"Roll back deployment/{self.target} in {self.namespace} to {where}"

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        revisions = self._revisions(obj, related)
        current = int((obj["metadata"].get("annotations") or {}).get(REVISION, "0"))
        wanted = self.to_revision
        if wanted is None:
            older = [r for r in revisions if r < current]
            if not older:
                raise Invalid(f"deployment/{self.target} has no previous revision to roll back to")
            wanted = max(older)
        if wanted not in revisions:
            raise Invalid(
                f"deployment/{self.target} has no revision {wanted} (it has "
                f"{', '.join(str(r) for r in sorted(revisions)) or 'none'})"
            )
        template = copy.deepcopy(revisions[wanted]["spec"]["template"])
        (template.get("metadata") or {}).get("labels", {}).pop(HASH_LABEL, None)
        obj["spec"]["template"] = template


class SetImage(Action):
    name = "set-image"
    example = "deployment/web image=nginx:1.27 container=web"
    kinds = WORKLOADS
    image: str = Field(min_length=1)
    container: str | None = None

    def intent(self, current: dict[str, Any]) -> str:
        old = container_of(current, self.container)
        return (
            f"Set the image of container {old['name']} of {self.kind.lower()}/{self.target}"
            f" in {self.namespace} from {old.get('image')} to {self.image}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        container_of(obj, self.container)["image"] = self.image


class SetEnv(Action):
    name = "set-env"
    example = "deployment/web variable=LOG_LEVEL value=debug   (omit value= to remove it)"
    kinds = WORKLOADS
    variable: str = Field(min_length=1, pattern=r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
    value: str | None = Field(default=None, description="None removes the variable")
    container: str | None = None

    def intent(self, current: dict[str, Any]) -> str:
        container = container_of(current, self.container)["name"]
        what = (
            f"Set {self.variable}={self.value}"
            if self.value is not None
            else f"Remove {self.variable}"
        )
        return (
            f"{what} in container {container} of {self.kind.lower()}/{self.target} in "
            f"{self.namespace}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        container = container_of(obj, self.container)
        env = [e for e in container.get("env") or [] if e.get("name") != self.variable]
        if self.value is None:
            if len(env) == len(container.get("env") or []):
                raise Invalid(f"container {container['name']} has no variable {self.variable}")
        else:
            position = next(
                (
                    i
                    for i, e in enumerate(container.get("env") or [])
                    if e.get("name") == self.variable
                ),
                len(env),
            )
            env.insert(position, {"name": self.variable, "value": self.value})
        if env:
            container["env"] = env
        else:
            container.pop("env", None)


class SetResources(Action):
    name = "set-resources"
    example = "deployment/web limits=memory=256Mi requests=cpu=100m,memory=128Mi"
    kinds = WORKLOADS
    container: str | None = None
    requests: dict[str, str | None] = Field(default_factory=dict)
    limits: dict[str, str | None] = Field(default_factory=dict)

    @field_validator("requests", "limits")
    @classmethod
    def _resource_names(cls, values: dict[str, str | None]) -> dict[str, str | None]:
        unknown = set(values) - {"cpu", "memory", "ephemeral-storage"}
        if unknown:
            raise ValueError(f"unknown resource(s): {', '.join(sorted(unknown))}")
        return values

    def intent(self, current: dict[str, Any]) -> str:
        parts = [
            f"{section} {k}={v if v is not None else '(none)'}"
            for section, values in (("requests", self.requests), ("limits", self.limits))
            for k, v in values.items()
        ]
        container = container_of(current, self.container)["name"]
        return (
            f"Set {', '.join(parts)} on container {container} of "
            f"{self.kind.lower()}/{self.target} in {self.namespace}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        if not self.requests and not self.limits:
            raise Invalid("set-resources needs requests or limits")
        resources = container_of(obj, self.container).setdefault("resources", {})
        for section, values in (("requests", self.requests), ("limits", self.limits)):
            current = resources.setdefault(section, {})
            for key, value in values.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            if not current:
                resources.pop(section)


class SetCommand(Action):
    name = "set-command"
    example = 'deployment/web command=\'["/bin/app","--serve"]\''
    kinds = WORKLOADS
    risk = "high"
    container: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None

    def intent(self, current: dict[str, Any]) -> str:
        container = container_of(current, self.container)["name"]
        command = " ".join(self.command) if self.command else "(image default)"
        return (
            f"Set the command of container {container} of {self.kind.lower()}/"
            f"{self.target} in {self.namespace} to {command}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        container = container_of(obj, self.container)
        for field, value in (("command", self.command), ("args", self.args)):
            if value:
                container[field] = list(value)
            else:
                container.pop(field, None)


class SetNodeSelector(Action):
    name = "set-node-selector"
    example = "deployment/web node-selector=disktype=ssd   (omit to remove it)"
    kinds = WORKLOADS
    node_selector: dict[str, str] | None = Field(
        default=None, description="None removes the nodeSelector"
    )

    def intent(self, current: dict[str, Any]) -> str:
        if not self.node_selector:
            return (
                f"Remove the nodeSelector of {self.kind.lower()}/{self.target} in {self.namespace}"
            )
        selector = ",".join(f"{k}={v}" for k, v in self.node_selector.items())
        return (
            f"Set the nodeSelector of {self.kind.lower()}/{self.target} in "
            f"{self.namespace} to {selector}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        spec = pod_spec(obj)
        if self.node_selector:
            spec["nodeSelector"] = dict(self.node_selector)
        else:
            spec.pop("nodeSelector", None)
