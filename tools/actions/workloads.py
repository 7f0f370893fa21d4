"""Actions on workloads (Deployments, StatefulSets, DaemonSets): scale, restart, roll back,
and change one field of the pod template (image, env, resources, command, node selector)."""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import Field, field_validator

from tools.actions.base import TEMPLATED, WORKLOADS, Action, container_of, map_at, pod_spec
from tools.errors import Invalid

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
# A revision as Kubernetes' controllers parse it (Go's strconv.ParseInt): Python's int() also
# takes spaces, underscores and other scripts' digits, which the controllers refuse.
_REVISION_NUMBER = re.compile(r"-?[0-9]{1,18}")


def _number(value: Any) -> int | None:
    """A revision number, or None when it is not one (an annotation edited by hand)."""
    text = str(value)
    return int(text) if _REVISION_NUMBER.fullmatch(text) else None


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
        meta = map_at(obj["spec"]["template"], "metadata")
        map_at(meta, "annotations")["kubectl.kubernetes.io/restartedAt"] = self.restarted_at


class RolloutUndo(Action):
    """What ``kubectl rollout undo`` does: a Deployment's template from one of its
    ReplicaSets, a StatefulSet's or DaemonSet's from one of its ControllerRevisions."""

    name = "rollout-undo"
    example = "deployment/web to-revision=2"
    kinds = WORKLOADS
    to_revision: int | None = Field(default=None, ge=1)

    def related(self) -> tuple[str, str]:
        if self.kind == "Deployment":
            return ("apps/v1", "ReplicaSet")
        return ("apps/v1", "ControllerRevision")

    def _revisions(
        self, current: dict[str, Any], related: list[dict[str, Any]]
    ) -> dict[int, dict[str, Any]]:
        """Revision number → the pod template it ran."""
        uid = current["metadata"]["uid"]
        found = {}
        for owned in related:
            owners = owned["metadata"].get("ownerReferences") or []
            if not any(o.get("uid") == uid for o in owners):
                continue
            if self.kind == "Deployment":
                annotations = owned["metadata"].get("annotations") or {}
                revision = _number(annotations.get(REVISION, "0"))
                template = (owned.get("spec") or {}).get("template")
            else:
                revision = _number(owned.get("revision") or 0)
                template = ((owned.get("data") or {}).get("spec") or {}).get("template")
            # A revision someone edited into something else is not one to roll back to.
            if revision is not None and isinstance(template, dict):
                found[revision] = template
        return found

    def history(
        self, current: dict[str, Any], related: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        return [{"spec": {"template": t}} for t in self._revisions(current, related).values()]

    def _current(self, obj: dict[str, Any], revisions: dict[int, dict[str, Any]]) -> int:
        if self.kind == "Deployment":
            text = (obj["metadata"].get("annotations") or {}).get(REVISION, "0")
            current = _number(text)
            if current is None:
                raise Invalid(
                    f"deployment/{self.target} has a revision annotation that is not a number "
                    f"({REVISION}={text[:20]!r}): name the revision to roll back to (to-revision=)"
                )
            return current
        # A ControllerRevision whose template comes back is renumbered past the others, so
        # the template running now is always the newest revision.
        return max(revisions, default=0)

    def intent(self, current: dict[str, Any]) -> str:
        where = f"revision {self.to_revision}" if self.to_revision else "the previous revision"
        return f"Roll back {self.kind.lower()}/{self.target} in {self.namespace} to {where}"

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        revisions = self._revisions(obj, related)
        what = f"{self.kind.lower()}/{self.target}"
        wanted = self.to_revision
        if wanted is None:
            current = self._current(obj, revisions)
            older = [r for r in revisions if r < current]
            if not older:
                raise Invalid(f"{what} has no previous revision to roll back to")
            wanted = max(older)
        if wanted not in revisions:
            raise Invalid(
                f"{what} has no revision {wanted} (it has "
                f"{', '.join(str(r) for r in sorted(revisions)) or 'none'})"
            )
        template = copy.deepcopy(revisions[wanted])
        template.pop("$patch", None)  # a ControllerRevision's data is a replacing patch
        (template.get("metadata") or {}).get("labels", {}).pop(HASH_LABEL, None)
        obj["spec"]["template"] = template


class SetImage(Action):
    name = "set-image"
    example = "deployment/web image=nginx:1.27 container=web"
    kinds = TEMPLATED
    image: str = Field(min_length=1)
    container: str | None = None

    def intent(self, current: dict[str, Any]) -> str:
        old = container_of(current, self.container)
        return (
            f"Set the image of container {old['name']} of {self.kind.lower()}/{self.target}"
            f" in {self.namespace} from {old.get('image')} to {self.image}"
        )

    def new_image(self) -> str:
        return self.image

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        container_of(obj, self.container)["image"] = self.image


class SetEnv(Action):
    name = "set-env"
    example = "deployment/web variable=LOG_LEVEL value=debug   (omit value= to remove it)"
    kinds = TEMPLATED
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
    kinds = TEMPLATED
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
        resources = map_at(container_of(obj, self.container), "resources")
        for section, values in (("requests", self.requests), ("limits", self.limits)):
            current = map_at(resources, section)
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
    kinds = TEMPLATED
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
    kinds = TEMPLATED
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
