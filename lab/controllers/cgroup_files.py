"""The container's own cgroup (v2) as a command inside it reads it at ``/sys/fs/cgroup``.

Programs size themselves from these files (the JVM, Go's ``GOMEMLIMIT`` helpers, a script
that checks ``memory.max`` before it buffers), and an SRE reads them to see the limits the
kubelet set. Values follow the container's resources as the kubelet translates them:
``memory.max`` is the memory limit in bytes (rounded down to a 4 KiB page, as the kernel
stores it) or ``max``; ``cpu.max`` is ``<quota> 100000`` with the quota the CPU limit's share
of the 100 ms period (at least 1 ms) or ``max 100000``; ``cpu.weight`` comes from the CPU
request through the kubelet's shares (``max(2, milli * 1024 / 1000)``) and the runc
conversion to a weight. ``memory.current`` and ``cpu.stat`` come from the lab's usage model
(``usage.py``), so they move with the clock. The files are read-only, as the runtime mounts
them.
"""

from __future__ import annotations

from typing import Any

from lab.cluster import quantity
from lab.controllers import usage
from lab.controllers.containers import ContainerRun
from lab.controllers.exec_files import Layer

MOUNT = "/sys/fs/cgroup"
PERIOD_US = 100_000
MIN_QUOTA_US = 1_000
PAGE = 4096
CONTROLLERS = "cpuset cpu io memory hugetlb pids rdma misc"


def _resource(container: dict[str, Any], kind: str, name: str) -> float | None:
    raw = ((container.get("resources") or {}).get(kind) or {}).get(name)
    if raw is None:
        return None
    try:
        return float(quantity.parse(raw))
    except ValueError:
        return None


def memory_max(container: dict[str, Any]) -> str:
    limit = _resource(container, "limits", "memory")
    return "max" if not limit else str(int(limit) // PAGE * PAGE)


def cpu_max(container: dict[str, Any]) -> str:
    limit = _resource(container, "limits", "cpu")
    if not limit:
        return f"max {PERIOD_US}"
    quota = max(int(limit * 1000) * PERIOD_US // 1000, MIN_QUOTA_US)
    return f"{quota} {PERIOD_US}"


def cpu_weight(container: dict[str, Any]) -> str:
    request = _resource(container, "requests", "cpu")
    if request is None:  # the API server defaults a request to the limit
        request = _resource(container, "limits", "cpu")
    shares = max(2, int((request or 0) * 1000) * 1024 // 1000)
    return str(1 + ((shares - 2) * 9999) // 262142)


def cgroup_layer(container: dict[str, Any], run: ContainerRun | None, now: float) -> Layer:
    """The files of the container's cgroup at ``now`` (each run has a fresh one: a restart
    after an OOM kill starts with clean counters)."""
    used = int(usage.working_set_bytes(run, now)) // PAGE * PAGE if run is not None else 0
    cpu_us = int(usage.cpu_seconds(run, now) * 1_000_000) if run is not None else 0
    files = {
        "cgroup.controllers": CONTROLLERS,
        "cgroup.subtree_control": "",
        "cgroup.procs": "1",
        "cgroup.type": "domain",
        "cpu.max": cpu_max(container),
        "cpu.weight": cpu_weight(container),
        "cpu.stat": (
            f"usage_usec {cpu_us}\nuser_usec {cpu_us * 7 // 10}\nsystem_usec "
            f"{cpu_us - cpu_us * 7 // 10}\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0"
        ),
        "memory.max": memory_max(container),
        "memory.high": "max",
        "memory.low": "0",
        "memory.min": "0",
        "memory.current": str(used),
        "memory.peak": str(used),
        "memory.swap.max": "max",
        "memory.swap.current": "0",
        "memory.oom.group": "1",
        "memory.events": ("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0"),
        "memory.stat": f"anon {used}\nfile 0\nkernel 0\nsock 0\nshmem 0",
        "pids.max": "max",
        "pids.current": "1",
    }
    layer = Layer()
    layer.files.update({f"/{name}": f"{text}\n".encode() for name, text in files.items()})
    return layer
