"""Init containers that never finish: a rollout's new pods wait forever in ``Init:0/1``.

A failing init container is a crash like any other (``pods``); one that keeps *running* is
quieter: no restart, no Warning event, only a rollout that does not complete. Running alone is
not a fault — every init container runs for a while — so a finding needs all of: the pod
belongs to a workload whose rollout is incomplete, the init container is still running while
the pod's app containers have not started, and something that says it is stuck rather than
slow: its own log says it waits or retries (or repeats one line, as a polling loop does), or the
Deployment's progress deadline has passed.
When the latest rollout added or changed that init container, the finding carries the
revision to roll back to.
"""

from __future__ import annotations

import re
from typing import Any

from agents.analyzers import _workloads as w
from agents.analyzers.pods import Cause, change_facts, rollback_facts, workload_finding
from agents.model import Category, Evidence, Finding
from agents.snapshot import Snapshot

ANALYZER = "init-containers"
MECHANISM = "init-container-stuck"
# How programs word waiting for something that is not there yet.
_WAITING = re.compile(
    r"\b(wait(ing)?|retry(ing)?|retries|not (yet )?(ready|available|found|up)|unavailable"
    r"|refused|timed? ?out|no such host|sleeping)\b",
    re.IGNORECASE,
)
LOG_LINES = 3


def _running_init(pod: w.Obj) -> str | None:
    """The name of the init container this pod is stuck in (running, not done), if any."""
    for status in (pod.get("status") or {}).get("initContainerStatuses") or []:
        state = status.get("state") or {}
        if "running" in state:
            return str(status.get("name"))
        if "terminated" not in state:
            return None  # waiting: a pull or a crash, which the pods analyzer reads
    return None


def _incomplete(kind: str, obj: w.Obj) -> bool:
    status = obj.get("status") or {}
    if kind == "DaemonSet":
        desired = int(status.get("desiredNumberScheduled") or 0)
        return (
            int(status.get("numberReady") or 0) < desired
            or int(status.get("updatedNumberScheduled") or 0) < desired
        )
    desired = w.desired_replicas(obj)
    return (
        int(status.get("updatedReplicas") or 0) < desired
        or int(status.get("availableReplicas") or 0) < desired
        or int(status.get("replicas") or 0) > desired
    )


def _deadline_passed(obj: w.Obj) -> bool:
    return any(
        c.get("type") == "Progressing" and c.get("reason") == "ProgressDeadlineExceeded"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def stuck_init_containers(snapshot: Snapshot) -> list[Finding]:
    findings = []
    for kind in w.WORKLOAD_KINDS:
        for obj in snapshot.of(kind):
            if not _incomplete(kind, obj):
                continue
            finding = _stuck(snapshot, (kind, w.name_of(obj)), obj)
            if finding is not None:
                findings.append(finding)
    return findings


def _stuck(snapshot: Snapshot, workload: tuple[str, str], obj: w.Obj) -> Finding | None:
    stuck = [
        (pod, container)
        for pod in w.pods_of(snapshot, *workload)
        if (container := _running_init(pod)) is not None
    ]
    if not stuck:
        return None
    pod, container = stuck[0]
    pod_name = w.name_of(pod)
    current, _ = w.logs_of(snapshot, pod_name, container)
    lines = [line for line in current.splitlines() if line.strip()]
    waiting = [line for line in lines if _WAITING.search(line)][-LOG_LINES:]
    if not waiting and len(lines) > len(set(lines)):
        # The same line again and again: a loop polling for something, whatever its words.
        waiting = [line for line in lines if lines.count(line) > 1][-1:]
    deadline = _deadline_passed(obj)
    if not waiting and not deadline:
        return None  # running, and nothing says it is stuck rather than slow
    change, change_evidence = change_facts(snapshot, workload)
    facts: dict[str, Any] = {"container": container, "init": True, "pods": len(stuck)}
    facts.update(rollback_facts(MECHANISM, container, change))
    evidence: list[Evidence] = [
        w.evidence(
            "status",
            f"pod/{pod_name}",
            f"init container {container} is still running; the app containers have not started",
        ),
        *(w.evidence("log", f"pod/{pod_name}", line) for line in waiting),
    ]
    if deadline:
        evidence.append(
            w.evidence(
                "status",
                f"{workload[0].lower()}/{workload[1]}",
                "Progressing=False: ProgressDeadlineExceeded",
            )
        )
    if "rollback_to" in facts:
        evidence += change_evidence
    cause = Cause(
        MECHANISM,
        Category.BAD_DEPLOY,
        f"init container {container} never finishes, so the new pods never start",
        # A change that brought it is the surest sign; a deadline next; a waiting log least.
        0.85 if "rollback_to" in facts else (0.7 if deadline else 0.55),
    )
    return workload_finding(
        snapshot,
        analyzer=ANALYZER,
        workload=workload,
        cause=cause,
        evidence=evidence,
        facts=facts,
    )


ANALYZERS = [stuck_init_containers]
