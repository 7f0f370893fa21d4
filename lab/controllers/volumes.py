"""PersistentVolumes: the dynamic provisioner and the reclaim half of the volume controller.

The volume binder (``scheduling.py``) binds a claim to ``pvc-{claim uid}``; this controller
makes that volume exist, as a StorageClass's provisioner would: capacity, access modes and
volume mode of the claim, the class's reclaim policy, a ``claimRef`` back to the claim, phase
``Bound``. When the claim goes, a ``Delete`` volume goes with it and a ``Retain`` one is
``Released``.
"""

from __future__ import annotations

from typing import Any

from lab.controllers.context import ControllerContext

KEY = "persistentvolumes"
CLASSES = "storageclasses.storage.k8s.io"


class PersistentVolumeController:
    COMPONENT = "persistentvolume-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        claims: dict[str, dict[str, Any]] = {}
        for pvc in self.ctx.store.iter_all("persistentvolumeclaims"):
            claims[pvc["metadata"]["uid"]] = pvc
            volume = (pvc.get("spec") or {}).get("volumeName")
            if (pvc.get("status") or {}).get("phase") != "Bound" or not volume:
                continue
            if self.ctx.store.get(KEY, "", volume) is None and volume.startswith("pvc-"):
                self._provision(pvc, volume)
        for pv in self.ctx.store.iter_all(KEY):
            ref = (pv.get("spec") or {}).get("claimRef") or {}
            phase = (pv.get("status") or {}).get("phase")
            if not ref.get("uid") or ref["uid"] in claims or phase == "Released":
                if ref.get("uid") in claims and phase != "Bound":
                    self.ctx.write_status(KEY, pv, {"phase": "Bound"})
                continue
            if pv["spec"].get("persistentVolumeReclaimPolicy", "Delete") == "Delete":
                self.ctx.store.delete(KEY, "", pv["metadata"]["name"])
            else:
                self.ctx.write_status(KEY, pv, {"phase": "Released"})

    def _provision(self, pvc: dict[str, Any], name: str) -> None:
        spec, meta = pvc["spec"], pvc["metadata"]
        storage_class = self.ctx.store.get(CLASSES, "", spec.get("storageClassName") or "") or {}
        size = (pvc.get("status") or {}).get("capacity", {}).get("storage") or (
            (spec.get("resources") or {}).get("requests") or {}
        ).get("storage", "1Gi")
        provisioner = storage_class.get("provisioner", "")
        volume = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": name,
                "annotations": {"pv.kubernetes.io/provisioned-by": provisioner},
                "finalizers": ["kubernetes.io/pv-protection"],
            },
            "spec": {
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "capacity": {"storage": size},
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "uid": meta["uid"],
                    "resourceVersion": meta["resourceVersion"],
                },
                "hostPath": {"path": f"/var/lib/stratus-lab/volumes/{name}", "type": ""},
                "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy", "Delete"),
                "storageClassName": spec.get("storageClassName") or "",
                "volumeMode": spec.get("volumeMode", "Filesystem"),
            },
            "status": {"phase": "Bound"},
        }
        self.ctx.store.create(KEY, volume)
