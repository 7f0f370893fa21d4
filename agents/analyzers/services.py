"""Services that do not lead to their pods: a targetPort nothing listens on, a selector that
matches no pod template (while a workload with similar labels exists), and a Service callers
need that does not exist (while a workload whose pods serve that name does).

A Service is judged against what its pods are *seen* to serve — containerPorts, probe ports,
"listening on :N" in their logs — and a finding needs a witness besides the mismatch: callers
failing to reach it, or a drift from the configuration last applied with kubectl. A Service
that looks odd but that nobody fails to use is left alone.

Facts set:
- ``service-target-port``: ``port_index``, ``target_port`` (as it is), ``suggested`` (the
  port to target instead, when one can be told).
- ``service-selector``: ``selector`` (as it is), ``suggested`` (a selector that matches the
  workload's pods), ``workload`` ("Kind/name").
- ``service-missing``: ``workload`` ("Kind/name"), ``selector``, ``ports`` (list of
  ``{name, port, target_port}``), ``labels``.
"""

from __future__ import annotations

import difflib
from typing import Any

from agents.analyzers import _net as n
from agents.analyzers import _workloads as w
from agents.model import Category, Evidence, Finding
from agents.snapshot import Snapshot

NAME = "services"
SIMILAR = 0.6  # how alike two label values must be to call a workload "the one meant"


def _callers_failing(snapshot: Snapshot, service: str, kinds: tuple[str, ...]) -> list[n.Call]:
    return [c for c in n.calls(snapshot) if c.host == service and c.failed and c.kind in kinds]


def _caller_evidence(found: list[n.Call], limit: int = 3) -> list[Evidence]:
    return [w.evidence("log", w.log_ref(c.caller), c.line) for c in found[:limit]]


# ------------------------------------------------------------------ targetPort


def _applied_target(service: w.Obj, index: int, port: w.Obj) -> int | str | None:
    applied = w.last_applied(service)
    if applied is None:
        return None
    ports = n.service_ports(applied)
    same = next((p for p in ports if port.get("name") and p.get("name") == port.get("name")), None)
    if same is None and index < len(ports):
        same = ports[index]
    return n.target_of(same) if same else None


def _suggest_port(
    port: w.Obj, applied: int | str | None, seen: n.Listening
) -> tuple[int | str | None, str]:
    if applied is not None and (applied in seen.numbers or applied in seen.names):
        return applied, "the targetPort last applied with kubectl, which the pods serve"
    if port.get("name") in seen.names:
        return seen.names[str(port["name"])], "the containerPort of the same name"
    if int(port.get("port") or 0) in seen.numbers:
        return int(port["port"]), "the Service's own port, which the pods serve"
    if len(seen.numbers) == 1:
        return next(iter(seen.numbers)), "the only port the pods serve"
    return None, ""


def target_ports(snapshot: Snapshot) -> list[Finding]:
    findings = []
    for service in snapshot.of("Service"):
        name = w.name_of(service)
        selected = n.selected_workloads(snapshot, n.selector_of(service))
        if len(selected) != 1:
            continue
        kind, workload = selected[0]
        pods = n.selected_pods(snapshot, service)
        seen = n.listening(snapshot, w.template_of(workload), pods)
        if not seen.known:
            continue
        for index, port in enumerate(n.service_ports(service)):
            if (port.get("protocol") or "TCP") != "TCP":
                continue
            target = n.target_of(port)
            if target in seen.numbers or target in seen.names:
                continue
            applied = _applied_target(service, index, port)
            drifted = applied is not None and applied != target
            failing = _callers_failing(snapshot, name, ("refused", "timeout", "other"))
            if not failing and not drifted:
                continue  # odd but harmless as far as anyone can see: do no harm
            suggested, why = _suggest_port(port, applied, seen)
            served = ", ".join(f"{p} ({where})" for p, where in sorted(seen.numbers.items()))
            evidence = [
                w.evidence(
                    "spec",
                    f"service/{name}",
                    f"ports[{index}]: port {port.get('port')} → targetPort {target}",
                ),
                w.evidence("spec", f"{kind.lower()}/{w.name_of(workload)}", f"serves {served}"),
            ]
            if drifted:
                evidence.append(
                    w.evidence("spec", f"service/{name}", f"last applied targetPort: {applied}")
                )
            findings.append(
                Finding(
                    analyzer=NAME,
                    mechanism="service-target-port",
                    category=Category.NETWORK,
                    resource=w.key(snapshot, "Service", name),
                    symptoms=[w.key(snapshot, kind, w.name_of(workload))],
                    summary=(
                        f"service/{name} sends port {port.get('port')} to targetPort {target}, "
                        f"which its pods do not listen on"
                        + (f" (they serve {suggested}: {why})" if suggested is not None else "")
                    ),
                    evidence=evidence + _caller_evidence(failing),
                    severity=3 if failing else 2,
                    confidence=0.9 if failing and suggested is not None else 0.7,
                    facts={
                        "port_index": index,
                        "target_port": target,
                        "suggested": suggested,
                        "workload": f"{kind}/{w.name_of(workload)}",
                    },
                )
            )
    return findings


