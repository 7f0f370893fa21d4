"""Starting and stopping a lab: the HTTP server on 127.0.0.1, its kubeconfig, its heartbeat.

``LabServer.start()`` runs the lab on a background thread (tests, the demo); ``run_forever``
runs it in the foreground for ``stratus lab up``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from lab.cluster import tls
from lab.cluster.clock import INSTANT, REALTIME
from lab.cluster.server import ApiHttpServer
from lab.cluster_sim import Cluster
from lab.control import control_routes
from lab.controllers.process_spec import Address
from lab.metrics.routes import metrics_routes

LAB_TOKEN = "stratus-lab-token"
CONTEXT = "stratus-lab"


def kubeconfig(
    url: str,
    namespace: str = "default",
    *,
    token: str = LAB_TOKEN,
    user: str = "stratus-lab-admin",
    ca_pem: str | None = None,
) -> dict[str, Any]:
    """A kubeconfig for the lab: the admin token by default, or any other bearer token
    (a ServiceAccount's from ``kubectl create token``); ``ca_pem`` for a lab on HTTPS."""
    cluster: dict[str, Any] = {"server": url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem.encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "namespace": namespace, "user": user},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(
    path: Path,
    url: str,
    namespace: str = "default",
    *,
    token: str = LAB_TOKEN,
    user: str = "stratus-lab-admin",
    ca_pem: str | None = None,
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    config = kubeconfig(url, namespace, token=token, user=user, ca_pem=ca_pem)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


def server_url_from_kubeconfig(path: Path) -> str:
    """The lab's URL from a kubeconfig file, with a clear error when it is not one."""
    try:
        config = yaml.safe_load(path.read_text())
    except FileNotFoundError as exc:
        raise LabNotRunning(
            f"no kubeconfig at {path}: start the lab with 'stratus lab up'"
        ) from exc
    except yaml.YAMLError as exc:
        raise LabNotRunning(f"{path} is not a kubeconfig file: {exc}") from exc
    try:
        current = config["current-context"]
        context = next(c["context"] for c in config["contexts"] if c["name"] == current)
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        return str(cluster["server"]).rstrip("/")
    except (KeyError, TypeError, StopIteration) as exc:
        raise LabNotRunning(f"{path} has no usable current context") from exc


class LabNotRunning(Exception):
    """The lab cannot be reached or its kubeconfig is unusable."""


class LabServer:
    def __init__(
        self,
        *,
        mode: str = INSTANT,
        apps: list[str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        rbac: bool = False,
        state_dir: Path | None = None,
    ) -> None:
        if mode not in (INSTANT, REALTIME):
            raise ValueError(f"unknown clock mode {mode!r}")
        self.mode = mode
        self.apps = list(apps or [])
        self.host = host
        self.port = port
        self.rbac = rbac
        # Where pods that run real processes keep their files (default: a temporary folder).
        self.state_dir = state_dir
        # kubectl sends tokens only over TLS: a lab that checks them serves HTTPS.
        self.tls = tls.self_signed(host) if rbac else None
        self.cluster: Cluster | None = None
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None

    async def _main(self, on_ready: Callable[[LabServer], None] | None = None) -> None:
        self._stopping = asyncio.Event()
        self.cluster = Cluster(mode=self.mode)
        # The admin kubeconfig's token is system:masters; with RBAC on, other tokens are checked.
        self.cluster.api.access.authn.admin_tokens.add(LAB_TOKEN)
        self.cluster.api.access.enabled = self.rbac
        for app in self.apps:
            self.cluster.install_app(app)
        http = ApiHttpServer(
            self.cluster, control_routes(self.cluster) + metrics_routes(self.cluster)
        )
        runner = web.AppRunner(http.app, access_log=None, shutdown_timeout=0.2)
        await runner.setup()
        site = web.TCPSite(
            runner,
            self.host,
            self.port,
            reuse_address=True,
            ssl_context=self.tls.context if self.tls else None,
        )
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        self.url = f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"
        # In-cluster clients (the Stratus pod) reach the API server here, trusting its cert.
        self.cluster.kubelet.processes.configure(
            api=Address(self.host, self.port), ca_pem=self.ca_pem, state_dir=self.state_dir
        )
        # default/kubernetes points at where the API really listens, as in a cluster.
        self.cluster.apiserver_endpoints.serve_at(self.host, self.port)
        heartbeat = None
        if self.mode == REALTIME:
            heartbeat = asyncio.create_task(self.cluster.run_realtime())
        self._ready.set()
        if on_ready is not None:
            on_ready(self)
        try:
            await self._stopping.wait()
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await heartbeat
            # Pods' processes stop first, with their grace period, while the API still answers.
            await self.cluster.kubelet.processes.shutdown()
            if self.tls is not None and runner.server is not None:
                # A client keeping an idle TLS connection open would hold its graceful close
                # (close_notify, then up to 30 s for the answer) past the loop's end, leaving
                # the socket to the garbage collector: a stopping lab cuts them instead.
                for handler in list(runner.server.connections):
                    if handler.transport is not None:
                        handler.transport.abort()
            await runner.cleanup()

    def _thread_main(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as exc:  # reported to start() instead of dying silently
            self._error = exc
            self._ready.set()
        finally:
            self._loop.close()

    def start(self, timeout: float = 30.0) -> LabServer:
        self._thread = threading.Thread(target=self._thread_main, name="stratus-lab", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("the lab did not start in time")
        if self._error is not None:
            raise RuntimeError(f"the lab failed to start: {self._error}") from self._error
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            grace = self.cluster.kubelet.processes.longest_grace() if self.cluster else 0.0
            self._thread.join(timeout=10 + grace)

    @property
    def ca_pem(self) -> str | None:
        """The certificate a client must trust when the lab serves HTTPS (RBAC on)."""
        return self.tls.cert_pem if self.tls else None

    def write_kubeconfig(
        self,
        path: Path,
        namespace: str = "default",
        *,
        token: str = LAB_TOKEN,
        user: str = "stratus-lab-admin",
    ) -> Path:
        """A kubeconfig for this lab (its URL and certificate) with the given token."""
        return write_kubeconfig(
            path, self.url, namespace, token=token, user=user, ca_pem=self.ca_pem
        )

    def run_forever(self, on_ready: Callable[[LabServer], None]) -> None:
        """Foreground mode for ``stratus lab up``: returns when interrupted (SIGINT) or asked
        to stop (SIGTERM) — either way after its pods' processes have stopped."""

        def ready(running: LabServer) -> None:
            if self._stopping is not None:
                # SIGTERM ends the lab as SIGINT does, so no pod's process outlives it.
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    asyncio.get_running_loop().add_signal_handler(
                        signal.SIGTERM, self._stopping.set
                    )
            on_ready(running)

        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(self._main(ready))

    def call(self, func: Callable[[Cluster], Any]) -> Any:
        """Run a function against the cluster on the lab's own thread (benchmarks, fixtures)."""
        if self._loop is None or self.cluster is None:
            raise RuntimeError("the lab is not running")
        cluster = self.cluster

        async def run() -> Any:
            return func(cluster)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=60)
