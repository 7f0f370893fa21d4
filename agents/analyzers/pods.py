"""Why containers do not run: crash loops read by their exit reason and last log lines, image
pulls that fail, and init containers that never finish.

Each finding names the workload that owns the failing pods (the thing a person changes), the
container, and — when the workload's latest rollout changed the field that explains the
failure — the revision to roll back to, so the remedy can undo the change rather than patch
around it. Exit reasons and log lines are matched by how programs commonly word them, never by
an app's names or values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agents.analyzers import _workloads as w
from agents.model import Category, Evidence, Finding
from agents.snapshot import Snapshot

ANALYZER = "pods"
PULL_FAILURES = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
# A container that starts and exits again without becoming useful.
CRASH_WAITING = {"CrashLoopBackOff", "RunContainerError"}
# A container the kubelet cannot even create: its environment names a ConfigMap, Secret or key
# that is not there.
CONFIG_WAITING = {"CreateContainerConfigError"}
_MISSING_ENV = (
    re.compile(
        r"environment variable ([A-Za-z_][A-Za-z0-9_]*) (?:is )?(?:not set|unset|missing|empty)"
    ),
    re.compile(
        r"missing (?:required )?(?:environment variable|env var(?:iable)?|setting) "
        r"([A-Za-z_][A-Za-z0-9_]*)"
    ),
    re.compile(r"\b([A-Z][A-Z0-9_]{2,}) (?:must be set|is required|not provided)"),
)
_REJECTED = (
    re.compile(r'invalid value (?:"([^"]*)"|(\S*)) for ([A-Za-z_][A-Za-z0-9_]*)(?::\s*(.*))?'),
    re.compile(
        r'unsupported (?:value )?(?:"([^"]*)"|(\S*)) for ([A-Za-z_][A-Za-z0-9_]*)(?::\s*(.*))?'
    ),
)
_NO_BINARY = re.compile(
    r"exec (\S+): (?:no such file or directory|not found|permission denied)"
    r"|executable file not found|: not found\b|command not found"
)
_PANIC = re.compile(r"\b(panic|segmentation|SIGSEGV|Traceback|FATAL|fatal error|Exception)\b")
# Names under which programs usually take credentials (AIOpsLab's AuthenticationMissing).
_CREDENTIAL = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|CREDENTIAL|AUTH|USER(NAME)?)")


@dataclass(frozen=True)
class Failure:
    """One failing container of a pod, as the kubelet reports it."""

    pod: w.Obj
    container: str
    init: bool
    waiting: str  # the waiting reason ("" when running or terminated)
    exit_code: int | None  # of the last termination
    exit_reason: str
    message: str


@dataclass(frozen=True)
class Cause:
    mechanism: str
    category: Category
    summary: str
    confidence: float
    lines: tuple[str, ...] = ()  # the log lines that say so
    facts: tuple[tuple[str, Any], ...] = ()


def _failures(pod: w.Obj) -> list[Failure]:
    status = pod.get("status") or {}
    found = []
    for init, statuses in (
        (True, status.get("initContainerStatuses") or []),
        (False, status.get("containerStatuses") or []),
    ):
        for c in statuses:
            state = c.get("state") or {}
            waiting = str((state.get("waiting") or {}).get("reason") or "")
            last = (c.get("lastState") or {}).get("terminated") or state.get("terminated") or {}
            crashed = waiting in CRASH_WAITING or (
                bool(last) and int(last.get("exitCode") or 0) != 0 and not c.get("ready")
            )
            if waiting in PULL_FAILURES or waiting in CONFIG_WAITING or crashed:
                found.append(
                    Failure(
                        pod,
                        str(c.get("name")),
                        init,
                        waiting,
                        int(last["exitCode"]) if "exitCode" in last else None,
                        str(last.get("reason") or ""),
                        str(
                            (state.get("waiting") or {}).get("message") or last.get("message") or ""
                        ),
                    )
                )
    return found


def _first(
    patterns: tuple[re.Pattern[str], ...], lines: list[str]
) -> tuple[re.Match[str], str] | None:
    for line in reversed(lines):
        for pattern in patterns:
            match = pattern.search(line)
            if match:
                return match, line
    return None


def _crash_cause(failure: Failure, lines: list[str], change: w.TemplateChange | None) -> Cause:
    """Why a container crashes, from its exit and its last words."""
    if failure.exit_reason == "OOMKilled":
        return Cause(
            "oom-killed",
            Category.RESOURCES,
            "is OOMKilled: it uses more memory than its limit",
            0.9,
        )
    missing = _first(_MISSING_ENV, lines)
    if missing:
        variable = missing[0].group(1)
        category = (
            Category.AUTHENTICATION if _CREDENTIAL.search(variable) else Category.CONFIGURATION
        )
        return Cause(
            "missing-env",
            category,
            f"exits because {variable} is not set",
            0.9,
            (missing[1],),
            (("variable", variable),),
        )
    rejected = _first(_REJECTED, lines)
    if rejected:
        match = rejected[0]
        value, variable, expected = (
            match.group(1) or match.group(2) or "",
            match.group(3),
            match.group(4),
        )
        return Cause(
            "rejected-env-value",
            Category.CONFIGURATION,
            f"exits because it rejects the value of {variable} ({w.quoted(value)[:40]!r})",
            0.9,
            (rejected[1],),
            (("variable", variable), ("value", value), ("expected", expected or "")),
        )
    no_binary = next((line for line in reversed(lines) if _NO_BINARY.search(line)), None)
    if no_binary or failure.exit_code in (126, 127):
        return Cause(
            "command-not-found",
            Category.BAD_DEPLOY,
            "exits at once: its command is not in the image",
            0.9,
            (no_binary,) if no_binary else (),
        )
    panic = tuple(line for line in lines if _PANIC.search(line))[:2]
    if change is not None and "containers" in change.fields.get(failure.container, []):
        return Cause(
            "crash-loop",
            Category.BAD_DEPLOY,
            "crashes since the latest rollout added it",
            0.85,
            panic,
        )
    if change is not None and change.touches(failure.container, "image"):
        return Cause(
            "crash-after-image-change",
            Category.BAD_DEPLOY,
            "crashes since its image was changed",
            0.85,
            panic,
        )
    confidence = 0.7 if change is not None and failure.container in change.fields else 0.5
    return Cause("crash-loop", Category.BAD_DEPLOY, "crashes on start", confidence, panic)


def _cause(failure: Failure, snapshot: Snapshot, change: w.TemplateChange | None) -> Cause:
    if failure.waiting in PULL_FAILURES:
        return Cause(
            "image-pull-failed",
            Category.BAD_DEPLOY,
            "cannot pull its image",
            0.9,
            (),
            (("reason", failure.waiting),),
        )
    if failure.waiting in CONFIG_WAITING:
        return Cause(
            "missing-config-ref",
            Category.CONFIGURATION,
            f"cannot be created: {w.quoted(failure.message)[:120] or failure.waiting}",
            0.85,
            (),
            (("message", failure.message),),
        )
    current, previous = w.logs_of(snapshot, w.name_of(failure.pod), failure.container)
    lines = (previous or current).splitlines()[-10:]
    cause = _crash_cause(failure, lines, change)
    if (
        failure.init
        and not _native_sidecar(failure)
        and cause.mechanism in ("crash-loop", "crash-after-image-change")
    ):
        return Cause(
            "init-container-failing",
            cause.category,
            f"init container {failure.container} fails, so the pod never starts",
            cause.confidence,
            cause.lines,
        )
    return cause


def _native_sidecar(failure: Failure) -> bool:
    """An init container that runs beside the app (``restartPolicy: Always``): its crash
    leaves the pod unready, it does not keep the pod from starting."""
    spec = failure.pod.get("spec") or {}
    return any(
        c.get("name") == failure.container and c.get("restartPolicy") == "Always"
        for c in spec.get("initContainers") or []
    )


def _pod_events(snapshot: Snapshot, pod: str) -> list[Evidence]:
    found = []
    for event in snapshot.of("Event"):
        involved = event.get("involvedObject") or {}
        if event.get("type") == "Warning" and involved.get("name") == pod:
            found.append(
                w.evidence("event", f"pod/{pod}", f"{event.get('reason')}: {event.get('message')}")
            )
    return found[:3]


def _status_evidence(failure: Failure) -> Evidence:
    pod = w.name_of(failure.pod)
    what = failure.waiting or "terminated"
    if failure.exit_code is not None:
        what += f", last exit code {failure.exit_code}"
        if failure.exit_reason:
            what += f" ({failure.exit_reason})"
    if failure.message and failure.waiting in PULL_FAILURES | CONFIG_WAITING:
        what += f": {failure.message}"
    return w.evidence("status", f"pod/{pod}", f"container {failure.container}: {what}")


def workload_finding(
    snapshot: Snapshot,
    *,
    analyzer: str,
    workload: tuple[str, str],
    cause: Cause,
    evidence: list[Evidence],
    facts: dict[str, Any],
) -> Finding:
    """A finding on a workload whose pods fail, with the Services it leaves dark as symptoms."""
    kind, name = workload
    obj = snapshot.get(kind, name) or {}
    ready = int((obj.get("status") or {}).get("readyReplicas") or 0)
    symptoms = [
        w.key(snapshot, "Service", w.name_of(s)) for s in w.services_selecting(snapshot, obj)
    ]
    who = f"container {facts['container']}" if facts.get("container") else "its pods"
    return Finding(
        analyzer=analyzer,
        mechanism=cause.mechanism,
        category=cause.category,
        resource=w.key(snapshot, kind, name),
        symptoms=symptoms,
        summary=f"{kind.lower()}/{name}: {who} {cause.summary}",
        evidence=evidence,
        severity=3 if ready == 0 and kind in w.WORKLOAD_KINDS else 2,
        confidence=cause.confidence,
        facts={**dict(cause.facts), **facts, "workload_kind": kind, "workload": name},
    )


def change_facts(
    snapshot: Snapshot, workload: tuple[str, str]
) -> tuple[w.TemplateChange | None, list[Evidence]]:
    """The latest rollout's change of a workload, and evidence lines for it."""
    kind, name = workload
    obj = snapshot.get(kind, name)
    if kind not in w.WORKLOAD_KINDS or obj is None:
        return None, []
    change = w.latest_change(snapshot, obj)
    if change is None:
        return None, []
    cited = [
        w.evidence(
            "revision",
            f"{kind.lower()}/{name}",
            f"revision {change.previous} → {change.revision}: {line}",
        )
        for line in change.lines[:4]
    ]
    # Why an earlier revision is not the one to go back to.
    cited += [
        w.evidence("event", f"{kind.lower()}/{name}", f"revision {r} failed too: {text}")
        for r, text in sorted(change.skipped.items())
    ]
    return change, cited


