"""Server-side Table output (``Accept: …;as=Table``), the columns ``kubectl get`` prints.

The cells follow the real API server's printers: READY 1/1, STATUS as kubectl derives it
(CrashLoopBackOff, ImagePullBackOff, OOMKilled, Pending …), RESTARTS, AGE and the wide
columns (IP, NODE …) at priority 1.
"""

from __future__ import annotations

from typing import Any

from lab.cluster.resources import ResourceType
from lab.cluster.table_cells import Column, Printer, age, containers_of, selector_text
from lab.cluster.table_storage import STORAGE_PRINTERS

__all__ = ["Column", "Printer", "age", "pod_status_reason", "table"]


def pod_status_reason(pod: dict[str, Any]) -> str:
    """The STATUS column of ``kubectl get pods``."""
    status = pod.get("status") or {}
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    reason = status.get("reason") or status.get("phase") or "Pending"
    init_statuses = status.get("initContainerStatuses") or []
    sidecars = _sidecars(pod)
    for index, init in enumerate(init_statuses):
        state = init.get("state") or {}
        if "terminated" in state and state["terminated"].get("exitCode") == 0:
            continue
        if init.get("name") in sidecars and init.get("started"):
            continue  # a started native sidecar lets initialization go on
        if "terminated" in state:
            return f"Init:{state['terminated'].get('reason') or 'Error'}"
        waiting = (state.get("waiting") or {}).get("reason")
        if waiting and waiting != "PodInitializing":
            return f"Init:{waiting}"
        return f"Init:{index}/{len(init_statuses)}"
    for container in reversed(status.get("containerStatuses") or []):
        state = container.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated", {}).get("reason"):
            reason = state["terminated"]["reason"]
    conditions = status.get("conditions") or []
    unschedulable = any(
        c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions
    )
    if unschedulable and reason == "Pending":
        return "Pending"
    return str(reason)


def _sidecars(pod: dict[str, Any]) -> set[str]:
    """The native sidecars: init containers with ``restartPolicy: Always``."""
    inits = (pod.get("spec") or {}).get("initContainers") or []
    return {str(c.get("name")) for c in inits if c.get("restartPolicy") == "Always"}


def _pod_row(pod: dict[str, Any], now: float) -> list[Any]:
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    containers = (pod.get("spec") or {}).get("containers") or []
    sidecars = _sidecars(pod)
    # READY counts the native sidecars as the 1.28+ printer does.
    ready = sum(1 for c in statuses if c.get("ready")) + sum(
        1
        for c in status.get("initContainerStatuses") or []
        if c.get("name") in sidecars and c.get("ready")
    )
    inits = status.get("initContainerStatuses") or []
    # Once initialized, the app containers' restarts and the sidecars'.
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses) + sum(
        int(c.get("restartCount", 0)) for c in inits if c.get("name") in sidecars
    )
    if any(
        ((c.get("state") or {}).get("terminated") or {}).get("exitCode", 1) != 0
        for c in inits
        if not (c.get("name") in sidecars and c.get("started"))
    ):  # still initializing: kubectl counts the init containers' restarts
        restarts = sum(int(c.get("restartCount", 0)) for c in inits)
    return [
        pod["metadata"]["name"],
        f"{ready}/{len(containers) + len(sidecars)}",
        pod_status_reason(pod),
        restarts,
        age(pod["metadata"].get("creationTimestamp"), now),
        status.get("podIP") or "<none>",
        (pod.get("spec") or {}).get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        _readiness_gates(pod),
    ]


def _readiness_gates(pod: dict[str, Any]) -> str:
    """READINESS GATES: how many of the spec's gates have a "True" condition (the printer's
    ``true/all``), ``<none>`` without gates."""
    gates = (pod.get("spec") or {}).get("readinessGates") or []
    if not gates:
        return "<none>"
    conditions = {
        c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or []
    }
    true = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
    return f"{true}/{len(gates)}"


def _workload_wide(obj: dict[str, Any]) -> list[Any]:
    containers = containers_of(obj)
    return [
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        selector_text(obj),
    ]


def _deployment_row(obj: dict[str, Any], now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        age(obj["metadata"].get("creationTimestamp"), now),
        *_workload_wide(obj),
    ]


