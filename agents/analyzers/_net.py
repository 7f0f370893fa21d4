"""Reading how traffic reaches pods out of a snapshot: what a Service selects, which ports a
workload's pods listen on as far as one can see, who calls a Service (from the callers' own
logs), and what NetworkPolicies allow.

Shared by the service, network-policy and credential analyzers and their remedies (this module
has no ``ANALYZERS``). Pure functions of the objects as the API returned them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agents.analyzers import _workloads as w
from agents.snapshot import Snapshot

Obj = dict[str, Any]

# "listening on :8083", "starting on :8081", "Listening at http://0.0.0.0:8080", "port 5432"
_LISTEN = re.compile(
    r"\b(?:listen(?:ing)?|serving|starting|started|bound|accepting connections)\b[^\n]*?"
    r"(?::|\bport\s+)(\d{2,5})\b",
    re.IGNORECASE,
)
_NO_HOST = re.compile(
    r"(?:lookup ([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?:\.[-a-z0-9.]+)?(?: on [^:\s]+(?::\d+)?)?: "
    r"no such host"
    r"|could not resolve host:? ([a-z0-9]([-a-z0-9]*[a-z0-9])?)"
    r"|getaddrinfo (?:ENOTFOUND|EAI_AGAIN) ([a-z0-9]([-a-z0-9]*[a-z0-9])?))",
    re.IGNORECASE,
)
_HOST_PORT = re.compile(
    r"(?:request to|dial tcp|connect to|call to|calling)\s+(?:https?://)?"
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?:\.[-a-z0-9.]+)?:(\d{1,5})"
)
_TIMEOUT = re.compile(r"i/o timeout|timed out|deadline exceeded|no route to host", re.IGNORECASE)
_REFUSED = re.compile(r"connection refused", re.IGNORECASE)


def selector_of(service: Obj) -> dict[str, str]:
    return {str(k): str(v) for k, v in ((service.get("spec") or {}).get("selector") or {}).items()}


def labels_of(obj: Obj) -> dict[str, str]:
    return {str(k): str(v) for k, v in ((obj.get("metadata") or {}).get("labels") or {}).items()}


def template_labels(workload: Obj) -> dict[str, str]:
    return labels_of(w.template_of(workload))


def workloads(snapshot: Snapshot) -> list[tuple[str, Obj]]:
    return [(kind, o) for kind in w.WORKLOAD_KINDS for o in snapshot.of(kind)]


def selected_pods(snapshot: Snapshot, service: Obj) -> list[Obj]:
    selector = selector_of(service)
    return [p for p in snapshot.pods if w.matches(selector, labels_of(p))]


def selected_workloads(snapshot: Snapshot, selector: dict[str, str]) -> list[tuple[str, Obj]]:
    return [(k, o) for k, o in workloads(snapshot) if w.matches(selector, template_labels(o))]


# ------------------------------------------------------------------ ports


@dataclass(frozen=True)
class Listening:
    """The ports a pod template is seen to serve, and where each was seen."""

    numbers: dict[int, str]  # port → "containerPort main of container geo", "log: …"
    names: dict[str, int]  # containerPort name → number

    @property
    def known(self) -> bool:
        return bool(self.numbers)


def _probe_ports(container: Obj) -> list[Any]:
    found = []
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        spec = container.get(probe) or {}
        for handler in ("tcpSocket", "httpGet", "grpc"):
            if "port" in (spec.get(handler) or {}):
                found.append(spec[handler]["port"])
    return found


def listening(snapshot: Snapshot, template: Obj, pods: list[Obj]) -> Listening:
    """containerPorts, probe ports and ports the containers' logs say they listen on."""
    numbers: dict[int, str] = {}
    names: dict[str, int] = {}
    for container in w.containers_of(template):
        cname = container.get("name")
        for port in container.get("ports") or []:
            if (port.get("protocol") or "TCP") != "TCP" or "containerPort" not in port:
                continue
            number = int(port["containerPort"])
            numbers.setdefault(number, f"containerPort {number} of container {cname}")
            if port.get("name"):
                names[str(port["name"])] = number
        for probe_port in _probe_ports(container):
            found = names.get(probe_port) if isinstance(probe_port, str) else int(probe_port)
            if found is not None:
                numbers.setdefault(found, f"probe on port {found} of container {cname}")
    for pod in pods:
        for source in (pod.get("status") or {}).get("containerStatuses") or []:
            current, previous = w.logs_of(snapshot, w.name_of(pod), str(source.get("name")))
            for line in (current + "\n" + previous).splitlines():
                match = _LISTEN.search(line)
                if match and 0 < int(match.group(1)) < 65536:
                    numbers.setdefault(int(match.group(1)), f"log: {w.quoted(line)}")
    return Listening(numbers, names)


