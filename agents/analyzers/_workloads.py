"""Reading workloads out of a snapshot: owners, revisions, what a rollout changed, what was
last applied, and who calls whom according to the callers' own logs.

The workload and pod analyzers and their remedies share these pure helpers (this module has no
``ANALYZERS`` of its own). Everything here works on the objects as the API returned them, so
it applies to any app, not just the lab's sample apps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agents import changes
from agents.model import Evidence, ResourceKey
from agents.snapshot import LAST_APPLIED, Snapshot

Obj = dict[str, Any]
REVISION = "deployment.kubernetes.io/revision"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
HASH_LABEL = "pod-template-hash"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
# Workloads that run to completion: a CronJob (what a person fixes: it makes the Jobs) and a
# Job nobody schedules.
JOB_KINDS = ("CronJob", "Job")
TEXT_LIMIT = 300  # evidence is quoted, and quoted text is bounded
# Container fields whose change in a rollout can break a pod, in the words the diff uses.
CONTAINER_FIELDS = (
    "image",
    "command",
    "args",
    "env",
    "envFrom",
    "resources",
    "ports",
    "readinessProbe",
    "livenessProbe",
    "startupProbe",
    "volumeMounts",
)
POD_FIELDS = ("nodeSelector", "affinity", "tolerations", "volumes", "serviceAccountName")


def name_of(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def quoted(text: str) -> str:
    """Telemetry is quoted as read, on one line and bounded."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= TEXT_LIMIT else flat[: TEXT_LIMIT - 1] + "…"


def evidence(source: str, ref: str, text: str) -> Evidence:
    return Evidence(source=source, ref=ref, text=quoted(text))


def key(snapshot: Snapshot, kind: str, name: str) -> ResourceKey:
    namespace = "" if kind in ("Node", "StorageClass") else snapshot.namespace
    return ResourceKey(kind=kind, name=name, namespace=namespace)


_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9}


def quantity(text: Any) -> float:
    """A Kubernetes quantity (``100m``, ``2``, ``256Mi``) as a number."""
    value = str(text).strip()
    if value.endswith("m"):
        return float(value[:-1]) / 1000 if value[:-1].replace(".", "", 1).isdigit() else 0.0
    for suffix, factor in sorted(_UNITS.items(), key=lambda item: -len(item[0])):
        if value.endswith(suffix):
            try:
                return float(value[: -len(suffix)]) * factor
            except ValueError:
                return 0.0
    try:
        return float(value)
    except ValueError:
        return 0.0


# ------------------------------------------------------------------ ownership


def controller_of(obj: Obj) -> tuple[str, str] | None:
    owners = obj["metadata"].get("ownerReferences") or []
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    return (str(owner.get("kind")), str(owner.get("name"))) if owner else None


def workload_of(snapshot: Snapshot, pod: Obj) -> tuple[str, str] | None:
    """The workload a pod belongs to: a ReplicaSet's pods belong to its Deployment, a Job's
    to the CronJob that made it."""
    owner = controller_of(pod)
    if owner is None:
        return None
    kind, name = owner
    if kind in ("ReplicaSet", "Job"):
        made_by = snapshot.get(kind, name)
        parent = controller_of(made_by) if made_by else None
        wanted = "Deployment" if kind == "ReplicaSet" else "CronJob"
        return parent if parent and parent[0] == wanted else owner
    return owner


def pods_of(snapshot: Snapshot, kind: str, name: str) -> list[Obj]:
    return [p for p in snapshot.pods if workload_of(snapshot, p) == (kind, name)]