# ------------------------------------------------------------------ selector


def _similarity(selector: dict[str, str], labels: dict[str, str]) -> float:
    """How close a selector comes to a set of labels: every key must be there; values that
    differ must look alike (a typo, a renamed label value)."""
    if not selector or any(k not in labels for k in selector):
        return 0.0
    scores = [
        1.0 if labels[k] == v else difflib.SequenceMatcher(None, v, labels[k]).ratio()
        for k, v in selector.items()
    ]
    return min(scores)


def _meant(snapshot: Snapshot, service: w.Obj) -> tuple[str, w.Obj, dict[str, str], str] | None:
    """The workload the Service was meant to select, the selector that selects it, and why."""
    name = w.name_of(service)
    applied = w.last_applied(service)
    if applied is not None:
        selector = n.selector_of(applied)
        chosen = n.selected_workloads(snapshot, selector)
        if selector and len(chosen) == 1 and selector != n.selector_of(service):
            return chosen[0][0], chosen[0][1], selector, "the selector last applied with kubectl"
    selector = n.selector_of(service)
    ranked = sorted(
        (
            (_similarity(selector, n.template_labels(o)), w.name_of(o) == name, kind, o)
            for kind, o in n.workloads(snapshot)
        ),
        key=lambda item: (-item[0], not item[1], w.name_of(item[3])),
    )
    ranked = [r for r in ranked if r[0] >= SIMILAR]
    if not ranked:
        return _namesake(snapshot, service, selector)
    if len(ranked) > 1 and ranked[1][:2] == ranked[0][:2]:
        return None  # two equally alike: no guess
    _, _, kind, workload = ranked[0]
    labels = n.template_labels(workload)
    fixed = {k: labels[k] for k in selector}
    if len(n.selected_workloads(snapshot, fixed)) != 1:
        return None
    return kind, workload, fixed, "the label values of the workload whose pods look meant"


def _namesake(
    snapshot: Snapshot, service: w.Obj, selector: dict[str, str]
) -> tuple[str, w.Obj, dict[str, str], str] | None:
    """No workload's labels look like the selector's (``geo-canary`` is far from ``geo`` as
    text): the one workload named as the Service, carrying every selector key and serving the
    port the Service targets, is the one it was meant for — the naming every manifest uses."""
    name = w.name_of(service)
    named = [(k, o) for k, o in n.workloads(snapshot) if w.name_of(o) == name]
    if len(named) != 1:
        return None
    kind, workload = named[0]
    labels = n.template_labels(workload)
    if not selector or any(k not in labels for k in selector):
        return None
    served = {
        int(p["containerPort"])
        for c in w.containers_of(w.template_of(workload))
        for p in c.get("ports") or []
        if "containerPort" in p
    }
    targets = {n.target_of(p) for p in n.service_ports(service)}
    if not any(isinstance(t, int) and t in served for t in targets):
        return None
    fixed = {k: labels[k] for k in selector}
    if len(n.selected_workloads(snapshot, fixed)) != 1:
        return None
    return kind, workload, fixed, f"the labels of {kind.lower()}/{name}, named as the Service"


