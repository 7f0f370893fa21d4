"""Which container a log request reads, and what it reads: the kubelet's answers to
``pods/log`` (the default container, ``--previous``, ``--tail``) and its 400s for a container
that is not there or has not started."""

from __future__ import annotations

from typing import Any

from lab.cluster.errors import bad_request
from lab.cluster.store import ObjectStore
from lab.controllers.containers import ContainerRun, PodRun


def find_run(runs: dict[str, PodRun], namespace: str, pod_name: str) -> PodRun | None:
    return next((r for r in runs.values() if r.namespace == namespace and r.name == pod_name), None)


def container_name_for(pod: dict[str, Any] | None, pod_name: str, wanted: str | None) -> str:
    """The container a request means: the one named, the pod's default container
    annotation, or its only container (else the 400 asking to choose)."""
    if wanted is not None:
        return wanted
    names = [c["name"] for c in ((pod or {}).get("spec") or {}).get("containers") or []]
    default = ((pod or {}).get("metadata", {}).get("annotations") or {}).get(
        "kubectl.kubernetes.io/default-container"
    )
    if default:
        return str(default)
    if len(names) == 1:
        return str(names[0])
    raise bad_request(
        f"a container name must be specified for pod {pod_name}, choose one of: [{' '.join(names)}]"
    )


def read_log(container: ContainerRun, *, previous: bool, tail_lines: int | None) -> str:
    lines = list(container.previous_logs or []) if previous else list(container.logs)
    if tail_lines is not None:
        lines = lines[-tail_lines:] if tail_lines > 0 else []
    return "".join(f"{line}\n" for line in lines)


def log_source(
    store: ObjectStore,
    runs: dict[str, PodRun],
    namespace: str,
    pod_name: str,
    container_name: str | None,
    *,
    previous: bool,
) -> ContainerRun:
    """The container whose log a request reads, or the 400 the kubelet answers."""
    run = find_run(runs, namespace, pod_name)
    pod = store.get("pods", namespace, pod_name)
    names = [c["name"] for c in ((pod or {}).get("spec") or {}).get("containers") or []]
    container_name = container_name_for(pod, pod_name, container_name)
    container = run.find(container_name) if run else None
    if container is None:
        if run is None and container_name in names:
            raise bad_request(
                f'container "{container_name}" in pod "{pod_name}" is '
                "waiting to start: ContainerCreating"
            )
        raise bad_request(f"container {container_name} is not valid for pod {pod_name}")
    if previous:
        if container.previous_logs is None:
            raise bad_request(
                f'previous terminated container "{container_name}" in pod "{pod_name}" not found'
            )
    elif not container.ever_started:
        detail = "trying and failing to pull image" if container.pull_failures else container.reason
        raise bad_request(
            f'container "{container_name}" in pod "{pod_name}" is waiting to start: {detail}'
        )
    return container
