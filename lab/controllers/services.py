"""Service plumbing: cluster IP allocation, endpoints from ready pods, network policy checks."""

from __future__ import annotations

import ipaddress
from typing import Any

from lab.cluster.errors import ApiError
from lab.cluster.resources import ResourceType
from lab.cluster.selectors import label_selector_from_object, matches_labels, matches_map
from lab.controllers.context import ControllerContext, owner_reference
from lab.controllers.workloads import pod_is_ready, template_hash

_SERVICE_RANGE = ipaddress.ip_network("10.96.0.0/16")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
SLICE_CONTROLLER = "endpointslice-controller.k8s.io"
HEADLESS_LABEL = "service.kubernetes.io/headless"


def resolve_target_port(pod: dict[str, Any], target: Any) -> int | None:
    """A service's targetPort on one pod: a number as is, a name through the container ports."""
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == target:
                return int(port["containerPort"])
    return None


class ClusterIPAllocator:
    """Admission hook: gives each new Service a stable cluster IP (and NodePorts)."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._next = 10
        self._next_node_port = 30000

    def __call__(
        self, operation: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt.plural != "services":
            return
        spec = obj.setdefault("spec", {})
        if operation == "update" and old is not None:
            old_spec = old.get("spec") or {}
            spec.setdefault("clusterIP", old_spec.get("clusterIP"))
            spec.setdefault("clusterIPs", old_spec.get("clusterIPs"))
        if spec.get("type") == "ExternalName":
            return
        if not spec.get("clusterIP"):
            used = {s["spec"].get("clusterIP") for s in self.ctx.store.iter_all("services")}
            while True:
                candidate = str(_SERVICE_RANGE[self._next])
                self._next += 1
                if candidate not in used:
                    break
            spec["clusterIP"] = candidate
        if spec["clusterIP"] != "None":
            spec["clusterIPs"] = [spec["clusterIP"]]
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            for port in spec.get("ports") or []:
                if not port.get("nodePort"):
                    port["nodePort"] = self._next_node_port
                    self._next_node_port += 1


class EndpointsController:
    COMPONENT = "endpoint-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        for service in self.ctx.store.iter_all("services"):
            selector = (service.get("spec") or {}).get("selector")
            if selector:
                self._sync(service, selector)
        for endpoints in self.ctx.store.iter_all("endpoints"):
            meta = endpoints["metadata"]
            if self.ctx.store.get("services", meta["namespace"], meta["name"]) is None:
                self.ctx.store.delete("endpoints", meta["namespace"], meta["name"])

    def _sync(self, service: dict[str, Any], selector: dict[str, str]) -> None:
        namespace = service["metadata"]["namespace"]
        name = service["metadata"]["name"]
        pods = [
            p
            for p in self.ctx.store.list_objects("pods", namespace)
            if matches_map(selector, p["metadata"].get("labels"))
            and (p.get("status") or {}).get("podIP")
        ]
        subsets: dict[tuple[tuple[str, int, str], ...], dict[str, list[dict[str, Any]]]] = {}
        terminating: list[tuple[tuple[tuple[str, int, str], ...], dict[str, Any], bool]] = []
        for pod in sorted(pods, key=lambda p: p["status"]["podIP"]):
            ports: list[tuple[str, int, str]] = []
            for port in service["spec"].get("ports") or []:
                number = resolve_target_port(pod, port.get("targetPort", port.get("port")))
                if number is None:
                    break
                ports.append((port.get("name", ""), number, port.get("protocol", "TCP")))
            else:
                address = {
                    "ip": pod["status"]["podIP"],
                    "nodeName": pod["spec"].get("nodeName"),
                    "targetRef": {
                        "kind": "Pod",
                        "namespace": namespace,
                        "name": pod["metadata"]["name"],
                        "uid": pod["metadata"]["uid"],
                    },
                }
                if pod["metadata"].get("deletionTimestamp"):
                    # Terminating: out of the Endpoints; in the slice, not ready, still
                    # serving while its readiness holds (the endpointslice controller).
                    terminating.append((tuple(ports), address, pod_is_ready(pod)))
                    continue
                bucket = subsets.setdefault(
                    tuple(ports), {"addresses": [], "notReadyAddresses": []}
                )
                bucket["addresses" if pod_is_ready(pod) else "notReadyAddresses"].append(address)
        rendered: list[dict[str, Any]] = []
        for port_key, bucket in subsets.items():
            subset: dict[str, Any] = {k: v for k, v in bucket.items() if v}
            subset["ports"] = [
                {**({"name": n} if n else {}), "port": p, "protocol": proto}
                for n, p, proto in port_key
            ]
            rendered.append(subset)
        self._sync_slice(service, rendered, terminating)
        existing = self.ctx.store.get("endpoints", namespace, name)
        labels = dict(service["metadata"].get("labels") or {})
        if existing is None:
            endpoints: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
            }
            if rendered:
                endpoints["subsets"] = rendered
            self.ctx.store.create("endpoints", endpoints)
        elif (existing.get("subsets") or []) != rendered:
            updated = {k: v for k, v in existing.items() if k != "subsets"}
            if rendered:
                updated["subsets"] = rendered
            self.ctx.store.replace("endpoints", updated)

    def _sync_slice(
        self,
        service: dict[str, Any],
        subsets: list[dict[str, Any]],
        terminating: list[tuple[tuple[tuple[str, int, str], ...], dict[str, Any], bool]],
    ) -> None:
        """The EndpointSlice kubectl 1.3x reads for ``describe service``; it also lists the
        terminating pods, which the Endpoints leave out."""
        namespace = service["metadata"]["namespace"]
        name = service["metadata"]["name"]
        slice_name = f"{name}-{template_hash({'service': service['metadata']['uid']})[:5]}"
        endpoints = []
        ports: list[dict[str, Any]] = []
        for subset in subsets:
            # Endpoints leave an unnamed port's name out; a slice's port always has one ("" when
            # unnamed), and kubectl 1.32+'s `describe service` dereferences it.
            ports = [{"name": port.get("name", ""), **port} for port in subset["ports"]]
            for ready_key, ready in (("addresses", True), ("notReadyAddresses", False)):
                for address in subset.get(ready_key) or []:
                    endpoints.append(
                        {
                            "addresses": [address["ip"]],
                            "conditions": {"ready": ready, "serving": ready, "terminating": False},
                            "nodeName": address.get("nodeName"),
                            "targetRef": address.get("targetRef"),
                        }
                    )
        for port_key, address, serving in terminating:
            if not ports:
                ports = [{"name": n, "port": p, "protocol": proto} for n, p, proto in port_key]
            endpoints.append(
                {
                    "addresses": [address["ip"]],
                    "conditions": {"ready": False, "serving": serving, "terminating": True},
                    "nodeName": address.get("nodeName"),
                    "targetRef": address.get("targetRef"),
                }
            )
        labels = slice_labels(service)
        body: dict[str, Any] = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": slice_name,
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": [owner_reference(service)],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        }
        existing = self.ctx.store.get("endpointslices.discovery.k8s.io", namespace, slice_name)
        if existing is None:
            self.ctx.store.create("endpointslices.discovery.k8s.io", body)
        elif (
            existing.get("endpoints"),
            existing.get("ports"),
            existing["metadata"].get("labels"),
        ) != (
            endpoints,
            ports,
            labels,
        ):
            metadata = {**existing["metadata"], "labels": labels}
            self.ctx.store.replace(
                "endpointslices.discovery.k8s.io",
                {**existing, "metadata": metadata, "endpoints": endpoints, "ports": ports},
            )


def slice_labels(service: dict[str, Any]) -> dict[str, str]:
    """An EndpointSlice's labels as the EndpointSlice controller sets them: the Service's own
    (kept in step with it), the headless mark, and the two it reserves for itself."""
    labels = {
        str(k): str(v)
        for k, v in (service["metadata"].get("labels") or {}).items()
        if k not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL)
    }
    if (service.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS_LABEL] = ""
    labels[SERVICE_NAME_LABEL] = str(service["metadata"]["name"])
    labels[MANAGED_BY_LABEL] = SLICE_CONTROLLER
    return labels


def network_policy_allows(
    ctx: ControllerContext, caller: dict[str, Any] | None, callee: dict[str, Any], port: int
) -> bool:
    """Whether ``caller`` (None: outside) may reach ``callee`` on TCP ``port``: the caller's
    egress policies must let it out and the callee's ingress policies let it in."""
    if caller is not None and not egress_allows(ctx, caller, callee, port, "TCP"):
        return False
    return _ingress_allows(ctx, caller, callee, port)


