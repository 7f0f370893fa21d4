"""``exec`` and ``port-forward`` over SPDY/3.1, as kubectl speaks them.

The connection is an HTTP upgrade (``Upgrade: SPDY/3.1``, the sub-protocol negotiated in
``X-Stream-Protocol-Version``); kubectl from 1.31 on tunnels the same SPDY bytes through a
websocket for port-forward (``SPDY/3.1+portforward.k8s.io``). For exec the client opens one
stream per role (``error``, ``stdin``, ``stdout``, ``stderr``, ``resize``) and the command starts
once they are all there; its end is the ``Status`` on the error stream, as over websockets. For
port-forward each connection the client accepts locally opens a ``data`` and an ``error`` stream
for one ``port`` and ``requestid``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import Any

from aiohttp import WSMsgType, web

from lab.cluster import remotecommand
from lab.cluster.portforward import PortConnection
from lab.cluster.spdy import Connection, Stream
from lab.controllers.port_answers import PortTarget

EXEC_PROTOCOLS = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
PORTFORWARD_PROTOCOLS = ("portforward.k8s.io",)
TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"


def is_spdy(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower().startswith("spdy/3.1")


def is_tunnel(request: web.Request) -> bool:
    return TUNNEL_PROTOCOL in request.headers.get("Sec-WebSocket-Protocol", "")


class _Feed:
    """What aiohttp hands the bytes after the upgrade to (its ``set_parser`` protocol)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.queue.put_nowait(bytes(data))
        return False, b""

    def feed_eof(self) -> None:
        self.queue.put_nowait(b"")


async def _upgrade(
    request: web.Request, wanted: tuple[str, ...]
) -> tuple[Connection, str, Callable[[], None]]:
    offered = [
        v.strip()
        for header in request.headers.getall("X-Stream-Protocol-Version", [])
        for v in header.split(",")
    ]
    chosen = next((p for p in wanted if p in offered), "")
    if not chosen:
        raise web.HTTPForbidden(
            text=f"unable to upgrade: unable to negotiate protocol: client supports {offered}, "
            f"server supports {list(wanted)}"
        )
    response = web.StreamResponse(
        status=101,
        headers={
            "Connection": "Upgrade",
            "Upgrade": "SPDY/3.1",
            "X-Stream-Protocol-Version": chosen,
        },
    )
    await response.prepare(request)
    feed = _Feed()
    request.protocol.set_parser(feed)  # type: ignore[arg-type]
    transport = request.transport
    assert transport is not None

    async def write(data: bytes) -> None:
        if not transport.is_closing():
            transport.write(data)

    return Connection(feed.queue.get, write), chosen, transport.close


async def serve_exec(
    request: web.Request, session: Any, *, stdin: bool, stdout: bool, stderr: bool, tty: bool
) -> web.StreamResponse:
    connection, protocol, close = await _upgrade(request, EXEC_PROTOCOLS)
    reading = asyncio.create_task(connection.serve())
    expected = {"error"} | {
        role
        for role, wanted in (("stdin", stdin), ("stdout", stdout), ("stderr", stderr and not tty))
        if wanted
    }
    streams: dict[str, Stream] = {}
    try:
        async with asyncio.timeout(10):
            while not expected <= streams.keys():
                stream = await connection.opened.get()
                streams[stream.headers.get("streamtype", "")] = stream
    except TimeoutError:
        reading.cancel()
        close()
        return web.StreamResponse(status=101)
    await _run_exec(connection, session, streams, protocol, stdin)
    reading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reading
    close()
    return web.StreamResponse(status=101)


