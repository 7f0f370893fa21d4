"""LimitRange admission: what the LimitRanger plugin does to a pod as it is created.

A LimitRange item of type ``Container`` fills in what a container leaves out (``default`` as
its limits, ``defaultRequest`` — or else ``default`` — as its requests) and refuses a container
whose limit is above ``max`` or whose request is below ``min``, in the plugin's own words
(``maximum memory usage per Container is 128Mi, but limit is 256Mi``). The ReplicaSet
controller then records the refusal as a FailedCreate event, as for a quota.
"""

from __future__ import annotations

from typing import Any

from lab.cluster import quantity
from lab.cluster.errors import ApiError
from lab.cluster.resources import ResourceType
from lab.controllers.context import ControllerContext


class LimitRangeAdmission:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def __call__(
        self, operation: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt.plural != "pods" or operation != "create":
            return
        namespace = obj["metadata"]["namespace"]
        items = [
            item
            for limit_range in self.ctx.store.list_objects("limitranges", namespace)
            for item in (limit_range.get("spec") or {}).get("limits") or []
            if item.get("type") == "Container"
        ]
        if not items:
            return
        containers = (obj.get("spec") or {}).get("containers") or []
        for item in items:
            for container in containers:
                _default(container, item)
        refusals = [
            refusal
            for item in items
            for container in containers
            for refusal in _refusals(container, item)
        ]
        if refusals:
            name = obj["metadata"].get("name", "")
            raise ApiError(
                403,
                "Forbidden",
                f'pods "{name}" is forbidden: {", ".join(refusals)}',
                kind="pods",
                name=name,
            )


def _default(container: dict[str, Any], item: dict[str, Any]) -> None:
    resources = container.setdefault("resources", {})
    for resource, value in (item.get("default") or {}).items():
        resources.setdefault("limits", {}).setdefault(resource, value)
    requests = item.get("defaultRequest") or item.get("default") or {}
    for resource, value in requests.items():
        resources.setdefault("requests", {}).setdefault(resource, value)


def _refusals(container: dict[str, Any], item: dict[str, Any]) -> list[str]:
    resources = container.get("resources") or {}
    found = []
    for resource, most in sorted((item.get("max") or {}).items()):
        limit = (resources.get("limits") or {}).get(resource)
        if limit is None:
            found.append(
                f"maximum {resource} usage per Container is {most}.  No limit is specified"
            )
        elif quantity.parse(limit) > quantity.parse(most):
            found.append(f"maximum {resource} usage per Container is {most}, but limit is {limit}")
    for resource, least in sorted((item.get("min") or {}).items()):
        request = (resources.get("requests") or {}).get(resource)
        if request is None:
            found.append(
                f"minimum {resource} usage per Container is {least}.  No request is specified"
            )
        elif quantity.parse(request) < quantity.parse(least):
            found.append(
                f"minimum {resource} usage per Container is {least}, but request is {request}"
            )
    return found
