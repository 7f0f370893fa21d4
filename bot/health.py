"""``/healthz``, ``/readyz`` and ``/metrics`` on a listener of their own, in Socket and HTTP
mode alike: the kubelet's probes and Prometheus's scrapes never share a port (or a
signature check) with Slack's requests.

Thin: the probes are ``operations.probes`` (and the bot's own Slack probe), the judgement is
``operations.readiness``, the figures are ``operations.metrics``. ``/healthz`` is answered on
the bot's event loop, so it answers only while that loop does — the liveness the kubelet
needs; it reads nothing else, so a slow database or cluster never gets the pod restarted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from bot.runtime import Runtime
from operations import metrics, probes, readiness
from operations.readiness import Readiness
from store.errors import Remedy, StratusError
from tools.env import integer

log = logging.getLogger("stratus.health")
DEFAULT_PORT = 8080
JSON = "application/json"


class HealthListenError(StratusError, code="health_listen", remedy=Remedy.FIX_CONFIG):
    """The health endpoints' address cannot be listened on (taken, or not this machine's)."""


class HealthConfig(BaseModel):
    """``STRATUS_HEALTH_HOST`` / ``STRATUS_HEALTH_PORT`` (0: a free port, printed)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> HealthConfig:
        values = os.environ if env is None else env
        # In a pod the kubelet probes the pod's own address, so every interface; on a
        # workstation only this machine.
        default_host = "0.0.0.0" if values.get("KUBERNETES_SERVICE_HOST") else "127.0.0.1"
        return cls(
            host=values.get("STRATUS_HEALTH_HOST", "").strip() or default_host,
            port=integer(
                "STRATUS_HEALTH_PORT",
                default=DEFAULT_PORT,
                low=0,
                high=65535,
                what="a port",
                env=values,
            ),
        )


class HealthServer:
    def __init__(
        self,
        runtime: Runtime,
        *,
        slack: Callable[[], Awaitable[str | None]],
        config: HealthConfig,
        probe_seconds: float = probes.PROBE_SECONDS,
    ) -> None:
        self.rt = runtime
        self.slack = slack
        self.config = config
        self.probe_seconds = probe_seconds
        self._runner: web.AppRunner | None = None
        self.url = ""

    def web_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def start(self) -> None:
        self._runner = web.AppRunner(self.web_app(), access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.host, self.config.port)
        try:
            await site.start()
        except OSError as error:
            await self._runner.cleanup()
            self._runner = None
            raise HealthListenError(
                f"cannot listen on {self.config.host}:{self.config.port} for the health "
                f"endpoints: {error.strerror or error}",
                subject="STRATUS_HEALTH_PORT",
            ) from error
        server = getattr(site, "_server", None)
        port = server.sockets[0].getsockname()[1] if server and server.sockets else 0
        self.url = f"http://{self.config.host}:{port}"
        log.info("health endpoints on %s (/healthz /readyz /metrics)", self.url)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _probe(self, name: str, probe: Awaitable[str | None]) -> readiness.Check:
        try:
            outcome: readiness.Outcome = await asyncio.wait_for(probe, self.probe_seconds + 1)
        except Exception as error:  # a probe's failure is its check's answer, never a 500
            outcome = error
        return readiness.check_from(name, outcome)

    async def readiness(self) -> Readiness:
        rt = self.rt
        checks = await asyncio.gather(
            self._probe("database", rt.call(probes.database, rt.store, timeout=self.probe_seconds)),
            self._probe("policies", rt.call(probes.policies, rt.policy)),
            self._probe("cluster", rt.call(probes.cluster, rt.kube, timeout=self.probe_seconds)),
            self._probe("slack", self.slack()),
        )
        return readiness.judge(checks)

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.json_response({"alive": True})

    async def _readyz(self, request: web.Request) -> web.Response:
        judged = await self.readiness()
        if not judged.ready:
            log.warning("not ready: %s", ", ".join(judged.failed()))
        return web.Response(status=judged.status, text=json.dumps(judged.body()), content_type=JSON)

    async def _metrics(self, request: web.Request) -> web.Response:
        judged = await self.readiness()
        collector = metrics.StoreCollector(
            self.rt.store, now=self.rt.store.clock.now, readiness=lambda: judged
        )
        body = await self.rt.call(metrics.exposition, collector)
        return web.Response(body=body, headers={"Content-Type": metrics.CONTENT_TYPE})
