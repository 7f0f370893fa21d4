"""The telemetry summary on a proposal card: pods ready, restarts, endpoints, error lines and
recent events of the object a proposal changes — read through the tool layer's read tools,
bounded, and quoted as data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from proposals.model import Proposal
from tools.errors import ToolError
from tools.reads import ClusterReader

MAX_ERRORS = 3
MAX_EVENTS = 3


@dataclass(frozen=True)
class Telemetry:
    pods: str = "—"
    restarts: int = 0
    endpoints: str = "—"
    errors: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)


def _workload(health: dict[str, Any], name: str) -> dict[str, Any] | None:
    for item in health.get("workloads", {}).get("items", []):
        if item.get("name") == name:
            return dict(item)
    return None


def summarize(
    reader: ClusterReader, proposal: Proposal, health_details: dict[str, Any] | None = None
) -> Telemetry:
    """What a person wants to see before approving a write on this object."""
    namespace, name = proposal.target.namespace, proposal.target.name
    if not namespace:
        return Telemetry()
    try:
        health = reader.workload_health(namespace)
        workload = _workload(health, name)
        pods = f"{workload['ready']}/{workload['desired']}" if workload else "—"
        restarts = 0
        for pod in health.get("unready_pods", {}).get("items", []):
            if str(pod.get("name", "")).startswith(name):
                restarts += sum(int(c.get("restarts") or 0) for c in pod.get("containers", []))
        endpoints = "—"
        try:
            check = reader.service_check(namespace, name)
            ready = check.get("ready_endpoints", check.get("endpoints"))
            if isinstance(ready, list):
                endpoints = str(len(ready))
            elif ready is not None:
                endpoints = str(ready)
        except ToolError:
            pass
        events = [
            f"{e['reason']} ({e['object']}, x{e['count']})"
            for e in reader.events(namespace, limit=20)["events"]["items"]
            if e.get("type") == "Warning" and name in str(e.get("object", ""))
        ][:MAX_EVENTS]
    except ToolError:
        return Telemetry()
    errors: list[str] = []
    for lines in (health_details or {}).values():
        errors += [str(line)[:120] for line in lines if name in str(line)]
    return Telemetry(
        pods=pods,
        restarts=restarts,
        endpoints=endpoints,
        errors=errors[:MAX_ERRORS],
        events=events,
    )
