"""The playground's HTTP server: the Web API under ``/api/``, response URLs, the Socket Mode
websocket, the control API and the browser page, on one port. ``PlaygroundServer.start()``
runs it on a background thread (tests, the demo); ``run_forever`` runs it in the foreground
for ``stratus lab slack``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from lab.slack import files
from lab.slack.control import Control
from lab.slack.delivery import Deliverer
from lab.slack.faults import FaultMenu
from lab.slack.methods import METHODS
from lab.slack.responses import response_url_routes
from lab.slack.socket_mode import SocketHub
from lab.slack.webapi import WebApi
from lab.slack.workspace import PlaygroundConfig, Workspace

STATIC = Path(__file__).parent / "static"


class Playground:
    """The pieces of one playground, wired into an aiohttp application."""

    def __init__(self, config: PlaygroundConfig, menu: FaultMenu | None = None) -> None:
        self.url = ""
        self.workspace = Workspace(config)
        self.hub = SocketHub(self.workspace)
        self.deliverer = Deliverer(self.workspace, self.hub)
        self.webapi = WebApi(
            self.workspace,
            {**METHODS, **files.METHODS},
            base_url=lambda: self.url,
            socket_url=lambda: self.hub.new_url(self.url),
        )
        self.control = Control(self.workspace, self.deliverer, self.hub, lambda: self.url, menu)
        self.control.on_reset.append(self.webapi.limiter.reset)
        self.app = web.Application(client_max_size=4 * 1024 * 1024)
        self.app.add_routes(self.webapi.routes())
        self.app.add_routes(response_url_routes(self.workspace))
        self.app.add_routes(files.file_routes(self.workspace))
        self.app.add_routes(self.hub.routes())
        self.app.add_routes(self.control.routes())
        self.app.add_routes(
            [
                web.get("/", self._page),
                web.get("/favicon.ico", self._favicon),
                web.get("/archives/{channel}/{message}", self._permalink),
                web.static("/static", STATIC),
            ]
        )
        self.app.on_shutdown.append(self._shutdown)

    async def _page(self, request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "index.html")

    async def _favicon(self, request: web.Request) -> web.FileResponse:
        # Browsers ask for /favicon.ico whatever the page says; an SVG answers both.
        return web.FileResponse(STATIC / "favicon.svg", headers={"Content-Type": "image/svg+xml"})

    async def _permalink(self, request: web.Request) -> web.Response:
        channel = request.match_info["channel"]
        digits = request.match_info["message"].removeprefix("p")
        ts = f"{digits[:-6]}.{digits[-6:]}"
        raise web.HTTPFound(f"/?channel={channel}&ts={ts}")

    async def _shutdown(self, app: web.Application) -> None:
        await self.hub.close()
        await self.deliverer.close()


class PlaygroundServer:
    """A playground on 127.0.0.1 (a free port by default) on its own thread or in the
    foreground."""

    def __init__(
        self,
        config: PlaygroundConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        menu: FaultMenu | None = None,
    ) -> None:
        self.config = config or PlaygroundConfig()
        self.menu = menu
        self.host = host
        self.port = port
        self.url = ""
        self.playground: Playground | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None

    @property
    def api_url(self) -> str:
        """The Web API base URL for ``WebClient(base_url=...)`` (with its trailing slash)."""
        return f"{self.url}/api/"

    @property
    def bot_token(self) -> str:
        return self.config.bot_token

    @property
    def app_token(self) -> str:
        return self.config.app_token

    @property
    def signing_secret(self) -> str:
        return self.config.signing_secret

    async def _main(self, on_ready: Callable[[PlaygroundServer], None] | None = None) -> None:
        self._stopping = asyncio.Event()
        self.playground = Playground(self.config, self.menu)
        runner = web.AppRunner(self.playground.app, access_log=None, shutdown_timeout=0.2)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True)
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        self.url = f"http://{self.host}:{self.port}"
        self.playground.url = self.url
        self._ready.set()
        if on_ready is not None:
            on_ready(self)
        try:
            await self._stopping.wait()
        finally:
            await runner.cleanup()

    def _thread_main(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._main())
        except BaseException as exc:  # reported to start() instead of dying silently
            self._error = exc
            self._ready.set()
        finally:
            # A browser's long-poll still open at shutdown leaves its handler task cancelling;
            # closing the loop under it printed "Task was destroyed but it is pending!" as the
            # demo stopped. Let every task finish its cancellation first, as asyncio.run does.
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    def start(self, timeout: float = 30.0) -> PlaygroundServer:
        self._thread = threading.Thread(
            target=self._thread_main, name="stratus-slack-playground", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("the Slack playground did not start in time")
        if self._error is not None:
            raise RuntimeError(f"the Slack playground failed to start: {self._error}") from (
                self._error
            )
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop may already be closed
                self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def run_forever(self, on_ready: Callable[[PlaygroundServer], None]) -> None:
        """Foreground mode for ``stratus lab slack``: returns when interrupted."""
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(self._main(on_ready))

    def __enter__(self) -> PlaygroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
