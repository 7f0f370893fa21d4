"""Table printers for storage, batch, policy and configuration kinds: the columns
``kubectl get`` prints for PVCs, PVs, HPAs, namespaces, ConfigMaps, Secrets, StorageClasses,
Jobs, CronJobs, PodDisruptionBudgets and ControllerRevisions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lab.cluster.table_cells import Column, Printer, age

# ---------------------------------------------------------------- storage, batch, policy, config

_ACCESS = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}


def _access_modes(modes: list[str] | None) -> str:
    return ",".join(_ACCESS.get(m, m) for m in modes or [])


def _name_age(obj: dict[str, Any], now: float) -> tuple[str, str]:
    return obj["metadata"]["name"], age(obj["metadata"].get("creationTimestamp"), now)


def _pvc_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    bound = status.get("phase") == "Bound"
    return [
        name,
        status.get("phase") or "Pending",
        spec.get("volumeName") or "",
        (status.get("capacity") or {}).get("storage", "") if bound else "",
        _access_modes(status.get("accessModes")) if bound else "",
        spec.get("storageClassName") or "<unset>",
        spec.get("volumeAttributesClassName") or "<unset>",
        when,
        spec.get("volumeMode") or "Filesystem",
    ]


def _pv_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ref = spec.get("claimRef") or {}
    return [
        name,
        (spec.get("capacity") or {}).get("storage", ""),
        _access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy", "Retain"),
        status.get("phase") or "Pending",
        f"{ref.get('namespace')}/{ref.get('name')}" if ref else "",
        spec.get("storageClassName") or "",
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason") or "",
        when,
        spec.get("volumeMode") or "Filesystem",
    ]


def _hpa_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    current = next(
        (
            ((m.get("resource") or {}).get("current") or {}).get("averageUtilization")
            for m in status.get("currentMetrics") or []
            if (m.get("resource") or {}).get("name") == "cpu"
        ),
        status.get("currentCPUUtilizationPercentage"),
    )
    targets = [
        ((m.get("resource") or {}).get("target") or {}).get("averageUtilization")
        for m in spec.get("metrics") or []
        if (m.get("resource") or {}).get("name") == "cpu"
    ] or [spec.get("targetCPUUtilizationPercentage")]
    shown = "<unknown>" if current is None else f"{current}%"
    target = "<none>" if targets[0] is None else f"cpu: {shown}/{targets[0]}%"
    return [
        name,
        f"{ref.get('kind')}/{ref.get('name')}",
        target,
        spec.get("minReplicas", 1),
        spec.get("maxReplicas", 0),
        status.get("currentReplicas", 0),
        when,
    ]


def _namespace_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    return [name, (obj.get("status") or {}).get("phase") or "Active", when]


def _configmap_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    return [name, len(obj.get("data") or {}) + len(obj.get("binaryData") or {}), when]


def _secret_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    data = len(obj.get("data") or {}) + len(obj.get("stringData") or {})
    return [name, obj.get("type") or "Opaque", data, when]


def _storageclass_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    annotations = obj["metadata"].get("annotations") or {}
    if annotations.get("storageclass.kubernetes.io/is-default-class") == "true":
        name += " (default)"
    return [
        name,
        obj.get("provisioner", ""),
        obj.get("reclaimPolicy", "Delete"),
        obj.get("volumeBindingMode", "Immediate"),
        bool(obj.get("allowVolumeExpansion", False)),
        when,
    ]


def _job_wide(template: dict[str, Any], selector: dict[str, Any]) -> list[Any]:
    containers = ((template.get("spec") or {}).get("containers")) or []
    labels = selector.get("matchLabels") or {}
    return [
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        ",".join(f"{k}={v}" for k, v in labels.items()) or "<none>",
    ]


def _job_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    conditions = {
        c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"
    }
    state = next(
        (
            shown
            for kind, shown in (
                ("Complete", "Complete"),
                ("Failed", "Failed"),
                ("FailureTarget", "FailureTarget"),
                ("SuccessCriteriaMet", "SuccessCriteriaMet"),
                ("Suspended", "Suspended"),
            )
            if kind in conditions
        ),
        "Running",
    )
    completions = spec.get("completions")
    succeeded = status.get("succeeded", 0)
    shown = (
        f"{succeeded}/{completions}"
        if completions is not None
        else f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    )
    duration = ""
    if status.get("startTime"):
        end = status.get("completionTime")
        finish = datetime.strptime(end, "%Y-%m-%dT%H:%M:%SZ").timestamp() if end else now
        duration = age(status["startTime"], finish)
    return [
        name,
        state,
        shown,
        duration,
        when,
        *_job_wide(spec.get("template") or {}, spec.get("selector") or {}),
    ]


def _cronjob_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    last = status.get("lastScheduleTime")
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return [
        name,
        spec.get("schedule", ""),
        spec.get("timeZone") or "<none>",
        str(bool(spec.get("suspend", False))),
        len(status.get("active") or []),
        age(last, now) if last else "<none>",
        when,
        *_job_wide(job_spec.get("template") or {}, job_spec.get("selector") or {}),
    ]


def _pdb_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        name,
        str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
        str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A",
        status.get("disruptionsAllowed", 0),
        when,
    ]


def _revision_row(obj: dict[str, Any], now: float) -> list[Any]:
    name, when = _name_age(obj, now)
    owner = next(
        (r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")), None
    )
    controller = f"{owner.get('kind', '').lower()}.apps/{owner.get('name')}" if owner else "<none>"
    return [name, controller, obj.get("revision", 0), when]


_S, _I, _B = "string", "integer", "boolean"
_JOB_WIDE: list[Column] = [("Containers", _S, 1), ("Images", _S, 1), ("Selector", _S, 1)]
STORAGE_PRINTERS: dict[str, Printer] = {
    "persistentvolumeclaims": (
        [
            ("Name", _S, 0),
            ("Status", _S, 0),
            ("Volume", _S, 0),
            ("Capacity", _S, 0),
            ("Access Modes", _S, 0),
            ("StorageClass", _S, 0),
            ("VolumeAttributesClass", _S, 0),
            ("Age", _S, 0),
            ("VolumeMode", _S, 1),
        ],
        _pvc_row,
    ),
    "persistentvolumes": (
        [
            ("Name", _S, 0),
            ("Capacity", _S, 0),
            ("Access Modes", _S, 0),
            ("Reclaim Policy", _S, 0),
            ("Status", _S, 0),
            ("Claim", _S, 0),
            ("StorageClass", _S, 0),
            ("VolumeAttributesClass", _S, 0),
            ("Reason", _S, 0),
            ("Age", _S, 0),
            ("VolumeMode", _S, 1),
        ],
        _pv_row,
    ),
    "horizontalpodautoscalers": (
        [
            ("Name", _S, 0),
            ("Reference", _S, 0),
            ("Targets", _S, 0),
            ("MinPods", _S, 0),
            ("MaxPods", _I, 0),
            ("Replicas", _I, 0),
            ("Age", _S, 0),
        ],
        _hpa_row,
    ),
    "namespaces": ([("Name", _S, 0), ("Status", _S, 0), ("Age", _S, 0)], _namespace_row),
    "configmaps": ([("Name", _S, 0), ("Data", _S, 0), ("Age", _S, 0)], _configmap_row),
    "secrets": (
        [("Name", _S, 0), ("Type", _S, 0), ("Data", _S, 0), ("Age", _S, 0)],
        _secret_row,
    ),
    "storageclasses": (
        [
            ("Name", _S, 0),
            ("Provisioner", _S, 0),
            ("ReclaimPolicy", _S, 0),
            ("VolumeBindingMode", _S, 0),
            ("AllowVolumeExpansion", _S, 0),
            ("Age", _S, 0),
        ],
        _storageclass_row,
    ),
    "jobs": (
        [
            ("Name", _S, 0),
            ("Status", _S, 0),
            ("Completions", _S, 0),
            ("Duration", _S, 0),
            ("Age", _S, 0),
            *_JOB_WIDE,
        ],
        _job_row,
    ),
    "cronjobs": (
        [
            ("Name", _S, 0),
            ("Schedule", _S, 0),
            ("Timezone", _S, 0),
            ("Suspend", _B, 0),
            ("Active", _I, 0),
            ("Last Schedule", _S, 0),
            ("Age", _S, 0),
            *_JOB_WIDE,
        ],
        _cronjob_row,
    ),
    "poddisruptionbudgets": (
        [
            ("Name", _S, 0),
            ("Min Available", _S, 0),
            ("Max Unavailable", _S, 0),
            ("Allowed Disruptions", _I, 0),
            ("Age", _S, 0),
        ],
        _pdb_row,
    ),
    "controllerrevisions": (
        [("Name", _S, 0), ("Controller", _S, 0), ("Revision", _I, 0), ("Age", _S, 0)],
        _revision_row,
    ),
}
