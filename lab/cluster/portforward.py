"""``pods/portforward`` over websockets, as the Python client's ``portforward`` speaks it.

Each requested port has two channels: data on ``2*i``, errors on ``2*i+1``; the server opens
both by sending the port number (two bytes, little-endian). Bytes the client sends on a data
channel go to the port: to the real process when the lab runs the container as one, else to
the modeled server (``lab.controllers.port_answers``), which answers one HTTP request (or, for
redis, each command, ``lab.controllers.redis_model``). A port
nobody listens on gets the kubelet's error on its error channel. (kubectl tunnels SPDY through
this websocket, ``SPDY/3.1+portforward.k8s.io``, which the lab does not speak.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import WSMsgType, web

from lab.controllers import redis_model
from lab.controllers.port_answers import PortTarget, http_answer

PROTOCOLS = ("portforward.k8s.io", "v4.channel.k8s.io", "channel.k8s.io")


def ports_of(request: web.Request) -> list[int]:
    ports: list[int] = []
    for value in request.query.getall("ports", []):
        for item in value.split(","):
            if item.strip().isdigit():
                ports.append(int(item))
    return ports


async def serve(
    request: web.Request, ports: list[int], resolve: Callable[[int], PortTarget]
) -> web.WebSocketResponse:
    socket = web.WebSocketResponse(protocols=PROTOCOLS, max_msg_size=0)
    await socket.prepare(request)
    targets = [resolve(port) for port in ports]
    for index, port in enumerate(ports):
        prefix = port.to_bytes(2, "little")
        await socket.send_bytes(bytes([2 * index]) + prefix)
        await socket.send_bytes(bytes([2 * index + 1]) + prefix)
    for index, found in enumerate(targets):
        if found.refusal:
            await socket.send_bytes(bytes([2 * index + 1]) + found.refusal.encode())
    streams: dict[int, PortConnection] = {}
    try:
        async for message in socket:
            if message.type != WSMsgType.BINARY or not message.data:
                if message.type in (WSMsgType.CLOSE, WSMsgType.ERROR):
                    break
                continue
            channel, payload = message.data[0], bytes(message.data[1:])
            index = channel // 2
            if channel % 2 or index >= len(targets) or targets[index].refusal:
                continue
            stream = streams.get(index)
            if stream is None:
                stream = streams[index] = PortConnection(
                    _channel_writer(socket, 2 * index), targets[index]
                )
            await stream.send(payload)
    finally:
        for stream in streams.values():
            await stream.close()
    return socket


def _channel_writer(
    socket: web.WebSocketResponse, channel: int
) -> Callable[[bytes], Awaitable[None]]:
    async def emit(data: bytes) -> None:
        await socket.send_bytes(bytes([channel]) + data)

    return emit


class PortConnection:
    """One connection through a forwarded port; ``emit`` sends bytes back to the client."""

    def __init__(self, emit: Callable[[bytes], Awaitable[None]], target: PortTarget) -> None:
        self.emit = emit
        self.target = target
        self.buffer = b""
        self.writer: asyncio.StreamWriter | None = None
        self.pump: asyncio.Task[Any] | None = None
        self.answered = False

    async def send(self, data: bytes) -> None:
        if self.target.address is not None:
            if self.writer is None:
                reader, self.writer = await asyncio.open_connection(*self.target.address)
                self.pump = asyncio.create_task(self._pump(reader))
            self.writer.write(data)
            await self.writer.drain()
            return
        self.buffer += data
        if self.target.wire == "redis" and self.target.data is not None:
            # redis keeps the connection: each complete command gets its reply.
            commands, self.buffer = redis_model.parse(self.buffer)
            for command in commands:
                await self.emit(redis_model.encoded(redis_model.run(command, self.target.data)))
            return
        if not self.answered and b"\r\n\r\n" in self.buffer:
            self.answered = True  # Connection: close — one request, as the answer says
            answer = http_answer(self.target, self.buffer)
            if answer:
                await self.emit(answer)

    async def _pump(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(ConnectionResetError):
            while data := await reader.read(65536):
                await self.emit(data)

    async def close(self) -> None:
        if self.pump is not None:
            self.pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionResetError):
                await self.pump
        if self.writer is not None:
            self.writer.close()
