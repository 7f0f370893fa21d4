"""The ``kubernetes`` Service's endpoints: where the API server really listens.

kube-apiserver keeps ``default/kubernetes`` pointing at itself (its endpoint reconciler):
the Endpoints and the EndpointSlice named ``kubernetes`` carry its address and secure port,
and the Service's target port is that port. A client inside the cluster finds the API
through them (``KUBERNETES_SERVICE_HOST``/``PORT`` name the same server), so the lab writes
its own address and port there once it is serving, and puts them back when they are deleted
or changed, as the API server does. Before the lab serves (a Cluster built without a server),
the base manifest's placeholder address stays.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from lab.controllers.context import ControllerContext

NAMESPACE = "default"
NAME = "kubernetes"
SLICES = "endpointslices.discovery.k8s.io"


def advertised_ip(host: str) -> str:
    """The IPv4 address clients reach a server bound to ``host`` at (an unspecified or named
    bind address is reached on the loopback)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "127.0.0.1"
    if address.version != 4 or address.is_unspecified:
        return "127.0.0.1"
    return str(address)


def desired_endpoints(ip: str, port: int) -> list[dict[str, Any]]:
    return [
        {"addresses": [{"ip": ip}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}
    ]


def desired_slice(ip: str, port: int) -> dict[str, Any]:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"kubernetes.io/service-name": NAME},
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }


class ApiServerEndpoints:
    """kube-apiserver's endpoint reconciler for its own Service."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.address: tuple[str, int] | None = None

    def serve_at(self, host: str, port: int) -> None:
        self.address = (advertised_ip(host), port)
        self.reconcile()

    def reconcile(self) -> None:
        if self.address is None:
            return
        service = self.ctx.store.get("services", NAMESPACE, NAME)
        if service is None:
            return
        ip, port = self.address
        self._sync_service(service, port)
        self._sync_endpoints(ip, port)
        self._sync_slice(ip, port)

    def _sync_service(self, service: dict[str, Any], port: int) -> None:
        ports = (service.get("spec") or {}).get("ports") or []
        wanted = [{**p, "targetPort": port} if p.get("name") == "https" else p for p in ports]
        if wanted != ports:
            self.ctx.write_object(
                "services", {**service, "spec": {**service["spec"], "ports": wanted}}
            )

    def _sync_endpoints(self, ip: str, port: int) -> None:
        subsets = desired_endpoints(ip, port)
        existing = self.ctx.store.get("endpoints", NAMESPACE, NAME)
        if existing is None:
            self.ctx.store.create(
                "endpoints",
                {
                    "apiVersion": "v1",
                    "kind": "Endpoints",
                    "metadata": {
                        "name": NAME,
                        "namespace": NAMESPACE,
                        "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
                    },
                    "subsets": subsets,
                },
            )
        elif existing.get("subsets") != subsets:
            self.ctx.write_object("endpoints", {**existing, "subsets": subsets})

    def _sync_slice(self, ip: str, port: int) -> None:
        wanted = desired_slice(ip, port)
        existing = self.ctx.store.get(SLICES, NAMESPACE, NAME)
        if existing is None:
            self.ctx.store.create(SLICES, wanted)
        elif (existing.get("endpoints"), existing.get("ports")) != (
            wanted["endpoints"],
            wanted["ports"],
        ):
            self.ctx.write_object(
                SLICES, {**existing, "endpoints": wanted["endpoints"], "ports": wanted["ports"]}
            )