def service_ports(service: Obj) -> list[Obj]:
    ports: list[Obj] = (service.get("spec") or {}).get("ports") or []
    return ports


def target_of(port: Obj) -> int | str:
    target = port.get("targetPort")
    if target is None or target == "":
        return int(port.get("port") or 0)
    return int(target) if isinstance(target, int) or str(target).isdigit() else str(target)


# ------------------------------------------------------------------ callers


@dataclass(frozen=True)
class Call:
    """A caller's log line about a call to a host (a Service name) it made itself."""

    caller: str  # "pod/NAME/container"
    host: str
    port: int | None
    line: str
    failed: bool
    kind: str  # "refused", "timeout", "no-host", "auth", "other", "ok"


_AUTH = re.compile(
    r"authentication failed|password authentication failed|access denied for user|"
    r"NOAUTH|WRONGPASS|invalid credentials|invalid password|SASL authentication",
    re.IGNORECASE,
)


def _kind_of(line: str) -> str:
    if _NO_HOST.search(line):
        return "no-host"
    if _AUTH.search(line):
        return "auth"
    if _TIMEOUT.search(line):
        return "timeout"
    if _REFUSED.search(line):
        return "refused"
    return "other"


def calls(snapshot: Snapshot) -> list[Call]:
    """Every call a pod's current log names, with whether it failed and how. Only the first
    hop of a line counts: "request to a failed: upstream b failed" is a's call to b, which
    a's own log shows."""
    found: list[Call] = []
    for source, text in sorted(snapshot.logs.items()):
        for line in text.splitlines():
            no_host = _NO_HOST.search(line)
            match = _HOST_PORT.search(line)
            if match is None and no_host is None:
                continue
            failed = bool(w.error_lines(line)) or no_host is not None
            if match is not None:
                host, port = match.group(1), int(match.group(3))
                rest = line[match.end() :]
                nested = re.search(r"upstream ([a-z0-9-]+) failed", rest)
                kind = "other" if nested else (_kind_of(rest) if failed else "ok")
            else:
                assert no_host is not None
                host = next(g for g in no_host.groups()[::2] if g)
                port, kind = None, "no-host"
            found.append(Call(source, host, port, line.strip(), failed, kind))
    return found


def caller_pod(snapshot: Snapshot, call: Call) -> Obj | None:
    return snapshot.get("Pod", w.pod_of_log(call.caller))


# ------------------------------------------------------------------ network policies


def _selects(selector: Obj | None, labels: dict[str, str]) -> bool:
    """A LabelSelector (matchLabels and matchExpressions); an empty one selects everything."""
    selector = selector or {}
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(str(k)) != str(v):
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = str(expression.get("key")), expression.get("operator")
        values = [str(v) for v in expression.get("values") or []]
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and labels.get(key) in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def policy_types(policy: Obj) -> list[str]:
    spec = policy.get("spec") or {}
    declared = spec.get("policyTypes")
    if declared:
        return [str(t) for t in declared]
    return ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def isolates(policy: Obj, pod: Obj, direction: str) -> bool:
    spec = policy.get("spec") or {}
    return direction in policy_types(policy) and _selects(spec.get("podSelector"), labels_of(pod))


