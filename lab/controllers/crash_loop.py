"""How a container fails and comes back: its startup failure, and the back-offs.

Pure functions of the image model: a container whose image crashes (a fault's output), lacks
a required environment variable, gets a value its image refuses, or has a memory limit below
what its image needs, exits soon after it starts with the log line and exit code a real one
writes. The kubelet then restarts it after ``crash_backoff`` (a quick first restart, then
10 s doubling to ``MAX_BACKOFF``), the same cap its image pulls back off to.
"""

from __future__ import annotations

from lab.cluster import quantity
from lab.controllers.containers import ContainerRun

MAX_BACKOFF = 300.0


def crash_backoff(crashes: int) -> float:
    """Seconds before the next restart: the first is quick, then 10 s doubling to 5 min."""
    if crashes <= 1:
        return 1.0
    return min(10.0 * 2.0 ** (crashes - 2), MAX_BACKOFF)


def startup_failure(
    container: ContainerRun, crash: str
) -> tuple[float, str, int, list[str]] | None:
    """How a container just started fails by the image model, if it does: (seconds until
    it exits, reason, exit code, the log lines it writes). ``crash``: the crash output a
    fault set on its image."""
    spec = container.behaviour
    assert spec is not None
    if crash:
        return 2.0, "Error", 2, crash.splitlines()
    if spec.requires_one_of and not any(container.env.get(n) for n in spec.requires_one_of):
        return (
            1.0,
            "Error",
            1,
            spec.missing_env_log or [f"one of {', '.join(spec.requires_one_of)} must be set"],
        )
    for name in spec.requires_env:
        if not container.env.get(name):
            return 1.0, "Error", 1, [f"required environment variable {name} is not set"]
    for name, choices in spec.env_choices.items():
        value = container.env.get(name)
        if value is not None and value not in choices:
            return (
                1.0,
                "Error",
                1,
                [f'invalid value "{value}" for {name}: expected one of {", ".join(choices)}'],
            )
    limit = ((container.spec.get("resources") or {}).get("limits") or {}).get("memory")
    if limit is not None and quantity.mebibytes(limit) < spec.memory_mi:
        return 3.0, "OOMKilled", 137, []
    return None