# Which template fields, when the latest rollout changed them, explain each mechanism.
EXPLAINING_FIELDS = {
    "oom-killed": ("resources",),
    "missing-env": ("env", "envFrom"),
    "rejected-env-value": ("env", "envFrom"),
    "command-not-found": ("command", "args", "image"),
    "crash-after-image-change": ("image",),
    "crash-loop": tuple(w.CONTAINER_FIELDS),
    "image-pull-failed": ("image",),
    "init-container-failing": (*w.CONTAINER_FIELDS, "containers"),
    "init-container-stuck": (*w.CONTAINER_FIELDS, "containers"),
    "missing-config-ref": ("env", "envFrom", "volumeMounts"),
}


def rollback_facts(
    mechanism: str, container: str, change: w.TemplateChange | None
) -> dict[str, Any]:
    if change is None or not change.touches(container, *EXPLAINING_FIELDS.get(mechanism, ())):
        return {}
    return {"rollback_to": change.previous, "changed": change.lines[:6], **skipped_facts(change)}


def skipped_facts(change: w.TemplateChange) -> dict[str, Any]:
    """Why a rollback passes over the revisions between the current one and its target, newest
    first (issue 22: it says why it skipped the others)."""
    if not change.skipped:
        return {}
    return {
        "skipped": [
            f"revision {r}: {text}" for r, text in sorted(change.skipped.items(), reverse=True)
        ]
    }