def egress_allows(
    ctx: ControllerContext,
    caller: dict[str, Any],
    callee: dict[str, Any],
    port: int,
    protocol: str,
) -> bool:
    """Whether the caller's egress policies let it reach ``callee`` on ``port``/``protocol``.
    A pod no Egress policy selects may go anywhere; one that is selected may only go where
    some rule of those policies lets it (an Egress policy without rules denies everything,
    DNS included — the usual way an egress lockdown breaks a whole service)."""
    namespace = caller["metadata"]["namespace"]
    policies = _egress_policies(ctx, caller)
    if not policies:
        return True
    for policy in policies:
        for rule in policy["spec"].get("egress") or []:
            ports = rule.get("ports") or []
            if ports and not any(
                (entry.get("protocol") or "TCP") == protocol
                and (
                    entry.get("port") is None
                    or entry.get("port") == port
                    or resolve_target_port(callee, entry.get("port")) == port
                    or (
                        isinstance(entry.get("port"), int)
                        and entry["port"] <= port <= int(entry.get("endPort") or entry["port"])
                    )
                )
                for entry in ports
            ):
                continue
            peers = rule.get("to")
            if not peers:
                return True
            if any(_peer_matches(ctx, peer, callee, namespace) for peer in peers):
                return True
    return False


def _egress_policies(ctx: ControllerContext, pod: dict[str, Any]) -> list[dict[str, Any]]:
    labels = pod["metadata"].get("labels") or {}
    return [
        p
        for p in ctx.store.list_objects(
            "networkpolicies.networking.k8s.io", pod["metadata"]["namespace"]
        )
        if matches_labels(label_selector_from_object(p["spec"].get("podSelector")), labels)
        and "Egress" in _policy_types(p)
    ]


