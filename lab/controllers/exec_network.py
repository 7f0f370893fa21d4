"""The cluster network as a command inside a container sees it: names through the cluster DNS
(``web``, ``web.hotel``, ``web.hotel.svc.cluster.local``), a Service's ready endpoints behind its
ClusterIP, pod IPs, and what the port at the end answers (``port_answers``).

This is what ``wget``/``curl``/``nslookup`` in ``kubectl exec`` use, so a verification such as
``kubectl exec client -- wget -qO- http://web`` fails while the Service selects no ready pod
and answers once it does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lab.cluster.store import ObjectStore
from lab.controllers.port_answers import PortTarget, http_answer
from lab.controllers.services import resolve_target_port

DOMAIN = "svc.cluster.local"
DNS_SERVER = "10.96.0.10"


@dataclass(frozen=True)
class Reply:
    """An HTTP exchange's outcome: an answer, or why there is none."""

    status: int = 0
    reason: str = ""
    headers: str = ""
    body: bytes = b""
    failure: str = ""  # "resolve", "refused" or "empty" (connected, nothing came back)
    address: str = ""


@dataclass
class ClusterNetwork:
    store: ObjectStore
    port_target: Callable[[dict[str, Any], int], PortTarget]
    namespace: str  # the pod's, for short names
    own_pod: dict[str, Any]

    def lookup(self, host: str) -> tuple[str, str] | None:
        """(fully qualified name, IP) of a host, or None when the DNS has no such name."""
        if host in ("localhost", "127.0.0.1"):
            return host, "127.0.0.1"
        if all(part.isdigit() for part in host.split(".")) and host.count(".") == 3:
            return host, host
        parts = host.rstrip(".").split(".")
        name = parts[0]
        namespace = parts[1] if len(parts) > 1 else self.namespace
        if len(parts) > 2 and ".".join(parts[2:]) not in ("svc", DOMAIN):
            return None
        service = self.store.get("services", namespace, name)
        if service is None:
            return None
        ip = str((service.get("spec") or {}).get("clusterIP") or "")
        return f"{name}.{namespace}.{DOMAIN}", ip

    def connect(self, host: str, port: int) -> tuple[PortTarget | None, str, str]:
        """(what answers, why nothing does, the address) of a TCP connection to host:port;
        the failure is "resolve" or "refused" (no ready endpoint, nobody listening)."""
        found = self.lookup(host)
        if found is None:
            return None, "resolve", ""
        _, ip = found
        pod, target_port = self._backend(ip, port)
        if pod is None or target_port is None:
            return None, "refused", ip
        target = self.port_target(pod, target_port)
        if target.refusal:
            return None, "refused", ip
        return target, "", ip

    def get(self, host: str, port: int, request: bytes) -> Reply:
        target, failure, ip = self.connect(host, port)
        if target is None:
            return Reply(failure=failure, address=ip)
        answer = http_answer(target, request)
        if not answer:
            return Reply(failure="empty", address=ip)
        head, _, body = answer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        _, code, reason = [*lines[0].split(" ", 2), "", ""][:3]
        return Reply(int(code), reason, "\n".join(lines), body, address=ip)

    def _backend(self, ip: str, port: int) -> tuple[dict[str, Any] | None, int | None]:
        if ip == "127.0.0.1":
            return self.own_pod, port
        for pod in self.store.iter_all("pods"):
            if (pod.get("status") or {}).get("podIP") == ip:
                return pod, port
        for service in self.store.iter_all("services"):
            spec = service.get("spec") or {}
            if spec.get("clusterIP") != ip:
                continue
            wanted = next((p for p in spec.get("ports") or [] if p.get("port") == port), None)
            if wanted is None:
                return None, None
            meta = service["metadata"]
            endpoints = self.store.get("endpoints", meta["namespace"], meta["name"]) or {}
            for subset in endpoints.get("subsets") or []:
                for address in subset.get("addresses") or []:
                    ref = address.get("targetRef") or {}
                    backend = self.store.get("pods", meta["namespace"], str(ref.get("name", "")))
                    if backend is not None:
                        target = wanted.get("targetPort", wanted.get("port"))
                        return backend, resolve_target_port(backend, target)
            return None, None
        return None, None
