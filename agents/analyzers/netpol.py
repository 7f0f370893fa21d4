"""NetworkPolicies that block a Service's callers.

A policy is judged by the callers that are *seen*: pods whose own logs show calls to a Service
that time out. For each such caller the policies of both sides are evaluated (ingress of the
Service's pods, egress of the caller); a policy counts as blocking only when it isolates a side
and no policy of that side lets the caller through. A policy doing its job — it allows every
observed caller, or isolates pods nobody is seen calling — yields nothing.

Facts set (``network-policy-blocks-callers``): ``callers`` (workloads, "kind/name"),
``service``, ``port`` (the port on the pods that is blocked), ``direction`` (Ingress|Egress).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agents.analyzers import _net as n
from agents.analyzers import _workloads as w
from agents.model import Category, Finding
from agents.snapshot import Snapshot

NAME = "network-policies"


def _target(service: w.Obj, port: int | None, backend: w.Obj) -> int | None:
    ports = n.service_ports(service)
    chosen = next((p for p in ports if port is not None and p.get("port") == port), None)
    chosen = chosen or (ports[0] if ports else None)
    if chosen is None:
        return None
    target = n.target_of(chosen)
    if isinstance(target, int):
        return target
    for container in (backend.get("spec") or {}).get("containers") or []:
        for entry in container.get("ports") or []:
            if entry.get("name") == target:
                return int(entry["containerPort"])
    return None


@dataclass
class _Blocked:
    service: str
    port: int
    callers: set[str] = field(default_factory=set)
    lines: list[n.Call] = field(default_factory=list)


def _owner(snapshot: Snapshot, pod: w.Obj) -> str:
    owner = w.workload_of(snapshot, pod)
    return f"{owner[0].lower()}/{owner[1]}" if owner else f"pod/{w.name_of(pod)}"


def blocking_policies(snapshot: Snapshot) -> list[Finding]:
    if not snapshot.of("NetworkPolicy"):
        return []
    blocked: dict[str, _Blocked] = {}
    for call in n.calls(snapshot):
        if not call.failed or call.kind != "timeout":
            continue
        service = snapshot.get("Service", call.host)
        caller = n.caller_pod(snapshot, call)
        if service is None or caller is None:
            continue
        for backend in n.selected_pods(snapshot, service):
            port = _target(service, call.port, backend)
            if port is None:
                continue
            for policy in n.blocking(snapshot, caller, backend, port):
                entry = blocked.setdefault(w.name_of(policy), _Blocked(call.host, port))
                entry.callers.add(_owner(snapshot, caller))
                if len(entry.lines) < 3 and call.line not in [c.line for c in entry.lines]:
                    entry.lines.append(call)
    findings = []
    for policy_name, entry in sorted(blocked.items()):
        policy = snapshot.get("NetworkPolicy", policy_name) or {}
        callers = sorted(entry.callers)
        lines = entry.lines
        selector = (policy.get("spec") or {}).get("podSelector") or {}
        service_name = entry.service
        service_obj = snapshot.get("Service", service_name)
        owners = n.selected_workloads(snapshot, n.selector_of(service_obj or {}))
        findings.append(
            Finding(
                analyzer=NAME,
                mechanism="network-policy-blocks-callers",
                category=Category.NETWORK_POLICY,
                resource=w.key(snapshot, "NetworkPolicy", policy_name),
                symptoms=[
                    w.key(snapshot, "Service", service_name),
                    *(w.key(snapshot, kind, w.name_of(o)) for kind, o in owners),
                ],
                summary=(
                    f"networkpolicy/{policy_name} blocks {', '.join(callers)} from reaching "
                    f"service/{service_name} (port {entry.port})"
                ),
                evidence=[
                    w.evidence(
                        "spec",
                        f"networkpolicy/{policy_name}",
                        f"podSelector {selector or '{}'}; policyTypes "
                        f"{', '.join(n.policy_types(policy))}; "
                        f"{len((policy.get('spec') or {}).get('ingress') or [])} ingress rule(s), "
                        "none admitting the callers",
                    ),
                    *(w.evidence("log", w.log_ref(c.caller), c.line) for c in lines),
                ],
                severity=3,
                confidence=0.9,
                facts={"callers": callers, "service": service_name, "port": entry.port},
            )
        )
    return findings


def dns_blocked(snapshot: Snapshot) -> list[Finding]:
    """Egress policies that let their pods reach their callees but not the cluster DNS: every
    lookup times out, so the policy that "allows" the callee still breaks the caller."""
    if not snapshot.of("NetworkPolicy"):
        return []
    blocked: dict[str, _Blocked] = {}
    owners: dict[str, set[tuple[str, str]]] = {}
    for call in n.calls(snapshot):
        host = n.dns_timeout(call.line) if call.failed else None
        caller = n.caller_pod(snapshot, call) if host else None
        if host is None or caller is None:
            continue
        isolating = [p for p in snapshot.of("NetworkPolicy") if n.isolates(p, caller, "Egress")]
        if not isolating or any(n.allows_dns(p) for p in isolating):
            continue
        owner = w.workload_of(snapshot, caller)
        for policy in isolating:
            entry = blocked.setdefault(w.name_of(policy), _Blocked(host, n.DNS_PORT))
            entry.callers.add(_owner(snapshot, caller))
            if owner is not None:
                owners.setdefault(w.name_of(policy), set()).add(owner)
            if len(entry.lines) < 3 and call.line not in [c.line for c in entry.lines]:
                entry.lines.append(call)
    findings = []
    for policy_name, entry in sorted(blocked.items()):
        callers = sorted(entry.callers)
        rules = ((snapshot.get("NetworkPolicy", policy_name) or {}).get("spec") or {}).get(
            "egress"
        ) or []
        findings.append(
            Finding(
                analyzer=NAME,
                mechanism="network-policy-blocks-dns",
                category=Category.NETWORK_POLICY,
                resource=w.key(snapshot, "NetworkPolicy", policy_name),
                symptoms=[w.key(snapshot, k, o) for k, o in sorted(owners.get(policy_name, ()))],
                summary=(
                    f"networkpolicy/{policy_name} isolates the egress of {', '.join(callers)} "
                    "and no egress rule admits DNS (port 53 to kube-dns in kube-system), so "
                    "every name lookup times out"
                ),
                evidence=[
                    w.evidence(
                        "spec",
                        f"networkpolicy/{policy_name}",
                        f"policyTypes Egress; {len(rules)} egress rule(s), none to port 53",
                    ),
                    *(w.evidence("log", w.log_ref(c.caller), c.line) for c in entry.lines),
                ],
                severity=3,
                confidence=0.9,
                facts={"callers": callers, "direction": "Egress", "port": n.DNS_PORT},
            )
        )
    return findings


ANALYZERS = [blocking_policies, dns_blocked]
