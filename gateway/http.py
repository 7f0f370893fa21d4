"""The streamable HTTP transport on its own listener, behind a bearer-token gate.

Every HTTP request must carry ``Authorization: Bearer <token>`` of a configured client, or it
is answered 401 before the SDK sees it; the tools check the token again on each call (a
session opened before a token was revoked does not outlive it). Served by uvicorn inside the
caller's event loop (``stratus serve`` runs it beside the bot); its signal handling is left
to the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway import server, text
from store.errors import StratusError

PATH = "/mcp"
ENV_HOST = "STRATUS_MCP_HOST"
ENV_PORT = "STRATUS_MCP_PORT"
DEFAULT_PORT = 8765


class BearerGate:
    """ASGI middleware: no valid bearer token, no access (401)."""

    def __init__(self, app: ASGIApp, gateway: server.Gateway) -> None:
        self.app = app
        self.gateway = gateway

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            token = server.bearer(headers.get(b"authorization", b"").decode("latin-1"))
            try:
                await anyio.to_thread.run_sync(self.gateway.registry.authenticate, token)
            except StratusError as exc:
                response = JSONResponse(
                    {"error": exc.code, "message": text.refused(exc)},
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="stratus"'},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _Quiet(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the caller (``stratus serve``) owns SIGINT and SIGTERM


@dataclass
class HttpGateway:
    """The gateway over streamable HTTP at ``http://host:port/mcp``."""

    gateway: server.Gateway
    host: str = "127.0.0.1"
    port: int = 0
    _server: uvicorn.Server | None = None
    _task: asyncio.Task[Any] | None = field(default=None, repr=False)

    _socket: socket.socket | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        assert self._socket is not None
        port = self._socket.getsockname()[1]
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{port}{PATH}"

    async def start(self) -> str:
        """Listen, then serve; a port that is taken raises ``OSError`` here (bound before
        uvicorn, which would otherwise exit the whole process)."""
        self._socket = socket.create_server((self.host, self.port), reuse_port=False)
        mcp = server.build(self.gateway)
        app = BearerGate(
            mcp.streamable_http_app(streamable_http_path=PATH, host=self.host), self.gateway
        )
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self._server = _Quiet(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        while not self._server.started:
            if self._task.done():
                self._task.result()  # it could not start: say why
                raise RuntimeError("the MCP listener stopped before it started")
            await asyncio.sleep(0.02)
        return self.url

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._server = None
            self._task = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None


def from_env(gateway: server.Gateway) -> HttpGateway:
    """The listener ``STRATUS_MCP_HOST`` (default 127.0.0.1) and ``STRATUS_MCP_PORT`` (default
    8765, 0 for any free port) name."""
    host = os.environ.get(ENV_HOST, "127.0.0.1").strip() or "127.0.0.1"
    raw = os.environ.get(ENV_PORT, str(DEFAULT_PORT)).strip()
    if not raw.isdigit() or int(raw) > 65535:
        raise ValueError(f"{ENV_PORT}={raw!r}: expected a port number (0 for any free port)")
    return HttpGateway(gateway, host=host, port=int(raw))
