"""What every catalog action is: a typed, pure plan of one write.

Each action names its target, declares its risk, whether it can be undone, and says in one
sentence what it does. ``plan(current)`` is pure: from the object as read (``None`` when it
does not exist, which only a create accepts) it computes the object to write and a YAML diff
of only what changes. The executor writes exactly the planned object — never something
recomputed later — which is what makes previews, dry-runs and undo exact.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tools.actions import reach
from tools.errors import Invalid, NotFound
from tools.objects import LAST_APPLIED, ObjectRef, normalized, yaml_diff

Risk = Literal["low", "medium", "high"]
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")
# Kinds whose pod template one container field can be set in: the workloads, and a CronJob
# (its next Job is made from the fixed template; a Job's own template is immutable).
TEMPLATED = (*WORKLOADS, "CronJob")


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
    operation: ClassVar[str] = "replace"  # replace, create or delete
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

    def label(self) -> str:
        return f"{self.kind.lower()}/{self.target}"

    def intent(self, current: dict[str, Any]) -> str:
        """One sentence a person reads on the card (for a create: the object it would make)."""
        raise NotImplementedError

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        """Change ``obj`` (a private copy) into the object to write."""
        raise NotImplementedError

    def manifest(self) -> dict[str, Any]:
        """The object a create action makes (creates only)."""
        raise NotImplementedError

    def related(self) -> tuple[str, str] | None:
        """(apiVersion, kind) of objects the plan also needs, listed by the target's selector."""
        return None

    def history(
        self, current: dict[str, Any], related: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Earlier versions of the target whose pod template this action may bring back (what
        ``tools.actions.reach`` lets the plan reach besides the object as it is)."""
        return []

    def new_image(self) -> str | None:
        """The one image this action exists to set, if any."""
        return None

    def plan(
        self, current: dict[str, Any] | None, related: list[dict[str, Any]] | None = None
    ) -> WritePlan:
        label = self.label()
        if self.operation == "create":
            if current is not None:
                raise Invalid(f"{self.ref()} already exists; there is nothing to create")
            after = self.manifest()
            self._within_reach(None, after, [])
            return WritePlan("create", None, after, yaml_diff(None, after, label=label))
        if current is None:
            raise NotFound(f"{self.ref()}: not found", subject=str(self.ref()))
        if self.operation == "delete":
            return WritePlan("delete", current, None, yaml_diff(current, None, label=label))
        after = copy.deepcopy(current)
        self.mutate(after, related or [])
        self._within_reach(current, after, related or [])
        return WritePlan("replace", current, after, yaml_diff(current, after, label=label))

    def _within_reach(
        self,
        current: dict[str, Any] | None,
        after: dict[str, Any],
        related: list[dict[str, Any]],
    ) -> None:
        reach.check(
            action=self.name,
            what=self.label(),
            before=current,
            after=after,
            history=self.history(current, related) if current is not None else [],
            new_image=self.new_image(),
        )


# ------------------------------------------------------------------ helpers


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """The pod spec a workload's pods are made from (a CronJob's sits in its job template)."""
    outer = obj["spec"]
    if "jobTemplate" in outer:
        outer = outer["jobTemplate"]["spec"]
    spec: dict[str, Any] = outer["template"]["spec"]
    return spec


def container_of(obj: dict[str, Any], name: str | None) -> dict[str, Any]:
    containers: list[dict[str, Any]] = pod_spec(obj).get("containers") or []
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


def map_at(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]``, an optional map, to write into: made when it is absent or null (the API
    server omits an empty map, and a client may have sent null for one)."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    found: dict[str, Any] = value
    return found


def last_applied(obj: dict[str, Any]) -> dict[str, Any]:
    """The configuration ``kubectl apply`` last wrote (kept in an annotation), or refuse."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    what = f"{obj.get('kind', '').lower()}/{(obj.get('metadata') or {}).get('name')}"
    if not text:
        raise Invalid(f"{what} has no last-applied configuration to restore from")
    try:
        applied = json.loads(text)
    except ValueError as exc:
        raise Invalid(f"{what}: its last-applied configuration is not JSON") from exc
    if not isinstance(applied, dict):
        raise Invalid(f"{what}: its last-applied configuration is not an object")
    return applied
