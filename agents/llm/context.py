"""The telemetry context a model starts from, within a fixed token budget.

What the analyzers found and what the offline planner would do come first (the cheapest and
densest context), then what is unwell in the namespace: workloads below their desired
replicas, unready pods *grouped by owner* (so a thousand crash-looping pods are one line with a
count), services without ready endpoints, warning events deduplicated by shape, and the error
lines of the logs the snapshot read. Healthy objects are counted, not listed.

The whole context is rendered with generous caps, and the caps are halved until it fits the
budget (``budget.CONTEXT_TOKENS``, counted with the real tokenizer); as a last resort it is
cut. So its size does not grow with the namespace.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from agents.analyzers import _workloads as w
from agents.llm import budget
from agents.llm.telemetry import CLOSE, fence, line, looks_like_instruction
from agents.model import PlanResult
from agents.planner import PlanRequest
from agents.snapshot import Snapshot

_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_VOLATILE = re.compile(r"\b[0-9a-f]{5,10}(-[0-9a-z]{5})?\b|\d+")
_ERROR = re.compile(
    r"\b(ERROR|FATAL|PANIC|panic|Exception|Traceback|error|failed|refused|denied|invalid|"
    r"timeout|unauthorized|forbidden)\b",
    re.IGNORECASE,
)
_SKIP_ANNOTATIONS = ("kubectl.kubernetes.io/", "deployment.kubernetes.io/")
CAPS = (12, 8, 5, 3, 2, 1)


@dataclass
class Context:
    text: str
    tokens: int
    flagged: list[str] = field(default_factory=list)  # where text addressed the agent


def _owner_names(snap: Snapshot) -> dict[str, str]:
    """ReplicaSet name → its Deployment (a pod's owner is shown as the workload)."""
    owners = {}
    for rs in snap.of("ReplicaSet"):
        refs = rs["metadata"].get("ownerReferences") or []
        if refs:
            owners[rs["metadata"]["name"]] = f"{refs[0]['kind'].lower()}/{refs[0]['name']}"
    return owners


def _pod_owner(pod: dict[str, Any], owners: dict[str, str]) -> str:
    refs = pod["metadata"].get("ownerReferences") or []
    if not refs:
        return f"pod/{pod['metadata']['name']}"
    name = str(refs[0].get("name"))
    return owners.get(name, f"{str(refs[0].get('kind')).lower()}/{name}")


def _pod_problem(pod: dict[str, Any]) -> str | None:
    status = pod.get("status") or {}
    if status.get("phase") == "Succeeded":
        return None
    for c in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        state = c.get("state") or {}
        waiting = state.get("waiting") or {}
        terminated = (c.get("lastState") or {}).get("terminated") or {}
        if waiting.get("reason"):
            why = str(waiting["reason"])
            if terminated.get("reason"):
                why += f" (last exit {terminated.get('exitCode')}: {terminated['reason']})"
            return f"{c.get('name')}: {why}"
        if not c.get("ready") and "terminated" in state:
            return f"{c.get('name')}: terminated {state['terminated'].get('reason')}"
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    scheduled = conditions.get("PodScheduled") or {}
    if scheduled.get("status") == "False":
        return f"unschedulable: {scheduled.get('message', '')}"
    if (conditions.get("Ready") or {}).get("status") != "True":
        return f"not ready ({status.get('phase', 'Unknown')})"
    return None


def unwell(snap: Snapshot) -> bool:
    """Whether anything in the namespace is visibly unwell (pods or workloads)."""
    if any(_pod_problem(p) for p in snap.pods):
        return True
    return any(_workload_gap(w) for kind in ("Deployment", "StatefulSet") for w in snap.of(kind))


def _workload_gap(obj: dict[str, Any]) -> bool:
    desired = w.desired_replicas(obj)
    return int((obj.get("status") or {}).get("readyReplicas") or 0) < desired


class _Sections:
    """The context's records, by section, most important first within each."""

    def __init__(self, request: PlanRequest) -> None:
        self.request = request
        snap = request.snapshot
        self.snap = snap
        self.findings = [
            {
                "mechanism": f.mechanism,
                "category": str(f.category),
                "resource": str(f.resource),
                "summary": f.summary,
                "confidence": f.confidence,
                "severity": f.severity,
                "symptoms": [str(s) for s in f.symptoms[:4]],
                "evidence": [f"{e.source} {e.ref}: {e.text}" for e in f.evidence[:3]],
            }
            for f in request.findings
        ]
        self.offline = _offline(request.offline)
        self.workloads = self._workloads()
        self.pods = self._pods()
        self.services = self._services()
        self.events = self._events()
        self.logs = self._logs()
        self.person = [
            *([{"question": request.question}] if request.question else []),
            *({"already_tried": key} for key in request.tried),
            *({"rejected_by_a_person": key, "reason": why} for key, why in request.rejected),
            *({"past_incident": h} for h in request.history),
        ]

    def _workloads(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        healthy = 0
        for kind in ("Deployment", "StatefulSet", "DaemonSet"):
            for obj in self.snap.of(kind):
                spec, status = obj.get("spec") or {}, obj.get("status") or {}
                if kind == "DaemonSet":
                    desired = int(status.get("desiredNumberScheduled") or 0)
                    ready = int(status.get("numberReady") or 0)
                else:
                    desired = w.desired_replicas(obj)
                    ready = int(status.get("readyReplicas") or 0)
                if ready >= desired and not spec.get("paused"):
                    healthy += 1
                    continue
                annotations = {
                    k: v
                    for k, v in (obj["metadata"].get("annotations") or {}).items()
                    if not k.startswith(_SKIP_ANNOTATIONS)
                }
                record: dict[str, Any] = {
                    "workload": f"{kind.lower()}/{obj['metadata']['name']}",
                    "desired": desired,
                    "ready": ready,
                    "images": [
                        c.get("image")
                        for c in ((spec.get("template") or {}).get("spec") or {}).get("containers")
                        or []
                    ],
                }
                if spec.get("paused"):
                    record["paused"] = True
                if annotations:
                    record["annotations"] = dict(list(annotations.items())[:3])
                records.append(record)
        records.append({"healthy_workloads_not_listed": healthy})
        return records

    def _pods(self) -> list[dict[str, Any]]:
        owners = _owner_names(self.snap)
        groups: dict[str, Counter[str]] = defaultdict(Counter)
        examples: dict[str, str] = {}
        ready = 0
        for pod in self.snap.pods:
            problem = _pod_problem(pod)
            if problem is None:
                ready += 1
                continue
            owner = _pod_owner(pod, owners)
            groups[owner][problem] += 1
            examples.setdefault(owner, pod["metadata"]["name"])
        records: list[dict[str, Any]] = [
            {
                "owner": owner,
                "unwell_pods": sum(problems.values()),
                "example_pod": examples[owner],
                "problems": dict(problems.most_common(3)),
            }
            for owner, problems in sorted(groups.items(), key=lambda g: -sum(g[1].values()))
        ]
        records.append({"well_pods_not_listed": ready})
        return records

    def _services(self) -> list[dict[str, Any]]:
        endpoints = {e["metadata"]["name"]: e for e in self.snap.of("Endpoints")}
        records = []
        for svc in self.snap.of("Service"):
            name = svc["metadata"]["name"]
            subsets = (endpoints.get(name) or {}).get("subsets") or []
            if sum(len(s.get("addresses") or []) for s in subsets):
                continue
            spec = svc.get("spec") or {}
            if not spec.get("selector"):
                continue
            records.append(
                {
                    "service_without_ready_endpoints": name,
                    "selector": spec.get("selector"),
                    "ports": [
                        f"{p.get('port')}->{p.get('targetPort', p.get('port'))}"
                        for p in spec.get("ports") or []
                    ][:3],
                }
            )
        return records

    def _events(self) -> list[dict[str, Any]]:
        """Warnings grouped by reason, the involved object's owner and the message's shape
        (object names, uids and numbers taken out), so a thousand pods' back-offs are one."""
        owners = _owner_names(self.snap)
        pods = {p["metadata"]["name"]: p for p in self.snap.pods}
        grouped: dict[tuple[str, str, str], dict[str, Any]] = {}
        for event in self.snap.of("Event"):
            if event.get("type") != "Warning":
                continue
            involved = event.get("involvedObject") or {}
            name = str(involved.get("name", ""))
            obj = f"{str(involved.get('kind', '')).lower()}/{name}"
            pod = pods.get(name) if involved.get("kind") == "Pod" else None
            owner = _pod_owner(pod, owners) if pod else obj
            message = str(event.get("message", ""))
            shape = _VOLATILE.sub("#", _UID.sub("#", message.replace(name, "{object}")))
            key = (str(event.get("reason", "")), owner, shape)
            entry = grouped.setdefault(
                key,
                {"warning": key[0], "object": obj, "message": message, "count": 0, "objects": 0},
            )
            if owner != obj:
                entry["owner"] = owner
            entry["count"] += int(event.get("count") or 1)
            entry["objects"] += 1
        return sorted(grouped.values(), key=lambda e: (-int(e["objects"]), -int(e["count"])))

    def _logs(self) -> list[dict[str, Any]]:
        owners = _owner_names(self.snap)
        pods = {p["metadata"]["name"]: p for p in self.snap.pods}
        seen: set[str] = set()
        records = []
        for source, tails in (("previous run", self.snap.previous_logs), ("log", self.snap.logs)):
            for key, text in sorted(tails.items()):
                _, pod_name, container = [*key.split("/", 2), "", ""][:3]
                pod = pods.get(pod_name)
                owner = _pod_owner(pod, owners) if pod else f"pod/{pod_name}"
                errors = [x for x in text.splitlines() if _ERROR.search(x)]
                for error in errors[-3:]:
                    shape = owner + _VOLATILE.sub("#", error.split(" ", 1)[-1])
                    if shape in seen:
                        continue
                    seen.add(shape)
                    records.append(
                        {"from": f"{source} of {owner} ({container})", "line": error.strip()}
                    )
        return records

    def render(self, cap: int) -> str:
        def block(label: str, records: list[dict[str, Any]], limit: int) -> str:
            shown = records[:limit]
            lines = [line(r) for r in shown]
            if len(records) > limit:
                lines.append(line({"more_not_shown": len(records) - limit}))
            return fence(label, lines or [line({"none": True})])

        parts = [
            f"Namespace under investigation: {self.snap.namespace}",
            block("findings of the rule-based analyzers", self.findings, cap),
            block("what the offline planner would do", self.offline, cap),
            block("workloads below their desired replicas", self.workloads, cap + 1),
            block("unwell pods grouped by owner", self.pods, cap + 1),
            block("services without ready endpoints", self.services, cap),
            block("warning events, deduplicated", self.events, cap),
            block("error lines from container logs", self.logs, cap),
        ]
        if self.person:
            parts.append(block("what the people in the incident said", self.person, cap * 2))
        return "\n".join(parts)

    def flagged(self) -> list[str]:
        found = []
        for record in (*self.workloads, *self.events, *self.logs, *self.findings):
            text = " ".join(str(v) for v in record.values())
            if looks_like_instruction(text):
                where = record.get("workload") or record.get("object") or record.get("from")
                found.append(str(where or record.get("resource", "telemetry")))
        return sorted(set(found))


def _offline(result: PlanResult) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    if result.diagnosis is not None:
        d = result.diagnosis
        records.append(
            {
                "diagnosis": f"{d.resource} ({d.category}, {d.mechanism})",
                "summary": d.summary,
            }
        )
    for rank, candidate in enumerate(result.candidates, 1):
        records.append({"rank": rank, "candidate": candidate.key(), "intent": candidate.intent})
    return records


def build(request: PlanRequest, *, model: str = "", limit: int = budget.CONTEXT_TOKENS) -> Context:
    """The telemetry context for ``request``, at most ``limit`` tokens."""
    sections = _Sections(request)
    text = ""
    for cap in CAPS:
        text = sections.render(cap)
        tokens = budget.count(text, model)
        if tokens <= limit:
            return Context(text, tokens, sections.flagged())
    text = budget.truncate(text, limit - 20, model) + "\n" + CLOSE
    return Context(text, budget.count(text, model), sections.flagged())
