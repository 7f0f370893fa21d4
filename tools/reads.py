"""Read tools: compact, structured, size-bounded summaries of what the cluster says.

These are what the agents and the Slack cards use, so each answer is a small JSON-able dict:
never a whole object dump, never unbounded (lists are capped and say how many were left out,
long text is cut).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from tools import errors
from tools.k8s import KubeClient, path_safe
from tools.objects import ObjectRef, yaml_diff

MAX_ITEMS = 25
MAX_TEXT = 300
_ERROR_LINE = re.compile(
    r"\b(ERROR|FATAL|PANIC|panic|Exception|Traceback|error|failed|"
    r"refused|timeout|denied)\b"
)
_VOLATILE = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z?|\b\d+(\.\d+)?(ms|s)?\b|0x[0-9a-f]+")
_WORKLOADS = (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"))


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _capped(items: list[Any], limit: int = MAX_ITEMS) -> dict[str, Any]:
    return {"items": items[:limit], "omitted": max(len(items) - limit, 0)}


def _selector(obj: dict[str, Any]) -> str:
    labels = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in labels.items())


def _container_summary(status: dict[str, Any]) -> dict[str, Any]:
    state = status.get("state") or {}
    current = next(iter(state), "unknown")
    detail = state.get(current) or {}
    last = (status.get("lastState") or {}).get("terminated") or {}
    summary: dict[str, Any] = {
        "name": status.get("name"),
        "state": current,
        "ready": bool(status.get("ready")),
        "restarts": int(status.get("restartCount") or 0),
    }
    if detail.get("reason"):
        summary["reason"] = detail["reason"]
    if detail.get("message"):
        summary["message"] = _cut(str(detail["message"]))
    if last:
        summary["last_termination"] = {
            "reason": last.get("reason"),
            "exit_code": last.get("exitCode"),
        }
    return summary


class ClusterReader:
    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    def namespaces(self) -> dict[str, Any]:
        """The namespaces' names and phases."""
        found = [
            {"name": o["metadata"]["name"], "phase": (o.get("status") or {}).get("phase", "")}
            for o in self.kube.list("v1", "Namespace")
        ]
        return _capped(sorted(found, key=lambda n: str(n["name"])), 200)

    def namespace_exists(self, namespace: str) -> bool:
        return self.kube.find(ObjectRef("Namespace", namespace)) is not None

    def workload_health(self, namespace: str) -> dict[str, Any]:
        """Every workload's desired/ready/updated replicas and the pods that are not well."""
        workloads = []
        for api_version, kind in _WORKLOADS:
            for obj in self.kube.list(api_version, kind, namespace=namespace):
                status = obj.get("status") or {}
                if kind == "DaemonSet":
                    desired = int(status.get("desiredNumberScheduled") or 0)
                    ready = int(status.get("numberReady") or 0)
                    updated = int(status.get("updatedNumberScheduled") or 0)
                else:
                    desired = int((obj.get("spec") or {}).get("replicas", 1))
                    ready = int(status.get("readyReplicas") or 0)
                    updated = int(status.get("updatedReplicas") or 0)
                workloads.append(
                    {
                        "kind": kind,
                        "name": obj["metadata"]["name"],
                        "desired": desired,
                        "ready": ready,
                        "updated": updated,
                        "healthy": ready >= desired and updated >= desired,
                    }
                )
        unhealthy_pods = []
        for pod in self.kube.list("v1", "Pod", namespace=namespace):
            summary = self._pod_summary(pod)
            if not summary["ready"]:
                unhealthy_pods.append(summary)
        workloads.sort(key=lambda w: (w["healthy"], w["kind"], w["name"]))
        return {
            "namespace": namespace,
            "workloads": _capped(workloads),
            "unhealthy_workloads": sum(1 for w in workloads if not w["healthy"]),
            "unready_pods": _capped(unhealthy_pods),
        }

    def _pod_summary(self, pod: dict[str, Any]) -> dict[str, Any]:
        status = pod.get("status") or {}
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        scheduled = conditions.get("PodScheduled") or {}
        ready = (conditions.get("Ready") or {}).get("status") == "True"
        summary: dict[str, Any] = {
            "name": pod["metadata"]["name"],
            "phase": status.get("phase", "Unknown"),
            "node": (pod.get("spec") or {}).get("nodeName"),
            "ready": ready,
            "containers": [_container_summary(c) for c in status.get("containerStatuses") or []],
        }
        if scheduled.get("status") == "False":
            summary["unschedulable"] = _cut(str(scheduled.get("message", "")))
        return summary

    def pod_status(self, namespace: str, name: str) -> dict[str, Any]:
        pod = self.kube.get(ObjectRef("Pod", name, namespace))
        summary = self._pod_summary(pod)
        owners = [
            f"{o['kind'].lower()}/{o['name']}" for o in pod["metadata"].get("ownerReferences") or []
        ]
        summary["owner"] = owners[0] if owners else None
        summary["init_containers"] = [
            _container_summary(c)
            for c in (pod.get("status") or {}).get("initContainerStatuses") or []
        ]
        return summary

    def events(
        self, namespace: str, *, object_name: str | None = None, limit: int = 20
    ) -> dict[str, Any]:
        """Events deduplicated by (type, reason, object, message), counted, newest first."""
        if object_name:
            # It goes into a field selector: a ',' or '=' in it would add terms of its own.
            path_safe(name=object_name)
            if "," in object_name or "=" in object_name:
                raise errors.Invalid(f"{object_name[:80]!r} is not an object's name")
        selector = f"involvedObject.name={object_name}" if object_name else None
        found = self.kube.list("v1", "Event", namespace=namespace, field_selector=selector)
        grouped: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        for event in found:
            involved = event.get("involvedObject") or {}
            obj = f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"
            key = (
                event.get("type", ""),
                event.get("reason", ""),
                obj,
                _VOLATILE.sub("#", event.get("message", "")),
            )
            last = event.get("lastTimestamp") or event.get("eventTime") or ""
            entry = grouped.setdefault(
                key,
                {
                    "type": key[0],
                    "reason": key[1],
                    "object": obj,
                    "message": _cut(event.get("message", "")),
                    "count": 0,
                    "last_seen": last,
                },
            )
            entry["count"] += int(event.get("count") or 1)
            entry["last_seen"] = max(entry["last_seen"], last)
        ordered = sorted(
            grouped.values(), key=lambda e: (e["last_seen"], e["type"] == "Warning"), reverse=True
        )
        return {
            "namespace": namespace,
            "events": _capped(ordered, limit),
            "warnings": sum(1 for e in ordered if e["type"] == "Warning"),
        }

    def logs(
        self,
        namespace: str,
        pod: str,
        *,
        container: str | None = None,
        tail: int = 200,
        previous: bool = False,
    ) -> dict[str, Any]:
        """The tail of a container's log: error lines pulled out, repeated lines collapsed."""
        text = self.kube.read_log(
            namespace, pod, container=container, tail_lines=tail, previous=previous
        )
        lines = [line for line in text.splitlines() if line.strip()]
        shapes = Counter(_VOLATILE.sub("#", line) for line in lines)
        collapsed: list[str] = []
        seen: set[str] = set()
        for line in lines:
            shape = _VOLATILE.sub("#", line)
            if shape in seen:
                continue
            seen.add(shape)
            count = shapes[shape]
            collapsed.append(_cut(line) + (f"  (x{count})" if count > 1 else ""))
        errors = [line for line in collapsed if _ERROR_LINE.search(line)]
        return {
            "pod": pod,
            "container": container,
            "previous": previous,
            "lines": len(lines),
            "error_lines": _capped(errors, 15),
            "tail": collapsed[-15:],
        }

    def service_check(self, namespace: str, service: str) -> dict[str, Any]:
        """Service → endpoints → pods: is anything listening where the service sends traffic?"""
        svc = self.kube.get(ObjectRef("Service", service, namespace))
        spec = svc.get("spec") or {}
        selector = spec.get("selector") or {}
        label_selector = ",".join(f"{k}={v}" for k, v in selector.items())
        pods = (
            self.kube.list("v1", "Pod", namespace=namespace, label_selector=label_selector)
            if selector
            else []
        )
        endpoints = self.kube.find(ObjectRef("Endpoints", service, namespace)) or {}
        ready = sum(len(s.get("addresses") or []) for s in endpoints.get("subsets") or [])
        not_ready = sum(
            len(s.get("notReadyAddresses") or []) for s in endpoints.get("subsets") or []
        )
        declared = sorted(
            {
                p.get("containerPort")
                for pod in pods
                for c in (pod.get("spec") or {}).get("containers") or []
                for p in c.get("ports") or []
                if p.get("containerPort")
            }
        )
        problems = []
        if selector and not pods:
            problems.append(f"the selector {label_selector} matches no pod")
        for port in spec.get("ports") or []:
            target = port.get("targetPort", port.get("port"))
            if isinstance(target, int) and declared and target not in declared:
                problems.append(
                    f"port {port.get('port')} sends to targetPort {target}, but the "
                    f"pods declare {', '.join(str(d) for d in declared)}"
                )
        if pods and not ready:
            problems.append("no ready endpoints: no backing pod is ready")
        return {
            "service": service,
            "selector": selector,
            "ports": [
                {"port": p.get("port"), "target_port": p.get("targetPort")}
                for p in spec.get("ports") or []
            ],
            "matching_pods": len(pods),
            "ready_endpoints": ready,
            "not_ready_endpoints": not_ready,
            "container_ports": declared,
            "problems": problems,
        }

    def nodes(self) -> dict[str, Any]:
        summaries = []
        for node in self.kube.list("v1", "Node"):
            conditions = (node.get("status") or {}).get("conditions") or []
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
            pressure = [
                c["type"]
                for c in conditions
                if c.get("type") != "Ready" and c.get("status") == "True"
            ]
            spec = node.get("spec") or {}
            summaries.append(
                {
                    "name": node["metadata"]["name"],
                    "ready": ready,
                    "schedulable": not spec.get("unschedulable"),
                    "taints": [
                        f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}"
                        for t in spec.get("taints") or []
                    ],
                    "pressure": pressure,
                }
            )
        return {
            "nodes": _capped(summaries),
            "schedulable": sum(1 for n in summaries if n["schedulable"] and n["ready"]),
        }

    def _revisions(
        self, namespace: str, deployment: str
    ) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
        obj = self.kube.get(ObjectRef("Deployment", deployment, namespace))
        replica_sets = self.kube.list(
            "apps/v1", "ReplicaSet", namespace=namespace, label_selector=_selector(obj) or None
        )
        revisions = {}
        for rs in replica_sets:
            if any(
                o.get("uid") == obj["metadata"]["uid"]
                for o in rs["metadata"].get("ownerReferences") or []
            ):
                number = int(
                    (rs["metadata"].get("annotations") or {}).get(
                        "deployment.kubernetes.io/revision", "0"
                    )
                )
                revisions[number] = rs
        return obj, revisions

    def rollout_history(self, namespace: str, deployment: str) -> dict[str, Any]:
        obj, revisions = self._revisions(namespace, deployment)
        history = []
        for number in sorted(revisions):
            template = revisions[number]["spec"]["template"]
            history.append(
                {
                    "revision": number,
                    "images": [c.get("image") for c in template["spec"].get("containers") or []],
                    "change_cause": (revisions[number]["metadata"].get("annotations") or {}).get(
                        "kubernetes.io/change-cause"
                    ),
                    "replicas": int((revisions[number].get("spec") or {}).get("replicas") or 0),
                }
            )
        current = int(
            (obj["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision", "0")
        )
        return {
            "deployment": deployment,
            "current_revision": current,
            "revisions": _capped(history[::-1], 10),
        }

    def recent_changes(self, namespace: str, deployment: str) -> dict[str, Any]:
        """What changed in the pod template between the previous revision and the current one."""
        obj, revisions = self._revisions(namespace, deployment)
        current = int(
            (obj["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision", "0")
        )
        older = [r for r in revisions if r < current]
        if not older or current not in revisions:
            return {
                "deployment": deployment,
                "current_revision": current,
                "previous_revision": None,
                "diff": "",
            }
        previous = max(older)

        def template(rs: dict[str, Any]) -> dict[str, Any]:
            labels = dict(rs["spec"]["template"].get("metadata", {}).get("labels") or {})
            labels.pop("pod-template-hash", None)
            return {
                "kind": "PodTemplate",
                "metadata": {"labels": labels},
                "spec": rs["spec"]["template"].get("spec"),
            }

        diff = yaml_diff(
            template(revisions[previous]),
            template(revisions[current]),
            label=f"deployment/{deployment} pod template",
            old=f"revision {previous}",
            new=f"revision {current}",
        )
        return {
            "deployment": deployment,
            "current_revision": current,
            "previous_revision": previous,
            "diff": _cut(diff, 3000),
        }
