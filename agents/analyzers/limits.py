"""A LimitRange that refuses the pods a workload needs.

The witness is the controller's FailedCreate event in the LimitRanger's words (``maximum
memory usage per Container is 128Mi, but limit is 256Mi``, ``minimum cpu usage per Container
is 100m, but request is 50m``), and a finding needs the refusal to still hold: the workload
still lacks replicas, a LimitRange of the namespace still has that bound, and one of the
workload's containers is still outside it. A LimitRange everybody fits is doing its job.

The LimitRange is the namespace's policy, set by whoever runs the cluster; the workload is what
can be changed to fit it. So the facts say, for each refused container, the value that fits
(``fits``: the bound itself) and whether that value keeps the container valid (a limit at the
max must stay at or above the container's request, a request at the min at or below its
limit). When it would not, no catalog action fixes it and ``person`` says what to do.

Facts set (``limitrange-forbids-pods``): ``limitrange``, ``resource``, ``bound`` (max|min),
``value`` (the bound), ``containers`` (``{"workload": "Kind/name", "container", "field":
"limits"|"requests", "current", "fits", "valid"}``), ``person`` (what to do by hand when
no candidate is left: some container cannot fit validly, or fitting it was tried and undone).
"""

from __future__ import annotations

import re
from typing import Any

from agents.analyzers import _workloads as w
from agents.analyzers.quota import _owner, _short_of_replicas
from agents.model import Category, Evidence, Finding, ResourceKey
from agents.snapshot import Snapshot

NAME = "limits"
_REFUSED = re.compile(
    r"(?P<bound>maximum|minimum) (?P<resource>[a-z.-]+) usage per Container is "
    r"(?P<value>[0-9.]+[a-zA-Z]*)"
)


def _bound_of(snapshot: Snapshot, bound: str, resource: str) -> tuple[str, str] | None:
    """(LimitRange name, its bound) still in force for ``resource``, or None."""
    key = "max" if bound == "maximum" else "min"
    for limit_range in snapshot.of("LimitRange"):
        for item in (limit_range.get("spec") or {}).get("limits") or []:
            if item.get("type") == "Container" and resource in (item.get(key) or {}):
                return w.name_of(limit_range), str(item[key][resource])
    return None


def _outside(
    workload: w.Obj, owner: tuple[str, str], bound: str, resource: str, value: str
) -> list[dict[str, Any]]:
    found = []
    for container in w.containers_of(w.template_of(workload)):
        resources = container.get("resources") or {}
        limit = (resources.get("limits") or {}).get(resource)
        request = (resources.get("requests") or {}).get(resource)
        if bound == "maximum":
            if limit is not None and w.quantity(limit) <= w.quantity(value):
                continue
            valid = request is None or w.quantity(request) <= w.quantity(value)
            current, field = limit, "limits"
        else:
            if request is not None and w.quantity(request) >= w.quantity(value):
                continue
            valid = limit is None or w.quantity(limit) >= w.quantity(value)
            current, field = request, "requests"
        found.append(
            {
                "workload": f"{owner[0]}/{owner[1]}",
                "container": str(container.get("name")),
                "field": field,
                "current": None if current is None else str(current),
                "fits": value,
                "valid": valid,
            }
        )
    return found


def refused_by_limit_range(snapshot: Snapshot) -> list[Finding]:
    if not snapshot.of("LimitRange"):
        return []
    refusals: dict[tuple[str, str, str], dict[str, Any]] = {}
    for event in snapshot.of("Event"):
        message = str(event.get("message") or "")
        if event.get("reason") != "FailedCreate":
            continue
        involved = event.get("involvedObject") or {}
        owner = _owner(snapshot, str(involved.get("kind")), str(involved.get("name")))
        if owner is None or not _short_of_replicas(snapshot, owner):
            continue
        workload = snapshot.get(*owner) or {}
        for match in _REFUSED.finditer(message):
            bound, resource = match["bound"], match["resource"]
            current = _bound_of(snapshot, bound, resource)
            if current is None:
                continue  # the LimitRange was changed or removed since: history
            range_name, value = current
            entry = refusals.setdefault(
                (range_name, resource, bound),
                {"value": value, "containers": [], "events": [], "workloads": set()},
            )
            if owner in entry["workloads"]:
                continue
            outside = _outside(workload, owner, bound, resource, value)
            if not outside:
                continue
            entry["workloads"].add(owner)
            entry["containers"] += outside
            ref = f"{str(involved.get('kind')).lower()}/{involved.get('name')}"
            entry["events"].append(w.evidence("event", ref, f"FailedCreate: {match.group(0)}"))
    return [
        _finding(snapshot, range_name, resource, bound, entry)
        for (range_name, resource, bound), entry in sorted(refusals.items())
        if entry["containers"]
    ]


def _finding(
    snapshot: Snapshot, range_name: str, resource: str, bound: str, entry: dict[str, Any]
) -> Finding:
    value = entry["value"]
    containers = entry["containers"]
    owners = sorted(entry["workloads"])
    key = "max" if bound == "maximum" else "min"
    side = "limit" if bound == "maximum" else "request"
    who = ", ".join(f"{c['workload'].lower()} (container {c['container']})" for c in containers)
    facts: dict[str, Any] = {
        "limitrange": range_name,
        "resource": resource,
        "bound": key,
        "value": value,
        "containers": containers,
    }
    stuck = [c for c in containers if not c["valid"]]
    # Shown only when no candidate is left: nothing fits validly, or fitting was tried and
    # undone (the app needs more than the bound: a limit at the max OOMKills it).
    facts["person"] = (
        f"limitrange/{range_name} sets the {key} {resource} per container to {value} and "
        f"{who} needs to be outside it: ask whoever owns the namespace's limits to change the "
        f"{key} in limitrange/{range_name} (or to exempt the workload). Stratus's catalog has "
        "no action that edits a LimitRange (it is policy, not a fault it may undo)"
    )
    if stuck:
        other = "request" if bound == "maximum" else "limit"
        facts["person"] = (
            f"limitrange/{range_name} sets the {key} {resource} per container to {value}, and "
            + ", ".join(f"{c['workload'].lower()} (container {c['container']})" for c in stuck)
            + f" cannot fit it without also changing its {other}: ask whoever owns the "
            f"namespace's limits to change the {key} in limitrange/{range_name}, or agree to "
            f"resize the workload. Stratus's catalog has no action that edits a LimitRange "
            "(it is policy, not a fault it may undo)"
        )
    evidence: list[Evidence] = [
        w.evidence("spec", f"limitrange/{range_name}", f"type Container: {key} {resource}={value}"),
        *(
            w.evidence(
                "spec",
                c["workload"].lower(),
                f"container {c['container']}: {c['field']} {resource}={c['current'] or 'unset'}",
            )
            for c in containers[:3]
        ),
        *entry["events"][:3],
    ]
    return Finding(
        analyzer=NAME,
        mechanism="limitrange-forbids-pods",
        category=Category.RESOURCES,
        resource=w.key(snapshot, "LimitRange", range_name),
        symptoms=[ResourceKey(kind=k, name=n, namespace=snapshot.namespace) for k, n in owners],
        summary=(
            f"limitrange/{range_name} sets the {key} {resource} per container to {value}; "
            f"the {side} of {who} is outside it, so the new pods are refused"
        ),
        evidence=evidence,
        severity=3,
        confidence=0.9,
        facts=facts,
    )


ANALYZERS = [refused_by_limit_range]