async def _run_exec(
    connection: Connection, session: Any, streams: dict[str, Stream], protocol: str, stdin: bool
) -> None:
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[Any] = asyncio.Queue()
    if not stdin:  # before the start: an attach tells "no stdin" from "stdin ended" by it
        session.stdin.close()
    session.start(
        lambda channel, data: loop.call_soon_threadsafe(events.put_nowait, (channel, data)),
        lambda outcome: loop.call_soon_threadsafe(events.put_nowait, outcome),
    )
    pump = asyncio.create_task(_pump_stdin(streams.get("stdin"), session))
    outputs = {
        remotecommand.STDOUT: streams.get("stdout"),
        remotecommand.STDERR: streams.get("stderr"),
    }
    try:
        while True:
            event = await events.get()
            if isinstance(event, tuple):
                target = outputs.get(event[0]) or outputs[remotecommand.STDOUT]
                if target is not None:
                    await connection.send(target, event[1])
                continue
            status = remotecommand.status(session, event)
            text = (
                json.dumps(status, separators=(",", ":"))
                if protocol.startswith("v4")
                else status.get("message", "")
                if status["status"] != "Success"
                else ""
            )
            await connection.send(streams["error"], text.encode(), fin=True)
            break
        for role, stream in streams.items():
            if role != "error":
                await connection.send(stream, b"", fin=True)
        await connection.go_away()
    finally:
        session.stop()
        pump.cancel()


async def _pump_stdin(stream: Stream | None, session: Any) -> None:
    if stream is None:
        return
    while (data := await stream.incoming.get()) is not None:
        session.stdin.feed(data)
    session.stdin.close()


# ------------------------------------------------------------------ port-forward


async def serve_portforward(
    request: web.Request, resolve: Callable[[int], PortTarget]
) -> web.StreamResponse:
    if is_tunnel(request):
        socket = web.WebSocketResponse(protocols=(TUNNEL_PROTOCOL,), max_msg_size=0)
        await socket.prepare(request)

        async def read() -> bytes:
            while True:  # the client's empty writes arrive as empty messages: not the end
                message = await socket.receive()
                if message.type not in (WSMsgType.BINARY, WSMsgType.TEXT):
                    return b""
                data = message.data if isinstance(message.data, bytes) else message.data.encode()
                if data:
                    return bytes(data)

        async def write(data: bytes) -> None:
            if not socket.closed:
                await socket.send_bytes(data)

        await _forward(Connection(read, write), resolve)
        await socket.close()
        return socket
    connection, _, close = await _upgrade(request, PORTFORWARD_PROTOCOLS)
    await _forward(connection, resolve)
    close()
    return web.StreamResponse(status=101)


async def _forward(connection: Connection, resolve: Callable[[int], PortTarget]) -> None:
    reading = asyncio.create_task(connection.serve())
    errors: dict[str, Stream] = {}
    tasks: set[asyncio.Task[None]] = set()
    waiting = asyncio.create_task(connection.ended.wait())
    while not connection.ended.is_set():
        opened = asyncio.create_task(connection.opened.get())
        done, _ = await asyncio.wait({opened, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if opened not in done:
            opened.cancel()
            break
        stream = opened.result()
        request_id = stream.headers.get("requestid", "")
        if stream.headers.get("streamtype") == "error":
            errors[request_id] = stream
            continue
        port = int(stream.headers.get("port", "0") or 0)
        task = asyncio.create_task(_connect(connection, stream, errors, request_id, resolve(port)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    for task in list(tasks):
        task.cancel()
    reading.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reading


async def _connect(
    connection: Connection,
    stream: Stream,
    errors: dict[str, Stream],
    request_id: str,
    target: PortTarget,
) -> None:
    if target.refusal:
        await asyncio.sleep(0)  # the error stream of this request may still be on its way
        error = errors.get(request_id)
        if error is not None:
            await connection.send(error, target.refusal.encode(), fin=True)
        await connection.send(stream, b"", fin=True)
        return

    async def emit(data: bytes) -> None:
        await connection.send(stream, data)

    port = PortConnection(emit, target)
    try:
        while (data := await stream.incoming.get()) is not None:
            await port.send(data)
            if port.answered:  # a modeled server answered with "Connection: close"
                break
    finally:
        await port.close()
        with contextlib.suppress(ConnectionResetError):
            await connection.send(stream, b"", fin=True)
