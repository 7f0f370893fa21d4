"""The DefaultStorageClass admission plugin: a claim created without a class gets the
default one.

On a cluster the class is filled in when the claim is created (the created object already
names it), not later by the binder; ``storageClassName: ""`` is a request for a
pre-provisioned volume and is left alone. With several default classes the newest wins, as
in Kubernetes 1.26 and later.
"""

from __future__ import annotations

from typing import Any

from lab.cluster.resources import ResourceType
from lab.controllers.context import ControllerContext

CLASSES = "storageclasses.storage.k8s.io"
DEFAULT = "storageclass.kubernetes.io/is-default-class"


def default_class(classes: list[dict[str, Any]]) -> str | None:
    """The name of the default StorageClass (the newest of several), or None."""
    defaults = [
        c for c in classes if (c["metadata"].get("annotations") or {}).get(DEFAULT) == "true"
    ]
    if not defaults:
        return None
    newest = max(
        defaults,
        key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"]["name"]),
    )
    return str(newest["metadata"]["name"])


class DefaultStorageClass:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def __call__(
        self, operation: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if operation != "create" or rt.plural != "persistentvolumeclaims":
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
            return
        name = default_class(self.ctx.store.list_objects(CLASSES))
        if name is not None:
            spec["storageClassName"] = name
