"""The kubelet's view of one pod: container runs, their environment and the status they show.

Pure data and rendering; the lifecycle that moves these states along lives in ``kubelet``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.cluster.admission import qos_class
from lab.cluster.clock import Clock
from lab.cluster.store import ObjectStore
from lab.controllers import downward_api
from lab.images import ImageSpec, qualified_image, serves_path

LOG_LINES = 500


@dataclass
class ContainerRun:
    name: str
    image: str
    spec: dict[str, Any]
    init: bool = False
    state: str = "waiting"  # waiting, running or terminated
    reason: str = "ContainerCreating"
    message: str = ""
    exit_code: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    restart_count: int = 0
    crashes: int = 0
    last_terminated: dict[str, Any] | None = None
    ready: bool = False
    ever_started: bool = False
    completed: bool = False
    pull_failures: int = 0
    container_id: str = ""
    env: dict[str, str] = field(default_factory=dict)  # all of it (``container_env``)
    declared_env: dict[str, str] = field(default_factory=dict)  # its envFrom and env
    behaviour: ImageSpec | None = None
    listens: list[int] = field(default_factory=list)  # ports open in the current run
    http: dict[int, list[str] | None] = field(default_factory=dict)  # those that speak HTTP
    exiting: bool = False  # the current run is about to end: it serves and logs no more
    # The HTTP status the container's server gives a (port, path), for servers that answer from
    # the container's files (nginx, httpd: ``port_answers.page_status``); None: its paths.
    pages: Callable[[int, str], int | None] | None = None
    logs: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    log_times: deque[float] = field(default_factory=lambda: deque(maxlen=LOG_LINES))
    log_total: int = 0  # lines ever written in the current run (followers count from it)
    previous_logs: list[str] | None = None
    previous_times: list[float] | None = None
    timers: list[Any] = field(default_factory=list)
    generation: int = 0  # bumps on each (re)start, so stale timers of a dead run do nothing

    def add_log(self, line: str, at: float) -> None:
        self.logs.append(line)
        self.log_times.append(at)
        self.log_total += 1

    @property
    def sidecar(self) -> bool:
        """A native sidecar: an init container with ``restartPolicy: Always``. It runs beside
        the app containers for the pod's life, restarts whatever its exit, and counts as
        initialized once started."""
        return self.init and self.spec.get("restartPolicy") == "Always"

    @property
    def init_done(self) -> bool:
        """This init container no longer holds the next one back."""
        return self.completed or (self.sidecar and self.ever_started)

    def rotate_logs(self) -> None:
        """A new run begins: the current log becomes ``--previous``."""
        self.previous_logs, self.previous_times = list(self.logs), list(self.log_times)
        self.logs.clear()
        self.log_times.clear()
        self.log_total = 0


@dataclass
class PodRun:
    uid: str
    namespace: str
    name: str
    node: str
    ip: str
    host_ip: str
    started: float
    init: list[ContainerRun]
    main: list[ContainerRun]
    restart_policy: str = "Always"
    terminating: bool = False  # stamped for deletion: stopping, nothing restarts
    drain_deadline: float = 0.0  # when terminating: the end of the grace period
    # The drain's containers: when each one's preStop hook ends, and which were sent SIGTERM.
    hooks_done: dict[str, float] = field(default_factory=dict)
    stopping: set[str] = field(default_factory=set)
    deleted: bool = False  # every container stopped and the pod was deleted

    def all(self) -> list[ContainerRun]:
        return [*self.init, *self.main]

    def find(self, name: str) -> ContainerRun | None:
        return next((c for c in self.all() if c.name == name), None)

    def initialized(self) -> bool:
        return all(c.init_done for c in self.init)

    def finished(self) -> bool:
        """No container will run again: the pod ends Succeeded or Failed."""
        if any(c.state == "terminated" and not c.completed and not c.sidecar for c in self.init):
            return self.restart_policy == "Never"
        return bool(self.main) and all(c.completed for c in self.main)

    def phase(self) -> str:
        if self.finished():
            failed = any(c.exit_code != 0 for c in self.all() if c.state == "terminated")
            return "Failed" if failed else "Succeeded"
        if self.initialized() and any(c.ever_started for c in self.main):
            return "Running"
        return "Pending"


def new_container_id() -> str:
    return f"containerd://{secrets.token_hex(32)}"


def _decode(value: str) -> str:
    try:
        return base64.b64decode(value).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return ""


def resolve_environment(
    store: ObjectStore, pod: dict[str, Any], container: dict[str, Any], pod_ip: str
) -> tuple[dict[str, str], str]:
    """The container's configured environment (``envFrom`` and ``env``) at start, or the
    reason it cannot be built; ``container_env.build`` adds what the kubelet and the runtime
    add."""
    namespace = pod["metadata"]["namespace"]
    env: dict[str, str] = {}

    def source(kind: str, name: str) -> dict[str, Any] | None:
        return store.get("configmaps" if kind == "ConfigMap" else "secrets", namespace, name)

    for entry in container.get("envFrom") or []:
        for kind, ref_key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = entry.get(ref_key)
            if not ref:
                continue
            obj = source(kind, ref.get("name", ""))
            if obj is None:
                if not ref.get("optional"):
                    return {}, f'{kind.lower()} "{ref.get("name")}" not found'
                continue
            data = obj.get("data") or {}
            prefix = entry.get("prefix", "")
            for key, value in data.items():
                env[prefix + key] = _decode(value) if kind == "Secret" else str(value)
    node = store.get("nodes", "", str((pod.get("spec") or {}).get("nodeName") or "")) or {}
    node_status = node.get("status") or {}
    host_ip = next(
        (
            str(a.get("address"))
            for a in node_status.get("addresses") or []
            if a.get("type") == "InternalIP"
        ),
        "",
    )
    for var in container.get("env") or []:
        name = var.get("name", "")
        if "value" in var:
            env[name] = str(var["value"])
            continue
        value_from = var.get("valueFrom") or {}
        if "fieldRef" in value_from:
            path = str(value_from["fieldRef"].get("fieldPath", ""))
            env[name] = downward_api.field_value(pod, path, pod_ip=pod_ip, host_ip=host_ip)
            continue
        if "resourceFieldRef" in value_from:
            env[name] = downward_api.resource_value(
                pod,
                str(container.get("name", "")),
                value_from["resourceFieldRef"] or {},
                node_status.get("allocatable") or {},
            )
            continue
        for kind, ref_key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
            ref = value_from.get(ref_key)
            if not ref:
                continue
            obj = source(kind, ref.get("name", ""))
            key = ref.get("key", "")
            data = (obj or {}).get("data") or {}
            if obj is None or key not in data:
                if ref.get("optional"):
                    break
                if obj is None:
                    return {}, f'{kind.lower()} "{ref.get("name")}" not found'
                return {}, f"couldn't find key {key} in {kind} {namespace}/{ref.get('name')}"
            env[name] = _decode(data[key]) if kind == "Secret" else str(data[key])
        else:
            if name and name not in env:
                env[name] = ""
    return env, ""


def missing_volume(store: ObjectStore, pod: dict[str, Any]) -> str:
    """The first configMap or secret volume whose source does not exist."""
    namespace = pod["metadata"]["namespace"]
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        cm = volume.get("configMap")
        if (
            cm
            and not cm.get("optional")
            and store.get("configmaps", namespace, cm.get("name", "")) is None
        ):
            return (
                f'MountVolume.SetUp failed for volume "{volume["name"]}" : configmap '
                f'"{cm.get("name")}" not found'
            )
        secret = volume.get("secret")
        if (
            secret
            and not secret.get("optional")
            and store.get("secrets", namespace, secret.get("secretName", "")) is None
        ):
            return (
                f'MountVolume.SetUp failed for volume "{volume["name"]}" : secret '
                f'"{secret.get("secretName")}" not found'
            )
    return ""


def probe_result(container: ContainerRun, probe: dict[str, Any]) -> tuple[bool, str]:
    """Whether a probe of the container's current run passes, and the kubelet's message
    when it does not (``{ip}`` stands for the pod's IP)."""
    action = probe.get("httpGet") or probe.get("tcpSocket") or probe.get("grpc")
    if action is None:
        return True, ""
    port = action.get("port")
    if isinstance(port, str):
        port = next(
            (
                p.get("containerPort")
                for p in container.spec.get("ports") or []
                if p.get("name") == port
            ),
            None,
        )
    if port in container.listens:
        if "httpGet" not in probe:
            return True, ""
        path = str(probe["httpGet"].get("path") or "/")
        if port not in container.http:  # a server that does not speak HTTP
            return False, f'Get "http://{{ip}}:{port}{path}": EOF'
        status = container.pages(port, path) if container.pages is not None else None
        if status is not None:
            if 200 <= status < 400:
                return True, ""
            return False, f"HTTP probe failed with statuscode: {status}"
        if not serves_path(container.http[port], path):
            return False, "HTTP probe failed with statuscode: 404"
        return True, ""
    if "httpGet" in probe:
        path = probe["httpGet"].get("path", "/")
        return False, (
            f'Get "http://{{ip}}:{port}{path}": dial tcp {{ip}}:{port}: connect: connection refused'
        )
    return False, f"dial tcp {{ip}}:{port}: connect: connection refused"


def _container_state(run: ContainerRun, clock: Clock) -> dict[str, Any]:
    if run.state == "running":
        return {"running": {"startedAt": clock.timestamp(run.started_at)}}
    if run.state == "terminated":
        return {
            "terminated": {
                "exitCode": run.exit_code,
                "reason": run.reason,
                "startedAt": clock.timestamp(run.started_at),
                "finishedAt": clock.timestamp(run.finished_at),
                "containerID": run.container_id,
            }
        }
    waiting: dict[str, Any] = {"reason": run.reason}
    if run.message:
        waiting["message"] = run.message
    return {"waiting": waiting}


def container_status(run: ContainerRun, clock: Clock) -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": run.name,
        "state": _container_state(run, clock),
        "lastState": {"terminated": run.last_terminated} if run.last_terminated else {},
        "ready": run.ready,
        "restartCount": run.restart_count,
        # A started container's image as containerd reports it; a waiting one's as written.
        "image": qualified_image(run.image)[0] if run.ever_started else run.image,
        "imageID": f"{qualified_image(run.image)[1]}@sha256:"
        f"{hashlib.sha256(run.image.encode()).hexdigest()}"
        if run.ever_started
        else "",
        "started": run.state == "running",
    }
    if run.container_id:
        status["containerID"] = run.container_id
    return status