def container_failures(snapshot: Snapshot) -> list[Finding]:
    """One finding per (workload, container, mechanism), however many pods show it."""
    grouped: dict[tuple[str, str, str, str], tuple[Failure, Cause, list[Evidence], int]] = {}
    jobs: dict[tuple[str, str, str, str], set[str]] = {}
    for pod in snapshot.pods:
        workload = w.workload_of(snapshot, pod)
        if workload is None or workload[0] not in (*w.WORKLOAD_KINDS, *w.JOB_KINDS):
            continue  # a bare pod has no template to fix; deleting it loses it
        change, _ = change_facts(snapshot, workload)
        for failure in _failures(pod):
            if workload[0] in w.JOB_KINDS and not _stuck_now(failure):
                continue  # a run that failed and ended is history; its next run is not
            cause = _cause(failure, snapshot, change)
            group = (*workload, failure.container, cause.mechanism)
            job = w.controller_of(pod)
            if job is not None and job[0] == "Job":
                jobs.setdefault(group, set()).add(job[1])
            if group in grouped:
                first = grouped[group]
                grouped[group] = (first[0], first[1], first[2], first[3] + 1)
                continue
            pod_name = w.name_of(pod)
            evidence = [_status_evidence(failure)]
            evidence += [w.evidence("log", f"pod/{pod_name}", line) for line in cause.lines]
            evidence += _pod_events(snapshot, pod_name)
            grouped[group] = (failure, cause, evidence, 1)
    findings = []
    for (kind, name, container, mechanism), (failure, cause, evidence, count) in sorted(
        grouped.items()
    ):
        change, change_evidence = change_facts(snapshot, (kind, name))
        facts: dict[str, Any] = {"container": container, "init": failure.init, "pods": count}
        facts.update(rollback_facts(mechanism, container, change))
        if kind in w.JOB_KINDS:
            facts["jobs"] = sorted(jobs.get((kind, name, container, mechanism), set()))
        cited = [*evidence, *change_evidence] if "rollback_to" in facts else evidence
        findings.append(
            workload_finding(
                snapshot,
                analyzer=ANALYZER,
                workload=(kind, name),
                cause=cause,
                evidence=cited,
                facts=facts,
            )
        )
    return [_traced(f, snapshot) for f in findings]


