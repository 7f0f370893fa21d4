"""Health checks that check the wrong thing: readiness or liveness probes on a port the
container does not serve, or an HTTP path it answers with 404.

A probe failing is not enough (a slow start fails probes too): the probe's port must be one the
container does not declare (or the kubelet must report the path missing), and the kubelet must
be saying so in Unhealthy events for that container.
"""

from __future__ import annotations

import re
from typing import Any

from agents.analyzers import _workloads as w
from agents.analyzers.pods import Cause, change_facts, workload_finding
from agents.model import Category, Evidence, Finding
from agents.snapshot import Snapshot

ANALYZER = "probes"
PROBES = ("readinessProbe", "livenessProbe", "startupProbe")
_WORDING = {"readinessProbe": "Readiness", "livenessProbe": "Liveness", "startupProbe": "Startup"}
_CONTAINER_PATH = re.compile(r"spec\.containers\{([^}]*)\}")


def _unhealthy(snapshot: Snapshot, pods: set[str]) -> dict[tuple[str, str], list[w.Obj]]:
    """Unhealthy events of ``pods`` by (container, probe field)."""
    found: dict[tuple[str, str], list[w.Obj]] = {}
    for event in snapshot.of("Event"):
        involved = event.get("involvedObject") or {}
        if event.get("reason") != "Unhealthy" or involved.get("name") not in pods:
            continue
        match = _CONTAINER_PATH.search(str(involved.get("fieldPath") or ""))
        container = match.group(1) if match else ""
        message = str(event.get("message") or "")
        for probe, word in _WORDING.items():
            if message.startswith(f"{word} probe failed"):
                found.setdefault((container, probe), []).append(event)
    return found


def _unwell(pod: w.Obj) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return any(not c.get("ready") or int(c.get("restartCount") or 0) > 0 for c in statuses)


def _port(probe: w.Obj) -> Any:
    action = probe.get("httpGet") or probe.get("tcpSocket") or probe.get("grpc") or {}
    return action.get("port")


def _served_ports(container: w.Obj) -> dict[Any, int]:
    """Declared ports by number and by name."""
    ports: dict[Any, int] = {}
    for port in container.get("ports") or []:
        number = int(port.get("containerPort") or 0)
        ports[number] = number
        if port.get("name"):
            ports[port["name"]] = number
    return ports


def _cause(container: w.Obj, probe_field: str, events: list[w.Obj]) -> Cause | None:
    probe = container.get(probe_field) or {}
    port = _port(probe)
    served = _served_ports(container)
    messages = " ".join(str(e.get("message") or "") for e in events)
    word = _WORDING[probe_field].lower()
    if "statuscode: 404" in messages and "httpGet" in probe:
        path = probe["httpGet"].get("path", "/")
        return Cause(
            "probe-wrong-path",
            Category.HEALTH_CHECK,
            f"{word} probe asks for {path}, which it answers with 404",
            0.85,
            facts=(("probe", probe_field), ("path", path)),
        )
    refused = "refused" in messages or "no such" in messages
    if served and port is not None and port not in served and refused:
        return Cause(
            "probe-wrong-port",
            Category.HEALTH_CHECK,
            f"{word} probe checks port {port}, which it does not serve "
            f"(it serves {', '.join(str(p) for p in sorted(set(served.values())))})",
            0.9,
            facts=(
                ("probe", probe_field),
                ("port", port),
                ("serves", sorted(set(served.values()))),
            ),
        )
    return None


def wrong_probes(snapshot: Snapshot) -> list[Finding]:
    findings = []
    for kind in w.WORKLOAD_KINDS:
        for workload in snapshot.of(kind):
            name = w.name_of(workload)
            # Only pods that are unwell now: a probe that failed once during a start is history.
            pods = {w.name_of(p) for p in w.pods_of(snapshot, kind, name) if _unwell(p)}
            for (container_name, probe_field), events in sorted(_unhealthy(snapshot, pods).items()):
                finding = _finding(
                    snapshot, (kind, name), workload, container_name, probe_field, events
                )
                if finding is not None:
                    findings.append(finding)
    return findings


def _finding(
    snapshot: Snapshot,
    workload: tuple[str, str],
    obj: w.Obj,
    container_name: str,
    probe_field: str,
    events: list[w.Obj],
) -> Finding | None:
    template = w.template_of(obj)
    containers = w.containers_of(template)
    container = w.container_named(template, container_name) or (
        containers[0] if len(containers) == 1 else None
    )
    if container is None:
        return None
    cause = _cause(container, probe_field, events)
    if cause is None:
        return None
    cname = str(container.get("name"))
    change, change_evidence = change_facts(snapshot, workload)
    facts: dict[str, Any] = {"container": cname}
    evidence: list[Evidence] = [
        w.evidence(
            "event", f"pod/{(e.get('involvedObject') or {}).get('name')}", str(e.get("message"))
        )
        for e in events[:2]
    ]
    evidence.append(
        w.evidence(
            "spec",
            f"{workload[0].lower()}/{workload[1]}",
            f"{probe_field}: {_short_probe(container[probe_field])}",
        )
    )
    if change is not None and change.touches(cname, probe_field):
        facts.update({"rollback_to": change.previous, "changed": change.lines[:6]})
        evidence += change_evidence
    return workload_finding(
        snapshot, analyzer=ANALYZER, workload=workload, cause=cause, evidence=evidence, facts=facts
    )


def _short_probe(probe: w.Obj) -> str:
    kept = {k: v for k, v in probe.items() if k in ("httpGet", "tcpSocket", "grpc", "exec")}
    return str(kept)


ANALYZERS = [wrong_probes]
