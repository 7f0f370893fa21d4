"""The resize controller: a bound claim whose request grew gets the bigger capacity, and so
does its PersistentVolume (the external resizer grows the volume, the kubelet the file system).

Admission (``lab.cluster.update_rules``) only lets a claim grow when its StorageClass allows
expansion, so every claim asking for more than it has is one the volume can grow for.
"""

from __future__ import annotations

from lab.cluster import quantity
from lab.controllers.context import ControllerContext


class VolumeExpander:
    COMPONENT = "volume_expand"

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        for pvc in self.ctx.store.iter_all("persistentvolumeclaims"):
            status = pvc.get("status") or {}
            if status.get("phase") != "Bound":
                continue
            wanted = (
                ((pvc.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
            )
            has = (status.get("capacity") or {}).get("storage")
            if not (quantity.is_valid(wanted) and quantity.is_valid(has)):
                continue
            if quantity.parse(wanted) <= quantity.parse(has):
                continue
            self._grow_volume((pvc.get("spec") or {}).get("volumeName") or "", wanted)
            self.ctx.write_status(
                "persistentvolumeclaims",
                pvc,
                {**status, "capacity": {**(status.get("capacity") or {}), "storage": wanted}},
            )
            self.ctx.events.record(
                pvc,
                "Normal",
                "FileSystemResizeSuccessful",
                f"MountVolume.NodeExpandVolume succeeded for volume "
                f'"{(pvc.get("spec") or {}).get("volumeName", "")}"',
                component="kubelet",
            )

    def _grow_volume(self, name: str, size: str) -> None:
        volume = self.ctx.store.get("persistentvolumes", "", name) if name else None
        if volume is None:
            return
        capacity = (volume.get("spec") or {}).get("capacity") or {}
        has = capacity.get("storage")
        if quantity.is_valid(has) and quantity.parse(has) >= quantity.parse(size):
            return
        spec = {**volume["spec"], "capacity": {**capacity, "storage": size}}
        self.ctx.write_object("persistentvolumes", {**volume, "spec": spec})
