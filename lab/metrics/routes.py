"""The scrape endpoints on the lab's HTTP server, authenticated and authorized as the API is.

Paths (see ``lab.metrics``): the kube-state-metrics Service through the service proxy, each
node's cAdvisor through the node proxy, and the apps' metrics under ``/lab/v1``.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from lab.cluster import rbac, resources
from lab.cluster.api import ApiService
from lab.cluster.errors import ApiError
from lab.controllers.kubelet import Kubelet
from lab.controllers.traffic import TrafficSimulator
from lab.metrics.apps import AppsCollector
from lab.metrics.cadvisor import CadvisorCollector
from lab.metrics.kube_state import KubeStateCollector

KUBE_STATE_PATH = (
    "/api/v1/namespaces/kube-system/services/kube-state-metrics:http-metrics/proxy/metrics"
)
CADVISOR_PATH = "/api/v1/nodes/{node}/proxy/metrics/cadvisor"
APPS_PATH = "/lab/v1/metrics/apps"


class MetricsSource(Protocol):
    """What the endpoints read: the cluster's API, kubelet and traffic model."""

    api: ApiService
    kubelet: Kubelet
    traffic: TrafficSimulator

    def now(self) -> float: ...


class _Collector(Protocol):
    def collect(self) -> Any: ...


def exposition(collector: _Collector) -> bytes:
    """The collector's series in the Prometheus text format (version 0.0.4)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry)


def _text(body: bytes) -> web.Response:
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})


def _status(error: ApiError) -> web.Response:
    return web.Response(
        body=json.dumps(error.status()).encode(),
        status=error.code,
        content_type="application/json",
    )


class MetricsEndpoints:
    def __init__(self, source: MetricsSource) -> None:
        self.source = source

    def _authorize(self, request: web.Request, attrs: rbac.Attributes) -> None:
        access = self.source.api.access
        access.check(access.authenticate(request.headers.get("Authorization")), attrs)

    async def kube_state(self, request: web.Request) -> web.Response:
        try:
            self._authorize(
                request,
                rbac.Attributes(
                    "get", "", "services", "proxy", "kube-system", "kube-state-metrics:http-metrics"
                ),
            )
        except ApiError as error:
            return _status(error)
        return _text(exposition(KubeStateCollector(self.source.api.store)))

    async def cadvisor(self, request: web.Request) -> web.Response:
        node = request.match_info["node"]
        try:
            self._authorize(request, rbac.Attributes("get", "", "nodes", "proxy", "", node))
            self.source.api.get(resources.by_kind("Node"), "", node)
        except ApiError as error:
            return _status(error)
        return _text(exposition(CadvisorCollector(self.source.kubelet, node, self.source.now())))

    async def apps(self, request: web.Request) -> web.Response:
        try:
            self._authorize(request, rbac.Attributes("get", path=request.path))
        except ApiError as error:
            return _status(error)
        return _text(exposition(AppsCollector(self.source.traffic, self.source.kubelet)))


def metrics_routes(source: MetricsSource) -> list[web.RouteDef]:
    endpoints = MetricsEndpoints(source)
    return [
        web.get(KUBE_STATE_PATH, endpoints.kube_state),
        web.get(CADVISOR_PATH, endpoints.cadvisor),
        web.get(APPS_PATH, endpoints.apps),
    ]
