"""A caller configured with a host name that resolves to nothing.

The witness is the caller's own log: a lookup of a name that ends in "no such host", for a name
that is no Service of the namespace and no workload serves (a deleted Service is the service
analyzer's ``service-missing``). The cause lies in the caller: one of its containers has an
environment variable whose value names that host (``PAYMENT_ADDR=paymnet:8084``,
``http://paymnet:8084/api``). The fix is that variable's value, so the finding is on the
caller's workload, and the callee it meant — a Service whose name is one typo away — is
suggested only when exactly one Service is that close.

Facts set (``env-names-unknown-host``): ``container``, ``variable``, ``value`` (as it is),
``host`` (the name that does not resolve), ``suggested`` (the value with the host replaced by
the one close Service name, or absent), ``service`` (that Service), ``rollback_to`` and
``changed`` when the latest rollout changed the container's environment, ``person`` (what to
do by hand when no Service name is close).
"""

from __future__ import annotations

from typing import Any

from agents.analyzers import _net as n
from agents.analyzers import _workloads as w
from agents.analyzers.pods import Cause, change_facts, workload_finding
from agents.model import Category, Evidence, Finding
from agents.snapshot import Snapshot

ANALYZER = "dns"
MAX_TYPO_DISTANCE = 2
ERROR_LINES = 3


def host_of(value: str) -> str:
    """The host name a variable's value addresses: ``http://a.ns.svc:80/x`` → ``a``."""
    address = value.split("://", 1)[-1].split("/", 1)[0]
    return address.split(":", 1)[0].split(".", 1)[0].lower()


def distance(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions, adjacent swaps)."""
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            best = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                best = min(best, rows[-2][j - 2] + 1)
            row.append(best)
        rows.append(row)
    return rows[-1][-1]


def closest_service(snapshot: Snapshot, host: str) -> str | None:
    """The one Service whose name is within a typo or two of ``host``, or None."""
    near = [
        w.name_of(s)
        for s in snapshot.of("Service")
        if distance(host, w.name_of(s)) <= MAX_TYPO_DISTANCE
    ]
    return near[0] if len(near) == 1 else None


def _served(snapshot: Snapshot, host: str) -> bool:
    """Whether some workload is called ``host`` (by name or a label value): then a Service of
    that name is missing, which is not this analyzer's business."""
    return any(
        w.name_of(o) == host or host in n.template_labels(o).values()
        for _, o in n.workloads(snapshot)
    )


def _naming_variable(container: w.Obj, host: str) -> tuple[str, str] | None:
    for entry in container.get("env") or []:
        value = entry.get("value")
        if "valueFrom" in entry or not isinstance(value, str) or not value:
            continue
        if host_of(value) == host:
            return str(entry.get("name")), value
    return None


def unknown_hosts(snapshot: Snapshot) -> list[Finding]:
    services = {w.name_of(s) for s in snapshot.of("Service")}
    failing: dict[tuple[str, str, str], list[n.Call]] = {}
    for call in n.calls(snapshot):
        if call.kind != "no-host" and "no such host" not in call.line:
            continue
        if call.host in services or _served(snapshot, call.host):
            continue
        pod = n.caller_pod(snapshot, call)
        workload = w.workload_of(snapshot, pod) if pod else None
        if workload is None or workload[0] not in w.WORKLOAD_KINDS:
            continue
        failing.setdefault((*workload, call.host), []).append(call)
    findings = []
    for (kind, name, host), calls in sorted(failing.items()):
        obj = snapshot.get(kind, name)
        if obj is None:
            continue
        for container in w.containers_of(w.template_of(obj)):
            named = _naming_variable(container, host)
            if named is not None:
                findings.append(_finding(snapshot, (kind, name), container, named, host, calls))
                break
    return findings


def _finding(
    snapshot: Snapshot,
    workload: tuple[str, str],
    container: w.Obj,
    named: tuple[str, str],
    host: str,
    calls: list[n.Call],
) -> Finding:
    variable, value = named
    cname = str(container.get("name"))
    service = closest_service(snapshot, host)
    change, change_evidence = change_facts(snapshot, workload)
    facts: dict[str, Any] = {
        "container": cname,
        "variable": variable,
        "value": value,
        "host": host,
    }
    if service is not None:
        facts["service"] = service
        facts["suggested"] = value.replace(host, service, 1)
    else:
        # Shown only when no candidate is left (no rollback, no earlier value, no close name).
        facts["person"] = (
            f"set {variable} of container {cname} in {workload[0].lower()}/{workload[1]} to "
            f"the address of the Service it should call ({host} resolves to nothing); Stratus "
            "does not guess an address that no revision had and no Service name is close to"
        )
    if change is not None and change.touches(cname, "env", "envFrom"):
        facts.update(rollback_to=change.previous, changed=change.lines[:6])
    meant = f"; service/{service} is one typo away" if service else ""
    cause = Cause(
        "env-names-unknown-host",
        Category.CONFIGURATION,
        f"addresses {host} through {variable}={value}, a name no Service has, so every "
        f"lookup ends in 'no such host'{meant}",
        0.9,
    )
    evidence: list[Evidence] = [
        w.evidence("spec", f"{workload[0].lower()}/{workload[1]}", f"env {variable}={value}"),
        *(w.evidence("log", w.log_ref(c.caller), c.line) for c in calls[:ERROR_LINES]),
    ]
    if "rollback_to" in facts:
        evidence += change_evidence
    return workload_finding(
        snapshot,
        analyzer=ANALYZER,
        workload=workload,
        cause=cause,
        evidence=evidence,
        facts=facts,
    )


ANALYZERS = [unknown_hosts]
