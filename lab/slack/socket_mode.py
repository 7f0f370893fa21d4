"""Socket Mode: ``apps.connections.open`` hands out a one-time websocket URL; the playground
greets a connection with ``hello``, sends envelopes (``envelope_id``, ``type``, ``payload``,
``accepts_response_payload``, ``retry_attempt``) and waits for the app's ack carrying the same
``envelope_id`` (and, for commands and view submissions, a response payload).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import uuid
from typing import Any

from aiohttp import WSMsgType, web

from lab.slack.workspace import Json, Workspace

SOCKET_PATH = "/link/"


class SocketHub:
    """The open Socket Mode connections and the acks they owe."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.tickets: set[str] = set()
        self.connections: list[web.WebSocketResponse] = []
        self.pending: dict[str, asyncio.Future[Json]] = {}

    def new_url(self, base_url: str) -> str:
        ticket = secrets.token_hex(16)
        self.tickets.add(ticket)
        ws_base = base_url.replace("https://", "wss://").replace("http://", "ws://")
        return f"{ws_base}{SOCKET_PATH}?ticket={ticket}&app_id={self.ws.config.app_id}"

    @property
    def connected(self) -> bool:
        return any(not c.closed for c in self.connections)

    def routes(self) -> list[web.RouteDef]:
        return [web.get(SOCKET_PATH, self.handle)]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self.tickets:
            return web.json_response({"ok": False, "error": "invalid_ticket"}, status=401)
        self.tickets.discard(ticket)
        socket = web.WebSocketResponse(autoping=True)
        await socket.prepare(request)
        self.connections.append(socket)
        self.ws.changed()
        await socket.send_str(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": len(self.connections),
                    "debug_info": {
                        "host": "playground-link",
                        "build_number": 1,
                        "approximate_connection_time": 3600,
                    },
                    "connection_info": {"app_id": self.ws.config.app_id},
                }
            )
        )
        try:
            async for message in socket:
                if message.type == WSMsgType.TEXT:
                    self._ack(message.data)
        finally:
            self.connections.remove(socket)
            self.ws.changed()
        return socket

    def _ack(self, raw: str) -> None:
        try:
            ack: Any = json.loads(raw)
        except ValueError:
            return
        if not isinstance(ack, dict):
            return
        future = self.pending.get(str(ack.get("envelope_id")))
        if future is not None and not future.done():
            payload = ack.get("payload")
            future.set_result(payload if isinstance(payload, dict) else {})

    async def send(
        self,
        kind: str,
        payload: Json,
        *,
        timeout: float,
        retry_attempt: int = 0,
        retry_reason: str = "",
    ) -> Json:
        """Send one envelope to an open connection and return the ack's payload.

        Raises ``TimeoutError`` when no ack arrives in time, ``ConnectionError`` when no app
        is connected."""
        open_sockets = [c for c in self.connections if not c.closed]
        if not open_sockets:
            raise ConnectionError("no Socket Mode connection")
        envelope_id = str(uuid.uuid4())
        envelope: Json = {
            "envelope_id": envelope_id,
            "payload": payload,
            "type": kind,
            "accepts_response_payload": kind != "events_api",
        }
        if kind == "events_api":
            envelope["retry_attempt"] = retry_attempt
            envelope["retry_reason"] = retry_reason
        future: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self.pending[envelope_id] = future
        try:
            await open_sockets[0].send_str(json.dumps(envelope))
            return await asyncio.wait_for(future, timeout)
        finally:
            self.pending.pop(envelope_id, None)

    async def close(self) -> None:
        for socket in list(self.connections):
            await socket.close()
