"""The read tools a model may call: ``tools.reads.ClusterReader`` methods as autogen tools.

Only reads exist here — there is no tool that writes, proposes, approves, or touches a policy,
so no text a model reads can talk it into one. Each tool is bound to the incident's namespace
(the model never names a namespace), every answer is scrubbed, fenced as untrusted data and cut
to ``budget.TOOL_RESULT_TOKENS``, and a failure goes back to the model as a result it can read
rather than an exception. Tools are strict (every parameter required), as OpenAI's structured
output demands when tools are offered too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from autogen_core.tools import FunctionTool

from agents.llm.telemetry import tool_result
from tools import errors
from tools.reads import ClusterReader

READ_TOOLS = (
    "workload_health",
    "pod_status",
    "events",
    "logs",
    "service_check",
    "nodes",
    "rollout_history",
    "recent_changes",
)


@dataclass
class ToolLog:
    """What the model read, in order (for the usage notes and for tests)."""

    calls: list[str] = field(default_factory=list)


def read_tools(
    reader: ClusterReader, namespace: str, *, model: str = "", log: ToolLog | None = None
) -> list[FunctionTool]:
    """The read tools, bound to ``namespace``."""
    calls = log if log is not None else ToolLog()

    def run(name: str, read: Callable[[], dict[str, Any]]) -> str:
        calls.calls.append(name)
        try:
            result: Any = read()
        except errors.ToolError as exc:
            result = {"error": str(exc)}
        return tool_result(name, result, model=model)

    def workload_health() -> str:
        """Every workload's desired/ready replicas and the pods that are not ready."""
        return run("workload_health", lambda: reader.workload_health(namespace))

    def pod_status(pod: str) -> str:
        """One pod's phase, containers, restarts, last termination and owner."""
        return run("pod_status", lambda: reader.pod_status(namespace, pod))

    def events(object_name: str) -> str:
        """Events (deduplicated, newest first); object_name "" for all, or one object's name."""
        return run("events", lambda: reader.events(namespace, object_name=object_name or None))

    def logs(pod: str, container: str, previous: bool) -> str:
        """The tail of a container's log (container "" for the only one); previous=true reads
        the run before the last restart."""
        return run(
            "logs",
            lambda: reader.logs(
                namespace, pod, container=container or None, tail=100, previous=previous
            ),
        )

    def service_check(service: str) -> str:
        """Service → endpoints → pods: selector, ports, ready endpoints and problems."""
        return run("service_check", lambda: reader.service_check(namespace, service))

    def nodes() -> str:
        """Nodes: ready, schedulable, taints and pressure."""
        return run("nodes", reader.nodes)

    def rollout_history(deployment: str) -> str:
        """A Deployment's revisions with their images and change causes."""
        return run("rollout_history", lambda: reader.rollout_history(namespace, deployment))

    def recent_changes(deployment: str) -> str:
        """The pod-template diff between a Deployment's previous and current revision."""
        return run("recent_changes", lambda: reader.recent_changes(namespace, deployment))

    functions = (
        workload_health,
        pod_status,
        events,
        logs,
        service_check,
        nodes,
        rollout_history,
        recent_changes,
    )
    return [
        # strict: OpenAI structured output only accepts strict tools (every parameter required)
        FunctionTool(
            f, description=" ".join((f.__doc__ or "").split()), name=f.__name__, strict=True
        )
        for f in functions
    ]