def _port_matches(rule_ports: list[Obj], pod: Obj, port: int) -> bool:
    if not rule_ports:
        return True
    names = {
        str(p.get("name")): int(p["containerPort"])
        for c in (pod.get("spec") or {}).get("containers") or []
        for p in c.get("ports") or []
        if p.get("name") and "containerPort" in p
    }
    for entry in rule_ports:
        wanted = entry.get("port")
        if wanted is None:
            return True
        number = names.get(wanted) if isinstance(wanted, str) else int(wanted)
        if number is not None and number <= port <= int(entry.get("endPort") or number):
            return True
    return False


def _peer_matches(peers: list[Obj], other: Obj, same_namespace: bool) -> bool:
    if not peers:
        return True
    for peer in peers:
        if "ipBlock" in peer:
            return True  # an address range may include the pod: never call it blocked
        if "namespaceSelector" in peer:
            if _selects(peer.get("podSelector"), labels_of(other)) and (
                same_namespace or not (peer.get("namespaceSelector") or {})
            ):
                return True
            continue
        if same_namespace and _selects(peer.get("podSelector"), labels_of(other)):
            return True
    return False


def allows(policy: Obj, pod: Obj, other: Obj, port: int, direction: str) -> bool:
    """Whether one policy lets ``other`` reach ``pod`` on ``port`` (direction Ingress), or
    ``pod`` reach ``other`` (Egress)."""
    spec = policy.get("spec") or {}
    rules = spec.get("ingress" if direction == "Ingress" else "egress") or []
    peer_key = "from" if direction == "Ingress" else "to"
    same = (other.get("metadata") or {}).get("namespace") == (pod.get("metadata") or {}).get(
        "namespace"
    )
    target = pod if direction == "Ingress" else other
    return any(
        _peer_matches(rule.get(peer_key) or [], other, same)
        and _port_matches(rule.get("ports") or [], target, port)
        for rule in rules
    )


def blocking(snapshot: Snapshot, caller: Obj, callee: Obj, port: int) -> list[Obj]:
    """The policies that keep ``caller`` from reaching ``callee`` on ``port``: those that
    isolate a side that no policy of that side lets through. Empty: traffic is allowed."""
    policies = snapshot.of("NetworkPolicy")
    found: list[Obj] = []
    for direction, pod, other in (("Ingress", callee, caller), ("Egress", caller, callee)):
        isolating = [p for p in policies if isolates(p, pod, direction)]
        if isolating and not any(allows(p, pod, other, port, direction) for p in isolating):
            found += isolating
    return found


# The cluster DNS as an egress peer: kube-dns pods in kube-system, on port 53.
DNS_NAMESPACE_LABELS = {"kubernetes.io/metadata.name": "kube-system"}
DNS_POD_LABELS = {"k8s-app": "kube-dns"}
DNS_PORT = 53
_DNS_TIMEOUT = re.compile(
    r"lookup ([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?:\.[-a-z0-9.]+)? on [^\s]+:53\b[^\n]*"
    r"(?:i/o timeout|timed out|deadline exceeded)",
    re.IGNORECASE,
)


def dns_timeout(line: str) -> str | None:
    """The name whose lookup timed out on the cluster DNS in a log line, or None."""
    match = _DNS_TIMEOUT.search(line)
    return match.group(1) if match else None


def allows_dns(policy: Obj) -> bool:
    """Whether one policy's egress rules let its pods ask the cluster DNS. An ``ipBlock`` peer
    may cover the DNS Service's address, so it counts as allowing (never call it blocked)."""
    for rule in (policy.get("spec") or {}).get("egress") or []:
        ports = rule.get("ports") or []
        if ports and not any(
            entry.get("port") is None
            or entry.get("port") in ("dns", "dns-tcp")
            or (
                isinstance(entry.get("port"), int)
                and entry["port"] <= DNS_PORT <= int(entry.get("endPort") or entry["port"])
            )
            for entry in ports
        ):
            continue
        peers = rule.get("to") or []
        if not peers:
            return True
        for peer in peers:
            if "ipBlock" in peer:
                return True
            if "namespaceSelector" in peer and (
                _selects(peer.get("namespaceSelector"), DNS_NAMESPACE_LABELS)
                and _selects(peer.get("podSelector"), DNS_POD_LABELS)
            ):
                return True
    return False