def desired_replicas(workload: Obj) -> int:
    """The pods a Deployment or StatefulSet asks for: ``spec.replicas``, whose default when it
    is absent or null is one."""
    replicas = (workload.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


def template_of(workload: Obj) -> Obj:
    """The pod template (a CronJob's sits in its job template)."""
    spec = workload.get("spec") or {}
    if "jobTemplate" in spec:
        spec = (spec["jobTemplate"] or {}).get("spec") or {}
    template: Obj = spec.get("template") or {}
    return template


def containers_of(template: Obj, *, init: bool = False) -> list[Obj]:
    spec = template.get("spec") or {}
    found: list[Obj] = spec.get("initContainers" if init else "containers") or []
    return found


def container_named(template: Obj, name: str, *, init: bool = False) -> Obj | None:
    return next((c for c in containers_of(template, init=init) if c.get("name") == name), None)


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def services_selecting(snapshot: Snapshot, workload: Obj) -> list[Obj]:
    labels = (template_of(workload).get("metadata") or {}).get("labels") or {}
    return [
        s
        for s in snapshot.of("Service")
        if matches(dict((s.get("spec") or {}).get("selector") or {}), labels)
    ]


# ------------------------------------------------------------------ last applied


def last_applied(obj: Obj) -> Obj | None:
    """The object as ``kubectl apply`` last wrote it (what a later patch drifted from)."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    if not text:
        return None
    try:
        applied = json.loads(text)
    except ValueError:
        return None
    return applied if isinstance(applied, dict) else None


def applied_container(workload: Obj, name: str, *, init: bool = False) -> Obj | None:
    applied = last_applied(workload)
    if applied is None:
        return None
    return container_named(template_of(applied), name, init=init)


# ------------------------------------------------------------------ rollout revisions


@dataclass(frozen=True)
class TemplateChange:
    """What the latest rollout of a Deployment changed against the revision before it."""

    deployment: str
    revision: int
    previous: int
    # container name → changed fields; "" holds pod-level fields (nodeSelector …)
    fields: dict[str, list[str]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # "container geo: image a → b"
    # Revisions between ``previous`` and ``revision`` passed over because their pods failed
    # (revision → the Warning event that says so).
    skipped: dict[int, str] = field(default_factory=dict)

    def touches(self, container: str, *names: str) -> bool:
        changed = self.fields.get(container, [])
        # A container the rollout added (an init container, a sidecar) is new in every field:
        # whatever fails in it, the rollout brought it.
        return "containers" in changed or any(n in changed for n in names)

    def touches_pod(self, *names: str) -> bool:
        return any(n in self.fields.get("", []) for n in names)


def revisions(snapshot: Snapshot, workload: Obj) -> dict[int, Obj]:
    """A workload's pod templates by revision number: a Deployment's ReplicaSets, or a
    StatefulSet's or DaemonSet's ControllerRevisions (as ``{"metadata", "spec": {"template"}}``
    so that ``template_of`` reads both alike)."""
    uid = workload["metadata"].get("uid")
    found: dict[int, Obj] = {}
    for replica_set in snapshot.of("ReplicaSet"):
        owners = replica_set["metadata"].get("ownerReferences") or []
        if not any(o.get("uid") == uid for o in owners):
            continue
        annotations = replica_set["metadata"].get("annotations") or {}
        try:
            found[int(annotations.get(REVISION, "0"))] = replica_set
        except ValueError:
            continue
    for history in snapshot.of("ControllerRevision"):
        owners = history["metadata"].get("ownerReferences") or []
        if not any(o.get("uid") == uid for o in owners):
            continue
        template = dict(((history.get("data") or {}).get("spec") or {}).get("template") or {})
        template.pop("$patch", None)  # the data is a patch that replaces the template
        try:
            found[int(history.get("revision") or 0)] = {
                "metadata": history["metadata"],
                "spec": {"template": template},
            }
        except (TypeError, ValueError):
            continue
    return found


def current_revision(workload: Obj, found: dict[int, Obj]) -> int:
    """The revision a workload's template is now: a Deployment says so in an annotation; a
    ControllerRevision whose template comes back is renumbered past the others, so for a
    StatefulSet or DaemonSet it is the newest."""
    annotations = workload["metadata"].get("annotations") or {}
    if REVISION in annotations:
        try:
            return int(annotations[REVISION])
        except ValueError:
            return 0
    return max(found, default=0)


def _comparable(template: Obj) -> Obj:
    """A template without what every rollout changes (the hash label, a restart stamp)."""
    metadata = dict(template.get("metadata") or {})
    metadata["labels"] = {
        k: v for k, v in (metadata.get("labels") or {}).items() if k != HASH_LABEL
    }
    metadata["annotations"] = {
        k: v for k, v in (metadata.get("annotations") or {}).items() if k != RESTARTED_AT
    }
    return {**template, "metadata": metadata}


def _container_lines(name: str, before: Obj | None, after: Obj | None) -> list[tuple[str, str]]:
    if before is None or after is None:
        return [("containers", f"container {name} {'added' if before is None else 'removed'}")]
    changed = []
    for field_name in CONTAINER_FIELDS:
        old, new = before.get(field_name), after.get(field_name)
        if old != new:
            said = "; ".join(changes.field_changes(field_name, old, new)) or field_name
            changed.append((field_name, f"container {name}: {said}"))
    return changed


def compare_templates(
    name: str, old: Obj, new: Obj, revision: int, previous: int
) -> TemplateChange:
    old, new = _comparable(old), _comparable(new)
    fields: dict[str, list[str]] = {}
    lines: list[str] = []
    for init in (False, True):
        names = {c.get("name") for c in containers_of(old, init=init)} | {
            c.get("name") for c in containers_of(new, init=init)
        }
        for cname in sorted(str(n) for n in names):
            for field_name, line in _container_lines(
                cname,
                container_named(old, cname, init=init),
                container_named(new, cname, init=init),
            ):
                fields.setdefault(cname, []).append(field_name)
                lines.append(("init " if init else "") + line)
    for field_name in POD_FIELDS:
        before = (old.get("spec") or {}).get(field_name)
        after = (new.get("spec") or {}).get(field_name)
        if before != after:
            fields.setdefault("", []).append(field_name)
            said = "; ".join(changes.field_changes(field_name, before, after)) or field_name
            lines.append(f"pod: {said}")
    return TemplateChange(name, revision, previous, fields, lines)


# Warning reasons that say a revision's pods did not run (not a probe hiccup during a start).
FAILED_POD_REASONS = {"BackOff", "Failed", "FailedCreatePodSandBox", "InspectFailed"}
# A readiness probe failing this many times on one pod is its steady state, not a start's
# hiccup: the revision's pods ran but never served.
READINESS_FAILURES = 3


def _revision_failure(event: Obj) -> str | None:
    """What a Warning event on a pod says of its revision ("crash-looping", "readiness
    failing"), or None when it says nothing against it."""
    reason = event.get("reason")
    if reason in FAILED_POD_REASONS:
        return "its pods failed to run"
    message = str(event.get("message") or "")
    if (
        reason == "Unhealthy"
        and message.startswith("Readiness probe failed")
        and int(event.get("count") or 1) >= READINESS_FAILURES
    ):
        return "its pods' readiness kept failing"
    return None


def failed_revisions(snapshot: Snapshot, found: dict[int, Obj]) -> dict[int, str]:
    """Revisions whose pods were seen failing, from the events they left behind (events
    outlive the pods of a ReplicaSet that was scaled down; pod names start with its name):
    pods that crash-looped or could not start, or whose readiness kept failing — and from
    what the incident saw itself (``Snapshot.seen_failing``: its pods failed while an attempt
    ran). Each says why, with what it rests on (issue 22: the planner says why it skipped a
    revision)."""
    failed: dict[int, str] = {}
    for revision, replica_set in found.items():
        prefix = name_of(replica_set) + "-"
        seen = next((p for p in sorted(snapshot.seen_failing) if p.startswith(prefix)), None)
        if seen is not None:
            failed[revision] = snapshot.seen_failing[seen]
            continue
        for event in snapshot.of("Event"):
            involved = event.get("involvedObject") or {}
            if involved.get("kind") != "Pod" or not str(involved.get("name", "")).startswith(
                prefix
            ):
                continue
            why = _revision_failure(event)
            if why is not None:
                failed[revision] = (
                    f"{why} (pod/{involved.get('name')}: {event.get('reason')}: "
                    f"{event.get('message')})"
                )
                break
    return failed


def latest_change(snapshot: Snapshot, deployment: Obj) -> TemplateChange | None:
    """What the workload's current template changed against the newest earlier revision
    whose pods were not seen failing, or None when there is none or only a restart stamp
    differs."""
    found = revisions(snapshot, deployment)
    current = current_revision(deployment, found)
    failed = failed_revisions(snapshot, {r: rs for r, rs in found.items() if r < current})
    good = [r for r in found if r < current and r not in failed]
    if not good:
        return None
    previous = max(good)
    change = compare_templates(
        name_of(deployment),
        template_of(found[previous]),
        template_of(deployment),
        current,
        previous,
    )
    skipped = {r: text for r, text in failed.items() if r > previous}
    if not change.lines:
        return None
    return TemplateChange(
        change.deployment, current, previous, change.fields, change.lines, skipped
    )


def previous_template(snapshot: Snapshot, deployment: Obj, change: TemplateChange) -> Obj:
    return template_of(revisions(snapshot, deployment)[change.previous])


# ------------------------------------------------------------------ logs of callers

# "request to geo:8083 failed: upstream mongodb-geo failed: …" (and the usual client wordings)
_REQUEST = re.compile(
    r"(?:request to|dial tcp|connect to|calling|GET|POST|call to)\s+"
    r"(?:https?://)?([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?:\.[-a-z0-9.]+)?(?::\d+)?",
)
_UPSTREAM = re.compile(r"upstream ([a-z0-9]([-a-z0-9]*[a-z0-9])?) failed")
_ERRORISH = re.compile(r"\b(ERROR|FATAL|error|failed|refused|timed? ?out|unavailable)\b")


@dataclass(frozen=True)
class CallError:
    """One error line in a caller's log naming the service it called."""

    caller: str  # "pod/name/container" as the snapshot keys logs
    callee: str  # the Service the caller called directly
    chain: tuple[str, ...]  # services named further upstream in the same line, in order
    line: str


def error_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if _ERRORISH.search(line)]


def call_errors(snapshot: Snapshot, services: Iterable[str] | None = None) -> list[CallError]:
    """Error lines in the current logs that name a Service of the namespace as the callee."""
    known = set(services) if services is not None else {name_of(s) for s in snapshot.of("Service")}
    found: list[CallError] = []
    for source, text in sorted(snapshot.logs.items()):
        for line in error_lines(text):
            match = _REQUEST.search(line)
            if not match or match.group(1) not in known:
                continue
            chain = tuple(m.group(1) for m in _UPSTREAM.finditer(line) if m.group(1) in known)
            found.append(CallError(source, match.group(1), chain, line.strip()))
    return found


def pod_of_log(source: str) -> str:
    """ "pod/NAME/container" → NAME."""
    parts = source.split("/")
    return parts[1] if len(parts) > 2 else source


def log_ref(source: str) -> str:
    return "/".join(source.split("/")[:2])


def logs_of(snapshot: Snapshot, pod: str, container: str) -> tuple[str, str]:
    """(current, previous) log tail of a container."""
    ref = f"pod/{pod}/{container}"
    return snapshot.logs.get(ref, ""), snapshot.previous_logs.get(ref, "")