def selectors(snapshot: Snapshot) -> list[Finding]:
    findings = []
    for service in snapshot.of("Service"):
        name = w.name_of(service)
        selector = n.selector_of(service)
        if not selector or n.selected_pods(snapshot, service):
            continue
        if n.selected_workloads(snapshot, selector):
            continue  # a workload's template matches: its pods are just not there (yet)
        meant = _meant(snapshot, service)
        if meant is None:
            continue
        kind, workload, suggested, why = meant
        # A headless Service that selects nothing resolves to nothing: its callers see no-host.
        failing = _callers_failing(snapshot, name, ("refused", "timeout", "other", "no-host"))
        applied = w.last_applied(service)
        drifted = applied is not None and n.selector_of(applied) != selector
        if not failing and not drifted:
            continue
        shown = ",".join(f"{k}={v}" for k, v in selector.items())
        findings.append(
            Finding(
                analyzer=NAME,
                mechanism="service-selector",
                category=Category.NETWORK,
                resource=w.key(snapshot, "Service", name),
                symptoms=[w.key(snapshot, kind, w.name_of(workload))],
                summary=(
                    f"service/{name} selects {shown}, which matches no pod; "
                    f"{kind.lower()}/{w.name_of(workload)} has the pods it was meant to select"
                ),
                evidence=[
                    w.evidence("spec", f"service/{name}", f"selector {shown}"),
                    w.evidence(
                        "spec",
                        f"{kind.lower()}/{w.name_of(workload)}",
                        "pod labels "
                        + ",".join(f"{k}={v}" for k, v in n.template_labels(workload).items()),
                    ),
                    *_caller_evidence(failing),
                ],
                severity=3 if failing else 2,
                confidence=0.9,
                facts={
                    "selector": selector,
                    "suggested": suggested,
                    "why": why,
                    "workload": f"{kind}/{w.name_of(workload)}",
                },
            )
        )
    return findings


# ------------------------------------------------------------------ missing Service


def _serving(snapshot: Snapshot, host: str) -> tuple[str, w.Obj] | None:
    """The one workload whose pods are called ``host``: by name, or by a label value."""
    by_name = [(k, o) for k, o in n.workloads(snapshot) if w.name_of(o) == host]
    if len(by_name) == 1:
        return by_name[0]
    by_label = [(k, o) for k, o in n.workloads(snapshot) if host in n.template_labels(o).values()]
    return by_label[0] if len(by_label) == 1 else None


def _ports_for(seen: n.Listening, template: w.Obj, called: set[int]) -> list[dict[str, Any]]:
    named = {number: name for name, number in seen.names.items()}
    declared = sorted(
        {int(p["containerPort"]) for c in w.containers_of(template) for p in c.get("ports") or []}
    )
    ports = declared or sorted(seen.numbers)
    if len(ports) == 1 and len(called) == 1:
        (port,) = called
        return [{"name": named.get(ports[0], ""), "port": port, "target_port": ports[0]}]
    return [{"name": named.get(p, f"port-{p}"), "port": p, "target_port": p} for p in ports]


def missing(snapshot: Snapshot) -> list[Finding]:
    existing = {w.name_of(s) for s in snapshot.of("Service")}
    by_host: dict[str, list[n.Call]] = {}
    for call in n.calls(snapshot):
        if call.kind == "no-host" and call.host not in existing:
            by_host.setdefault(call.host, []).append(call)
    findings = []
    for host, failing in sorted(by_host.items()):
        serving = _serving(snapshot, host)
        if serving is None:
            continue
        kind, workload = serving
        template = w.template_of(workload)
        seen = n.listening(snapshot, template, w.pods_of(snapshot, kind, w.name_of(workload)))
        called = {c.port for c in failing if c.port is not None}
        if not seen.known or (called and not called & set(seen.numbers) and len(seen.numbers) > 1):
            continue
        selector = {
            str(k): str(v)
            for k, v in ((workload.get("spec") or {}).get("selector") or {})
            .get("matchLabels", {})
            .items()
        } or n.template_labels(workload)
        ports = _ports_for(seen, template, called)
        findings.append(
            Finding(
                analyzer=NAME,
                mechanism="service-missing",
                category=Category.NETWORK,
                resource=w.key(snapshot, "Service", host),
                symptoms=sorted(
                    {
                        w.key(snapshot, *(w.workload_of(snapshot, pod) or ("Pod", w.name_of(pod))))
                        for c in failing
                        if (pod := n.caller_pod(snapshot, c)) is not None
                    },
                    key=str,
                ),
                summary=(
                    f"callers cannot resolve {host}: there is no service/{host}, while "
                    f"{kind.lower()}/{w.name_of(workload)} runs the pods that serve it"
                ),
                evidence=[
                    *_caller_evidence(failing),
                    w.evidence(
                        "spec",
                        f"{kind.lower()}/{w.name_of(workload)}",
                        "serves " + ", ".join(str(p) for p in sorted(seen.numbers)),
                    ),
                ],
                severity=3,
                confidence=0.9,
                facts={
                    "workload": f"{kind}/{w.name_of(workload)}",
                    "selector": selector,
                    "ports": ports,
                    "labels": n.labels_of(workload) or selector,
                },
            )
        )
    return findings


ANALYZERS = [target_ports, selectors, missing]
