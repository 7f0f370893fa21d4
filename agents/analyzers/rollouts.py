"""A rollout that left the pods running but broke what they do: the latest revision of a
Deployment changed its environment, image or command, and since then its own calls fail in a
way that points at the caller (credentials refused, requests rejected) rather than at a callee
that is down.

Crashing or unschedulable pods are the pod and scheduling analyzers' business; this module
only speaks when the pods look healthy, which is when a changed setting hides best.
"""

from __future__ import annotations

import re
from typing import Any

from agents.analyzers import _workloads as w
from agents.analyzers.pods import PULL_FAILURES, Cause, skipped_facts, workload_finding
from agents.model import Category, Evidence, Finding
from agents.snapshot import Snapshot

ANALYZER = "rollouts"
# Failures that say the callee refused *this caller* (its settings), not that it is down.
_CALLER_AT_FAULT = re.compile(
    r"authenticat|unauthori[sz]ed|forbidden|access denied|permission denied|"
    r"invalid (?:credentials|password|user|token)|\b40[013]\b|bad request|rejected",
    re.IGNORECASE,
)
_SETTINGS = ("env", "envFrom", "image", "command", "args")
ERROR_LINES = 3


def _healthy_pods(snapshot: Snapshot, name: str) -> list[w.Obj]:
    pods = w.pods_of(snapshot, "Deployment", name)
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            waiting = ((status.get("state") or {}).get("waiting") or {}).get("reason")
            if waiting in PULL_FAILURES or waiting == "CrashLoopBackOff":
                return []
    return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]


def _own_refusals(snapshot: Snapshot, pods: list[w.Obj]) -> list[w.CallError]:
    names = {w.name_of(p) for p in pods}
    return [
        error
        for error in w.call_errors(snapshot)
        if w.pod_of_log(error.caller) in names
        and _CALLER_AT_FAULT.search(error.line)
        and not error.chain  # the direct callee refused us, not something behind it
    ]


def _changed_settings(change: w.TemplateChange) -> dict[str, list[str]]:
    return {
        container: [f for f in fields if f in _SETTINGS]
        for container, fields in change.fields.items()
        if container and any(f in _SETTINGS for f in fields)
    }


def refused_after_rollout(snapshot: Snapshot) -> list[Finding]:
    findings = []
    for deployment in snapshot.of("Deployment"):
        change = w.latest_change(snapshot, deployment)
        if change is None:
            continue
        settings = _changed_settings(change)
        if not settings:
            continue
        name = w.name_of(deployment)
        refusals = _own_refusals(snapshot, _healthy_pods(snapshot, name))
        if not refusals:
            continue
        findings.append(_finding(snapshot, deployment, change, settings, refusals))
    return findings


def _finding(
    snapshot: Snapshot,
    deployment: w.Obj,
    change: w.TemplateChange,
    settings: dict[str, list[str]],
    refusals: list[w.CallError],
) -> Finding:
    name = w.name_of(deployment)
    container = sorted(settings)[0]
    only_image = all(set(fields) <= {"image"} for fields in settings.values())
    callees = sorted({r.callee for r in refusals})
    cause = Cause(
        "rollout-broke-calls",
        Category.BAD_DEPLOY if only_image else Category.CONFIGURATION,
        f"runs, but since revision {change.revision} changed its "
        f"{', '.join(sorted({f for fs in settings.values() for f in fs}))} its calls to "
        f"{', '.join(callees)} are refused",
        0.85,
    )
    evidence: list[Evidence] = [
        w.evidence(
            "revision",
            f"deployment/{name}",
            f"revision {change.previous} → {change.revision}: {line}",
        )
        for line in change.lines[:4]
    ]
    evidence += [w.evidence("log", w.log_ref(r.caller), r.line) for r in refusals[:ERROR_LINES]]
    facts: dict[str, Any] = {
        "container": container,
        "rollback_to": change.previous,
        "changed": change.lines[:6],
        "callees": callees,
        **skipped_facts(change),
    }
    finding = workload_finding(
        snapshot,
        analyzer=ANALYZER,
        workload=("Deployment", name),
        cause=cause,
        evidence=evidence,
        facts=facts,
    )
    # The callees' errors are this workload's doing: they are symptoms, not causes.
    return finding.model_copy(
        update={"symptoms": [*finding.symptoms, *(w.key(snapshot, "Service", c) for c in callees)]}
    )


ANALYZERS = [refused_after_rollout]
