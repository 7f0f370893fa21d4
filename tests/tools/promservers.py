"""Prometheus processes and misbehaving Prometheus look-alikes for the tests, over real HTTP.

``real_prometheus`` runs Debian's ``/usr/bin/prometheus`` on a free port with a configuration
that scrapes itself (so real series exist before the lab serves its own metrics).
``BadPrometheus`` is a tiny aiohttp server (in its own thread) that answers the way a broken
Prometheus does: it hangs, trickles its body or its headers a byte at a time, answers 500,
answers the API's error JSON, answers HTML, answers an endless body, or answers a valid result —
and records the headers it was sent.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import requests
from aiohttp import web

Mode = Literal[
    "hang", "trickle", "trickle_headers", "http500", "error_json", "garbage", "huge", "ok"
]
PROMETHEUS = "/usr/bin/prometheus"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def unavailable() -> str | None:
    if shutil.which(PROMETHEUS) is None:
        return "Debian's prometheus package is not installed (apt-get install prometheus)"
    return None


@contextmanager
def real_prometheus(workdir: Path, *, scrape: str = "1s") -> Iterator[str]:
    """A real Prometheus scraping itself every ``scrape``; yields its URL."""
    port = free_port()
    config = workdir / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: {scrape}\n  evaluation_interval: {scrape}\n"
        "scrape_configs:\n  - job_name: prometheus\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{port}']\n"
    )
    log = (workdir / "prometheus.log").open("w")
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus did not start: {(workdir / 'prometheus.log')}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


VECTOR = {
    "status": "success",
    "data": {
        "resultType": "vector",
        "result": [{"metric": {"service": "geo"}, "value": [1700000000.0, "0.25"]}],
    },
}


@dataclass
class BadPrometheus:
    mode: Mode = "ok"
    tls: tuple[Path, Path] | None = None  # (certificate, key)
    seen: list[dict[str, str]] = field(default_factory=list)
    url: str = ""
    dripping: int = 0  # requests still being trickled (the client has not hung up)

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._release = asyncio.Event()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append({**dict(request.headers), "query": request.query.get("query", "")})
        if self.mode == "hang":
            # Hangs until the test ends (it releases every waiting request when stopping).
            await self._release.wait()
            return web.Response(status=503)
        if self.mode == "trickle":
            # Headers at once, then a promised 100 kB body one byte every 0.2 s: no single read
            # ever waits long, so only a deadline over the whole request stops it.
            response = web.StreamResponse(headers={"Content-Length": "100000"})
            await response.prepare(request)
            await self._drip(request, lambda: response.write(b" "))
            return response
        if self.mode == "trickle_headers":
            transport = request.transport
            assert transport is not None
            transport.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")

            async def one_byte() -> None:
                transport.write(b"a")

            await self._drip(request, one_byte)
            return web.Response(status=503)
        if self.mode == "http500":
            return web.Response(status=500, text="internal error")
        if self.mode == "error_json":
            return web.json_response(
                {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"},
                status=400,
            )
        if self.mode == "garbage":
            return web.Response(status=200, text="<html>login</html>", content_type="text/html")
        if self.mode == "huge":
            response = web.StreamResponse()
            await response.prepare(request)
            for _ in range(200):
                await response.write(b" " * 65536)
            return response
        return web.json_response(VECTOR)

    async def _drip(self, request: web.Request, write: Any) -> None:
        """Calls ``write`` every 0.2 s until the client goes away or the test ends."""
        self.dripping += 1
        try:
            while not self._release.is_set():
                transport = request.transport
                if transport is None or transport.is_closing():
                    return
                try:
                    await write()
                except (ConnectionError, RuntimeError):
                    return
                await asyncio.sleep(0.2)
        finally:
            self.dripping -= 1

    async def _start(self) -> str:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        context = None
        if self.tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"{'https' if context else 'http'}://127.0.0.1:{port}"

    def start(self) -> BadPrometheus:
        self._thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        async def finish() -> None:
            self._release.set()
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(finish(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def __enter__(self) -> BadPrometheus:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()


def self_signed(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "prom.crt", folder / "prom.key"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=prom"),
            *("-addext", "subjectAltName=IP:127.0.0.1", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key
