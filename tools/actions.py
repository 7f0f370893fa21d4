"""The typed write-action catalog: the only writes Stratus can make.

Each action names its target, declares its risk, whether it can be undone, and says in one
sentence what it does. ``plan(current)`` is pure: from the object as read it computes the
object to write and a YAML diff of only what changes. The executor writes exactly the planned
object — never something recomputed later — which is what makes previews, dry-runs and undo
exact. There is no free-form shell and no free-form kubectl.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tools.errors import Invalid
from tools.objects import ObjectRef, normalized, yaml_diff

Risk = Literal["low", "medium", "high"]
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"


@dataclass(frozen=True)
class WritePlan:
    """What a write will do: the object before, the object to write (None: delete), the diff."""

    operation: str  # replace, create or delete
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    diff: str

    @property
    def changes_anything(self) -> bool:
        return self.operation != "replace" or normalized(self.before) != normalized(self.after)


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: ClassVar[str]
    kinds: ClassVar[tuple[str, ...]]
    risk: ClassVar[Risk] = "medium"
    reversible: ClassVar[bool] = True
    operation: ClassVar[str] = "replace"
    example: ClassVar[str] = ""

    kind: str
    target: str = Field(description="the object's name")
    namespace: str = ""

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in cls.kinds:
            raise ValueError(f"{cls.name} acts on {', '.join(cls.kinds)}, not {kind}")
        return kind

    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.target, "" if self.kind == "Node" else self.namespace)

    def intent(self, current: dict[str, Any]) -> str:
        raise NotImplementedError

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        """Change ``obj`` (a private copy) into the object to write."""
        raise NotImplementedError

    def related(self) -> tuple[str, str] | None:
        """(apiVersion, kind) of objects the plan also needs, listed by the target's selector."""
        return None

    def plan(
        self, current: dict[str, Any], related: list[dict[str, Any]] | None = None
    ) -> WritePlan:
        label = f"{self.kind.lower()}/{self.target}"
        if self.operation == "delete":
            return WritePlan("delete", current, None, yaml_diff(current, None, label=label))
        after = copy.deepcopy(current)
        self.mutate(after, related or [])
        return WritePlan("replace", current, after, yaml_diff(current, after, label=label))


# ------------------------------------------------------------------ helpers


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def _container(obj: dict[str, Any], name: str | None) -> dict[str, Any]:
    containers: list[dict[str, Any]] = _pod_spec(obj).get("containers") or []
    if name is None:
        if len(containers) == 1:
            return containers[0]
        raise Invalid(
            f"{obj['kind'].lower()}/{obj['metadata']['name']} has several containers "
            f"({', '.join(c['name'] for c in containers)}): name one with container="
        )
    for container in containers:
        if container["name"] == name:
            return container
    raise Invalid(
        f"{obj['kind'].lower()}/{obj['metadata']['name']} has no container {name!r} "
        f"(it has {', '.join(c['name'] for c in containers)})"
    )