def _stuck_now(failure: Failure) -> bool:
    """A Job's pod that is still trying (pulling, crash-looping), not one that ended."""
    phase = (failure.pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and (
        failure.waiting in PULL_FAILURES | CRASH_WAITING | CONFIG_WAITING
    )


def _traced(finding: Finding, snapshot: Snapshot) -> Finding:
    """A rejected value comes from somewhere: when it is a ConfigMap key, the ConfigMap is
    what to fix (the workload's template is fine)."""
    if finding.mechanism != "rejected-env-value" or "rollback_to" in finding.facts:
        return finding
    obj = snapshot.get(finding.facts["workload_kind"], finding.facts["workload"]) or {}
    source = env_source(
        obj, finding.facts["container"], finding.facts["variable"], bool(finding.facts.get("init"))
    )
    if source is None or source[0] != "ConfigMap":
        return finding
    _, configmap, cm_key = source
    return finding.model_copy(
        update={
            "mechanism": "rejected-config-value",
            "resource": w.key(snapshot, "ConfigMap", configmap),
            "symptoms": [finding.resource, *finding.symptoms],
            "summary": f"configmap/{configmap} key {cm_key} holds a value "
            f"{finding.resource} rejects as {finding.facts['variable']}",
            "facts": {**finding.facts, "configmap": configmap, "key": cm_key},
        }
    )


def env_source(
    workload: w.Obj, container: str, variable: str, init: bool
) -> tuple[str, str, str] | None:
    """Where a container's variable comes from: ("literal", "", ""), ("ConfigMap", name, key),
    ("Secret", name, key), or None when the template does not say."""
    spec = w.container_named(w.template_of(workload), container, init=init) or {}
    for entry in spec.get("env") or []:
        if entry.get("name") != variable:
            continue
        ref = entry.get("valueFrom") or {}
        if "configMapKeyRef" in ref:
            return (
                "ConfigMap",
                str(ref["configMapKeyRef"].get("name")),
                str(ref["configMapKeyRef"].get("key")),
            )
        if "secretKeyRef" in ref:
            return (
                "Secret",
                str(ref["secretKeyRef"].get("name")),
                str(ref["secretKeyRef"].get("key")),
            )
        return ("literal", "", "")
    for source in spec.get("envFrom") or []:
        ref = source.get("configMapRef")
        if ref:
            return (
                "ConfigMap",
                str(ref.get("name")),
                variable[len(str(source.get("prefix") or "")) :],
            )
    return None


ANALYZERS = [container_failures]
