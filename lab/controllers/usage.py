"""What a running container uses: memory working set, CPU time and CPU throttling.

cAdvisor's series (``lab/metrics``) and the traffic model's latency read these, so a fault
shows up in usage as it does in the kubelet's events: a container whose limit is below its
footprint fills it up and is OOMKilled at the limit; a leaky release grows until the limit
kills it; a CPU limit below what the image uses throttles it. Pure functions of the run
and the clock, so values move continuously with time in realtime mode.
"""

from __future__ import annotations

from typing import Any

from lab.cluster import quantity
from lab.controllers import script_memory
from lab.controllers.containers import ContainerRun
from lab.images import split_image

MIB = 1024 * 1024
RAMP_SECONDS = 3.0  # a process takes this long to reach its footprint (and the OOM delay)
START_FRACTION = 0.3  # of its footprint, at the first instant of a run


def _limits(container: ContainerRun) -> dict[str, Any]:
    return dict((container.spec.get("resources") or {}).get("limits") or {})


def _requests(container: ContainerRun) -> dict[str, Any]:
    return dict((container.spec.get("resources") or {}).get("requests") or {})


def memory_limit_bytes(container: ContainerRun) -> float:
    """The container's memory limit in bytes; 0 without one (as cAdvisor reports it)."""
    limit = _limits(container).get("memory")
    if limit is None:
        return 0.0
    try:
        return float(quantity.parse(limit))
    except ValueError:
        return 0.0


def cpu_limit_cores(container: ContainerRun) -> float:
    """The CPU limit in cores; 0 without one."""
    limit = _limits(container).get("cpu")
    if limit is None:
        return 0.0
    try:
        return float(quantity.parse(limit))
    except ValueError:
        return 0.0


def resource_quantity(container: ContainerRun, kind: str, resource: str) -> float | None:
    """A request or limit (``kind``) of ``resource`` in base units, None when unset."""
    values = _limits(container) if kind == "limits" else _requests(container)
    if resource not in values:
        return None
    try:
        return float(quantity.parse(values[resource]))
    except ValueError:
        return None


def leak_rate_mi_per_minute(container: ContainerRun) -> float:
    """How fast the current image's working set grows (a leaky tag), MiB a minute."""
    if container.behaviour is None:
        return 0.0
    _, tag = split_image(container.image)
    return container.behaviour.leaks.get(tag, 0.0)


def footprint_bytes(container: ContainerRun) -> float:
    return float(container.behaviour.memory_mi if container.behaviour else 0) * MIB


def seconds_to_oom(container: ContainerRun) -> float | None:
    """When a leaky run reaches its limit, counted from its start; None if it never does."""
    limit = memory_limit_bytes(container)
    rate = leak_rate_mi_per_minute(container) * MIB / 60.0
    if limit <= 0 or rate <= 0:
        return None
    room = max(limit - footprint_bytes(container), 0.0)
    return RAMP_SECONDS + room / rate


def working_set_bytes(container: ContainerRun, now: float) -> float:
    """Memory in use: ramps up to the image's footprint, grows with a leak, never past the
    limit (the kernel kills the process there: the kubelet reports OOMKilled)."""
    if container.state != "running" or container.started_at is None:
        return 0.0
    elapsed = max(now - container.started_at, 0.0)
    footprint = footprint_bytes(container)
    ramp = min(elapsed / RAMP_SECONDS, 1.0)
    used = footprint * (START_FRACTION + (1.0 - START_FRACTION) * ramp)
    leak = leak_rate_mi_per_minute(container) * MIB / 60.0
    used += leak * max(elapsed - RAMP_SECONDS, 0.0)
    limit = memory_limit_bytes(container)
    return min(used, limit) if limit > 0 else used


def script_exceeds_limit(container: ContainerRun, words: list[str]) -> bool:
    """Whether the command the run started (``words``) holds more than its memory limit on
    top of the image's footprint: the kernel OOM-kills the container's cgroup (the kubelet
    enables ``memory.oom.group``, so the whole container goes, not just the greedy process)."""
    limit = memory_limit_bytes(container)
    if limit <= 0:
        return False
    return footprint_bytes(container) + script_memory.peak_bytes(words) > limit


def cpu_demand_cores(container: ContainerRun) -> float:
    """What the image would use under its load with no limit."""
    return (container.behaviour.cpu_m if container.behaviour else 0) / 1000.0


def cpu_rate_cores(container: ContainerRun) -> float:
    """CPU actually used: the demand, capped by the limit (the rest is throttled)."""
    demand = cpu_demand_cores(container)
    limit = cpu_limit_cores(container)
    return min(demand, limit) if limit > 0 else demand


def cpu_seconds(container: ContainerRun, now: float) -> float:
    """CPU time of the current run (a restart starts a new cgroup, from zero)."""
    if container.state != "running" or container.started_at is None:
        return 0.0
    return cpu_rate_cores(container) * max(now - container.started_at, 0.0)


def throttle_factor(container: ContainerRun) -> float:
    """How much longer each request takes under the CPU limit (1 when not throttled)."""
    limit = cpu_limit_cores(container)
    demand = cpu_demand_cores(container)
    if limit <= 0 or demand <= limit:
        return 1.0
    return demand / limit