# ------------------------------------------------------------------ workloads


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
        old = _container(current, self.container)
        return (
            f"Set the image of container {old['name']} of {self.kind.lower()}/{self.target}"
            f" in {self.namespace} from {old.get('image')} to {self.image}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        _container(obj, self.container)["image"] = self.image


class SetEnv(Action):
    name = "set-env"
    example = "deployment/web variable=LOG_LEVEL value=debug   (omit value= to remove it)"
    kinds = WORKLOADS
    variable: str = Field(min_length=1, pattern=r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
    value: str | None = Field(default=None, description="None removes the variable")
    container: str | None = None

    def intent(self, current: dict[str, Any]) -> str:
        container = _container(current, self.container)["name"]
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
        container = _container(obj, self.container)
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
        container = _container(current, self.container)["name"]
        return (
            f"Set {', '.join(parts)} on container {container} of "
            f"{self.kind.lower()}/{self.target} in {self.namespace}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        if not self.requests and not self.limits:
            raise Invalid("set-resources needs requests or limits")
        resources = _container(obj, self.container).setdefault("resources", {})
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
        container = _container(current, self.container)["name"]
        command = " ".join(self.command) if self.command else "(image default)"
        return (
            f"Set the command of container {container} of {self.kind.lower()}/"
            f"{self.target} in {self.namespace} to {command}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        container = _container(obj, self.container)
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
        spec = _pod_spec(obj)
        if self.node_selector:
            spec["nodeSelector"] = dict(self.node_selector)
        else:
            spec.pop("nodeSelector", None)


# ------------------------------------------------------------------ services, config, nodes


class PatchService(Action):
    name = "patch-service"
    example = "service/web target-port=8080"
    kinds = ("Service",)
    port_index: int = Field(default=0, ge=0, description="which entry of spec.ports")
    target_port: int | str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    selector: dict[str, str] | None = None

    def intent(self, current: dict[str, Any]) -> str:
        changes = []
        if self.target_port is not None:
            changes.append(f"targetPort {self.target_port}")
        if self.port is not None:
            changes.append(f"port {self.port}")
        if self.selector is not None:
            changes.append("selector " + ",".join(f"{k}={v}" for k, v in self.selector.items()))
        return f"Set {', '.join(changes) or 'nothing'} on service/{self.target} in {self.namespace}"

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        if self.target_port is None and self.port is None and self.selector is None:
            raise Invalid("patch-service needs target_port, port or selector")
        ports = obj["spec"].get("ports") or []
        if (self.target_port is not None or self.port is not None) and self.port_index >= len(
            ports
        ):
            raise Invalid(
                f"service/{self.target} has {len(ports)} port(s); port_index "
                f"{self.port_index} does not exist"
            )
        if self.target_port is not None:
            ports[self.port_index]["targetPort"] = self.target_port
        if self.port is not None:
            ports[self.port_index]["port"] = self.port
        if self.selector is not None:
            obj["spec"]["selector"] = dict(self.selector)


class PatchConfigMapKey(Action):
    name = "patch-configmap-key"
    example = "configmap/web key=LOG_LEVEL value=info"
    kinds = ("ConfigMap",)
    key: str = Field(min_length=1, pattern=r"^[-._a-zA-Z0-9]+$")
    value: str | None = Field(default=None, description="None removes the key")

    def intent(self, current: dict[str, Any]) -> str:
        if self.value is None:
            return f"Remove key {self.key} from configmap/{self.target} in {self.namespace}"
        return (
            f"Set key {self.key} of configmap/{self.target} in {self.namespace} to {self.value!r}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        data = obj.setdefault("data", {})
        if self.value is None:
            if self.key not in data:
                raise Invalid(f"configmap/{self.target} has no key {self.key}")
            del data[self.key]
        else:
            data[self.key] = self.value


class PatchHpa(Action):
    name = "patch-hpa"
    example = "hpa/web min-replicas=2 max-replicas=10"
    kinds = ("HorizontalPodAutoscaler",)
    min_replicas: int | None = Field(default=None, ge=1)
    max_replicas: int | None = Field(default=None, ge=1)

    def intent(self, current: dict[str, Any]) -> str:
        spec = current["spec"]
        low = self.min_replicas or spec.get("minReplicas", 1)
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
        if spec.get("minReplicas", 1) > spec["maxReplicas"]:
            raise Invalid(
                f"minReplicas {spec.get('minReplicas')} is above maxReplicas {spec['maxReplicas']}"
            )


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
        self, current: dict[str, Any], related: list[dict[str, Any]] | None = None
    ) -> WritePlan:
        if not any(o.get("controller") for o in current["metadata"].get("ownerReferences") or []):
            raise Invalid(
                f"pod/{self.target} is not owned by a controller: deleting it would "
                "lose it for good"
            )
        return super().plan(current, related)


class DeleteNetworkPolicy(Action):
    name = "delete-networkpolicy"
    example = "networkpolicy/deny-all"
    kinds = ("NetworkPolicy",)
    risk = "high"
    operation = "delete"

    def intent(self, current: dict[str, Any]) -> str:
        return f"Delete networkpolicy/{self.target} in {self.namespace} (re-created on undo)"


CATALOG: dict[str, type[Action]] = {
    cls.name: cls
    for cls in (
        Scale,
        RolloutRestart,
        RolloutUndo,
        SetImage,
        SetEnv,
        SetResources,
        SetCommand,
        SetNodeSelector,
        PatchService,
        PatchConfigMapKey,
        PatchHpa,
        Cordon,
        Uncordon,
        DeletePod,
        DeleteNetworkPolicy,
    )
}


def build(name: str, params: dict[str, Any]) -> Action:
    """An action from its catalog name and parameters, with one clear error if they are wrong."""
    cls = CATALOG.get(name)
    if cls is None:
        raise Invalid(f"unknown action {name!r}; known actions: {', '.join(sorted(CATALOG))}")
    if "kind" not in params:
        params = {**params, "kind": cls.kinds[0]}
    try:
        action = cls.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'action'}: {e['msg']}" for e in exc.errors()
        )
        raise Invalid(f"{name}: {problems}") from exc
    action.ref()  # the target's kind, name and namespace are valid before anything else
    return action


# Undoing an earlier write is decided by policy as an action of its own, so a rule about
# ``scale`` (a freeze, say) does not block undoing a scale unless a rule names ``undo`` too.
UNDO = "undo"
POLICY_ACTIONS: tuple[str, ...] = (*CATALOG, UNDO)