def _replicaset_row(obj: dict[str, Any], now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return [
        obj["metadata"]["name"],
        spec.get("replicas", 0),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        age(obj["metadata"].get("creationTimestamp"), now),
        *_workload_wide(obj),
    ]


def _statefulset_row(obj: dict[str, Any], now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = containers_of(obj)
    return [
        obj["metadata"]["name"],
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        age(obj["metadata"].get("creationTimestamp"), now),
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
    ]


def _daemonset_row(obj: dict[str, Any], now: float) -> list[Any]:
    status = obj.get("status") or {}
    selector = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector")
    return [
        obj["metadata"]["name"],
        status.get("desiredNumberScheduled", 0),
        status.get("currentNumberScheduled", 0),
        status.get("numberReady", 0),
        status.get("updatedNumberScheduled", 0),
        status.get("numberAvailable", 0),
        ",".join(f"{k}={v}" for k, v in (selector or {}).items()) or "<none>",
        age(obj["metadata"].get("creationTimestamp"), now),
        *_workload_wide(obj),
    ]


def _port_text(port: dict[str, Any]) -> str:
    text = str(port.get("port"))
    if port.get("nodePort"):
        text += f":{port['nodePort']}"
    return f"{text}/{port.get('protocol', 'TCP')}"


def _service_row(obj: dict[str, Any], now: float) -> list[Any]:
    spec = obj.get("spec") or {}
    ports = ",".join(_port_text(p) for p in spec.get("ports") or []) or "<none>"
    selector = ",".join(f"{k}={v}" for k, v in (spec.get("selector") or {}).items()) or "<none>"
    return [
        obj["metadata"]["name"],
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        "<none>",
        ports,
        age(obj["metadata"].get("creationTimestamp"), now),
        selector,
    ]


def _node_row(obj: dict[str, Any], now: float) -> list[Any]:
    status = obj.get("status") or {}
    ready: dict[str, Any] = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {}
    )
    state = "Ready" if ready.get("status") == "True" else "NotReady"
    if (obj.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = obj["metadata"].get("labels") or {}
    roles = (
        ",".join(
            sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
        )
        or "<none>"
    )
    info = status.get("nodeInfo") or {}
    internal = next(
        (a.get("address") for a in status.get("addresses") or [] if a.get("type") == "InternalIP"),
        "<none>",
    )
    return [
        obj["metadata"]["name"],
        state,
        roles,
        age(obj["metadata"].get("creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        internal,
        "<none>",
        info.get("osImage", ""),
        info.get("kernelVersion", ""),
        info.get("containerRuntimeVersion", ""),
    ]


def _event_row(obj: dict[str, Any], now: float) -> list[Any]:
    involved = obj.get("involvedObject") or {}
    last = (
        obj.get("lastTimestamp") or obj.get("eventTime") or obj["metadata"].get("creationTimestamp")
    )
    if isinstance(last, str) and "." in last:
        last = last.split(".")[0] + "Z"
    return [
        age(last, now),
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{involved.get('kind', '').lower()}/{involved.get('name', '')}",
        obj.get("message", ""),
        (obj.get("source") or {}).get("component", ""),
        age(obj.get("firstTimestamp"), now),
        obj.get("count", 1),
        obj["metadata"]["name"],
    ]


def _endpoints_row(obj: dict[str, Any], now: float) -> list[Any]:
    addresses = []
    for subset in obj.get("subsets") or []:
        for address in subset.get("addresses") or []:
            for port in subset.get("ports") or []:
                addresses.append(f"{address.get('ip')}:{port.get('port')}")
    shown = ",".join(addresses[:3]) + (
        f" + {len(addresses) - 3} more..." if len(addresses) > 3 else ""
    )
    return [
        obj["metadata"]["name"],
        shown or "<none>",
        age(obj["metadata"].get("creationTimestamp"), now),
    ]


def _default_row(obj: dict[str, Any], now: float) -> list[Any]:
    return [obj["metadata"]["name"], age(obj["metadata"].get("creationTimestamp"), now)]


_WORKLOAD_WIDE: list[Column] = [
    ("Containers", "string", 1),
    ("Images", "string", 1),
    ("Selector", "string", 1),
]
PRINTERS: dict[str, Printer] = {
    "pods": (
        [
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ],
        _pod_row,
    ),
    "deployments": (
        [
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            ("Age", "string", 0),
            *_WORKLOAD_WIDE,
        ],
        _deployment_row,
    ),
    "replicasets": (
        [
            ("Name", "string", 0),
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Age", "string", 0),
            *_WORKLOAD_WIDE,
        ],
        _replicaset_row,
    ),
    "statefulsets": (
        [
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
        ],
        _statefulset_row,
    ),
    "daemonsets": (
        [
            ("Name", "string", 0),
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            ("Node Selector", "string", 0),
            ("Age", "string", 0),
            *_WORKLOAD_WIDE,
        ],
        _daemonset_row,
    ),
    "services": (
        [
            ("Name", "string", 0),
            ("Type", "string", 0),
            ("Cluster-IP", "string", 0),
            ("External-IP", "string", 0),
            ("Port(s)", "string", 0),
            ("Age", "string", 0),
            ("Selector", "string", 1),
        ],
        _service_row,
    ),
    "nodes": (
        [
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
            ("OS-Image", "string", 1),
            ("Kernel-Version", "string", 1),
            ("Container-Runtime", "string", 1),
        ],
        _node_row,
    ),
    "events": (
        [
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Message", "string", 0),
            ("Source", "string", 1),
            ("First Seen", "string", 1),
            ("Count", "string", 1),
            ("Name", "string", 1),
        ],
        _event_row,
    ),
    "endpoints": (
        [("Name", "string", 0), ("Endpoints", "string", 0), ("Age", "string", 0)],
        _endpoints_row,
    ),
}
PRINTERS.update(STORAGE_PRINTERS)


def _lease_row(obj: dict[str, Any], now: float) -> list[Any]:
    holder = (obj.get("spec") or {}).get("holderIdentity") or "<none>"
    return [obj["metadata"]["name"], holder, age(obj["metadata"].get("creationTimestamp"), now)]


PRINTERS["leases"] = (
    [("Name", "string", 0), ("Holder", "string", 0), ("Age", "string", 0)],
    _lease_row,
)
_DEFAULT: Printer = ([("Name", "string", 0), ("Age", "string", 0)], _default_row)


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj["metadata"],
    }


def table(
    rt: ResourceType,
    objects: list[dict[str, Any]],
    now: float,
    *,
    resource_version: str,
    include_object: str = "Metadata",
) -> dict[str, Any]:
    columns, row_of = PRINTERS.get(rt.plural, _DEFAULT)
    rows = []
    for obj in objects:
        embedded: Any
        if include_object == "Object":
            embedded = obj
        elif include_object == "None":
            embedded = None
        else:
            embedded = partial_metadata(obj)
        rows.append({"cells": row_of(obj, now), "object": embedded})
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": [
            {
                "name": name,
                "type": kind,
                "format": "name" if name == "Name" else "",
                "description": f"{name} of the {rt.singular}",
                "priority": priority,
            }
            for name, kind, priority in columns
        ],
        "rows": rows,
    }