def _condition(
    kind: str,
    ok: bool,
    now: str,
    reason: str = "",
    message: str = "",
    previous: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    value = "True" if ok else "False"
    old = (previous or {}).get(kind)
    transition = old["lastTransitionTime"] if old and old.get("status") == value else now
    result: dict[str, Any] = {
        "type": kind,
        "status": value,
        "lastProbeTime": None,
        "lastTransitionTime": transition,
    }
    if not ok and reason:
        result["reason"] = reason
        if message:
            result["message"] = message
    return result


# The pod conditions the kubelet writes (kubetypes.PodConditionByKubelet).
KUBELET_CONDITIONS = frozenset(
    {"PodScheduled", "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"}
)


def gates_not_ready(pod: dict[str, Any], conditions: dict[str, dict[str, Any]]) -> list[str]:
    """Why each of the pod's readiness gates holds Ready back, in the kubelet's words
    (GeneratePodReadyCondition): a gate's condition is missing or not "True"."""
    reasons: list[str] = []
    for gate in (pod.get("spec") or {}).get("readinessGates") or []:
        kind = str(gate.get("conditionType", ""))
        condition = conditions.get(kind)
        if condition is None:
            reasons.append(
                f'corresponding condition of pod readiness gate "{kind}" does not exist.'
            )
        elif condition.get("status") != "True":
            reasons.append(
                f'the status of pod readiness gate "{kind}" is not "True", '
                f"but {condition.get('status')}"
            )
    return reasons


def pod_status(run: PodRun, pod: dict[str, Any], clock: Clock) -> dict[str, Any]:
    now = clock.timestamp()
    previous = {c["type"]: c for c in (pod.get("status") or {}).get("conditions") or []}
    initialized = run.initialized()
    # A native sidecar's readiness is part of the pod's, as the kubelet counts it.
    unready = [c.name for c in [*run.main, *(i for i in run.init if i.sidecar)] if not c.ready]
    incomplete = [c.name for c in run.init if not c.init_done]
    phase = run.phase()
    done = phase in ("Succeeded", "Failed")
    containers_ready = (
        "PodCompleted" if done else "ContainersNotReady",
        "" if done else f"containers with unready status: [{' '.join(unready)}]",
    )
    gates = gates_not_ready(pod, previous)
    ready = not unready and not gates
    ready_reason, ready_message = (
        containers_ready if unready or done else ("ReadinessGatesNotReady", ", ".join(gates))
    )
    # The kubelet keeps the conditions it does not own (a controller's readiness gate, a
    # DisruptionTarget), ahead of its own, as generateAPIPodStatus does.
    conditions = [c for t, c in previous.items() if t not in KUBELET_CONDITIONS]
    conditions += [
        _condition("PodReadyToStartContainers", True, now, previous=previous),
        _condition(
            "Initialized",
            initialized,
            now,
            "ContainersNotInitialized",
            f"containers with incomplete status: [{' '.join(incomplete)}]",
            previous,
        ),
        _condition("Ready", ready, now, ready_reason, ready_message, previous),
        _condition("ContainersReady", not unready, now, *containers_ready, previous),
        previous.get("PodScheduled") or _condition("PodScheduled", True, now),
    ]
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": run.host_ip,
        "hostIPs": [{"ip": run.host_ip}],
        "podIP": run.ip,
        "podIPs": [{"ip": run.ip}],
        "startTime": clock.timestamp(run.started),
        "containerStatuses": [container_status(c, clock) for c in run.main],
        "qosClass": qos_class(pod.get("spec") or {}),
    }
    if run.init:
        status["initContainerStatuses"] = [container_status(c, clock) for c in run.init]
    return status