def _policy_types(policy: dict[str, Any]) -> list[str]:
    declared = policy["spec"].get("policyTypes")
    if declared:
        return list(declared)
    return ["Ingress", "Egress"] if policy["spec"].get("egress") else ["Ingress"]


def dns_allowed(ctx: ControllerContext, caller: dict[str, Any]) -> bool:
    """Whether the caller's egress policies let it ask the cluster DNS (UDP 53 to a
    kube-dns pod); a cluster without DNS pods answers from nowhere, so nothing is blocked."""
    if not _egress_policies(ctx, caller):
        return True
    resolvers = [
        pod
        for pod in ctx.store.list_objects("pods", "kube-system")
        if (pod["metadata"].get("labels") or {}).get("k8s-app") == "kube-dns"
    ]
    if not resolvers:
        return egress_allows(ctx, caller, _ANY_RESOLVER, 53, "UDP")
    return any(egress_allows(ctx, caller, pod, 53, "UDP") for pod in resolvers)


_ANY_RESOLVER: dict[str, Any] = {
    "metadata": {"namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
    "spec": {},
}


def _ingress_allows(
    ctx: ControllerContext, caller: dict[str, Any] | None, callee: dict[str, Any], port: int
) -> bool:
    namespace = callee["metadata"]["namespace"]
    labels = callee["metadata"].get("labels") or {}
    policies = [
        p
        for p in ctx.store.list_objects("networkpolicies.networking.k8s.io", namespace)
        if matches_labels(label_selector_from_object(p["spec"].get("podSelector")), labels)
        and ("Ingress" in (p["spec"].get("policyTypes") or ["Ingress"]))
    ]
    if not policies:
        return True
    for policy in policies:
        for rule in policy["spec"].get("ingress") or []:
            ports = [p.get("port") for p in rule.get("ports") or []]
            if (
                ports
                and port not in ports
                and not any(
                    resolve_target_port(callee, p) == port for p in ports if isinstance(p, str)
                )
            ):
                continue
            peers = rule.get("from")
            if not peers:
                return True
            for peer in peers:
                if _peer_matches(ctx, peer, caller, namespace):
                    return True
    return False


def _peer_matches(
    ctx: ControllerContext, peer: dict[str, Any], caller: dict[str, Any] | None, namespace: str
) -> bool:
    if caller is None:
        return "ipBlock" in peer
    caller_ns = caller["metadata"]["namespace"]
    if "namespaceSelector" in peer:
        ns_obj = ctx.store.get("namespaces", "", caller_ns) or {"metadata": {}}
        ns_labels = {
            **(ns_obj["metadata"].get("labels") or {}),
            "kubernetes.io/metadata.name": caller_ns,
        }
        if not matches_labels(label_selector_from_object(peer["namespaceSelector"]), ns_labels):
            return False
    elif caller_ns != namespace:
        return False
    if "podSelector" in peer:
        return matches_labels(
            label_selector_from_object(peer["podSelector"]), caller["metadata"].get("labels") or {}
        )
    return "namespaceSelector" in peer


class QuotaAdmission:
    """Admission hook enforcing ResourceQuota on pod creation, as the real plugin words it."""

    TRACKED = ("pods", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory")

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def __call__(
        self, operation: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt.plural != "pods" or operation != "create":
            return
        namespace = obj["metadata"]["namespace"]
        for quota in self.ctx.store.list_objects("resourcequotas", namespace):
            hard = (quota.get("spec") or {}).get("hard") or {}
            used = usage(self.ctx, namespace)
            wanted = pod_usage(obj)
            for resource in self.TRACKED:
                if resource not in hard:
                    continue
                missing = missing_constraints(obj, hard)
                if missing:
                    raise ApiError(
                        403,
                        "Forbidden",
                        f'pods "{obj["metadata"]["name"]}" is forbidden: failed '
                        f"quota: {quota['metadata']['name']}: must specify {missing}",
                        kind="pods",
                        name=obj["metadata"]["name"],
                    )
                from lab.cluster import quantity

                limit = float(quantity.parse(hard[resource]))
                # Sums of float quantities drift (0.91 + 0.1 > 1.01): the API server compares
                # exact quantities, so a request that lands exactly on the limit is admitted.
                if used[resource] + wanted[resource] - limit > 1e-9 * max(1.0, limit):
                    raise ApiError(
                        403,
                        "Forbidden",
                        f'pods "{obj["metadata"]["name"]}" is forbidden: exceeded quota: '
                        f"{quota['metadata']['name']}, requested: {resource}="
                        f"{_fmt(resource, wanted[resource])}, used: {resource}="
                        f"{_fmt(resource, used[resource])}, limited: {resource}="
                        f"{hard[resource]}",
                        kind="pods",
                        name=obj["metadata"]["name"],
                    )


def missing_constraints(pod: dict[str, Any], hard: dict[str, Any]) -> str:
    """What the quota's pod evaluator says when a container does not state a resource the
    quota limits (``requests.cpu for: web; limits.memory for: web,sidecar``), or ''."""
    missing: dict[str, list[str]] = {}
    for resource in sorted(hard):
        section, _, name = resource.partition(".")
        if not name:  # "cpu" and "memory" mean requests
            section, name = "requests", section
        if name not in ("cpu", "memory") or section not in ("requests", "limits"):
            continue
        for container in (pod.get("spec") or {}).get("containers") or []:
            resources = container.get("resources") or {}
            stated = (resources.get(section) or {}).get(name)
            if stated is None and section == "requests":
                stated = (resources.get("limits") or {}).get(name)  # defaulted from limits
            if stated is None:
                missing.setdefault(resource, []).append(str(container.get("name")))
    return "; ".join(f"{r} for: {','.join(sorted(names))}" for r, names in missing.items())


def _fmt(resource: str, value: float) -> str:
    if resource == "pods":
        return str(int(value))
    if resource.endswith("cpu"):
        return f"{int(value * 1000)}m"
    return f"{int(value / 2**20)}Mi"


def pod_usage(pod: dict[str, Any]) -> dict[str, float]:
    from lab.cluster import quantity

    totals = {
        "pods": 1.0,
        "requests.cpu": 0.0,
        "requests.memory": 0.0,
        "limits.cpu": 0.0,
        "limits.memory": 0.0,
        "has_limits.cpu": 1.0,
        "has_limits.memory": 1.0,
    }
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            for name in ("cpu", "memory"):
                value = (resources.get(section) or {}).get(name)
                if value is None and section == "requests":
                    value = (resources.get("limits") or {}).get(name)
                if value is None:
                    if section == "limits":
                        totals[f"has_limits.{name}"] = 0.0
                    continue
                totals[f"{section}.{name}"] += float(quantity.parse(value))
    return totals


def usage(ctx: ControllerContext, namespace: str) -> dict[str, float]:
    totals = dict.fromkeys(QuotaAdmission.TRACKED, 0.0)
    for pod in ctx.store.list_objects("pods", namespace):
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for name, value in pod_usage(pod).items():
            if name in totals:
                totals[name] += value
    return totals


class QuotaController:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        for quota in self.ctx.store.iter_all("resourcequotas"):
            hard = (quota.get("spec") or {}).get("hard") or {}
            used = usage(self.ctx, quota["metadata"]["namespace"])
            status = {
                "hard": dict(hard),
                "used": {k: _fmt(k, used[k]) if k in used else "0" for k in hard},
            }
            self.ctx.write_status("resourcequotas", quota, status)
