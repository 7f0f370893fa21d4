"""``pods/exec`` over the websocket remote-command protocol (k8s.io/apimachinery
``remotecommand``, the ``v5``/``v4.channel.k8s.io`` subprotocols).

Every binary message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 the error
channel, 4 terminal resize, and (v5) 255 "close this channel", which is how a client ends
stdin. When the command ends, the error channel carries the kubelet's ``Status``: ``Success``,
``NonZeroExitCode`` with the exit code as its cause, or an ``InternalError`` when the runtime
could not start the program; then the socket closes. kubectl from 1.30 on and the Python
client speak this; kubectl before 1.30 asks for SPDY (``lab/cluster/spdy.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, Protocol

from aiohttp import WSMsgType, web

PROTOCOLS = (
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
)
STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
# How long the runtime takes to start an exec'd process after the upgrade (a real CRI exec
# takes tens of milliseconds). It matters: client-go's websocket reader (kubectl 1.30+) runs
# before its streams exist and drops a message for a stream it has not created yet ("Unknown
# stream id"), so output sent the instant the socket opens can be lost while the exit code,
# sent later, arrives: a busy machine once saw `pg_isready` exit 2 with nothing printed.
START_SECONDS = 0.05


class Outcome(Protocol):
    exit_code: int
    runtime_error: str


class Session(Protocol):
    """A command started in a container (``lab.controllers.exec_sessions.Session``)."""

    argv: list[str]

    def start(self, output: Any, done: Any) -> None: ...

    def stop(self) -> None: ...

    @property
    def stdin(self) -> Any: ...


def status(session: Session, outcome: Outcome) -> dict[str, Any]:
    """The ``Status`` the kubelet writes on the error channel when the command ends."""
    if outcome.runtime_error:
        return {
            "metadata": {},
            "status": "Failure",
            "message": f"Internal error occurred: {outcome.runtime_error}",
            "reason": "InternalError",
            "details": {"causes": [{"message": outcome.runtime_error}]},
            "code": 500,
        }
    if outcome.exit_code == 0:
        return {"metadata": {}, "status": "Success"}
    argv = " ".join(session.argv)
    return {
        "metadata": {},
        "status": "Failure",
        "message": (
            "command terminated with non-zero exit code: error executing command "
            f"[{argv}], exit code {outcome.exit_code}"
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(outcome.exit_code)}]},
    }


def is_websocket(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


async def serve_exec(
    request: web.Request, session: Session, *, stdin: bool
) -> web.WebSocketResponse:
    """Run ``session`` for one websocket client, to the end of the command."""
    socket = web.WebSocketResponse(protocols=PROTOCOLS, autoping=True, max_msg_size=0)
    await socket.prepare(request)
    protocol = socket.ws_protocol or ""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[int, bytes] | Outcome] = asyncio.Queue()

    def output(channel: int, data: bytes) -> None:
        loop.call_soon_threadsafe(events.put_nowait, (channel, data))

    def done(outcome: Outcome) -> None:
        loop.call_soon_threadsafe(events.put_nowait, outcome)

    if not stdin:
        session.stdin.close()
    reader = asyncio.create_task(_read_input(socket, session, protocol))
    try:
        await asyncio.sleep(START_SECONDS)
        session.start(output, done)
        while True:
            event = await events.get()
            if isinstance(event, tuple):
                channel, data = event
                await socket.send_bytes(bytes([channel]) + data)
                continue
            text = (
                json.dumps(status(session, event), separators=(",", ":"))
                if protocol.startswith(("v4", "v5"))
                else (status(session, event).get("message") or "")
            )
            if text or protocol.startswith(("v4", "v5")):
                await socket.send_bytes(bytes([ERROR]) + text.encode())
            break
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        session.stop()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionResetError):
            await reader
        with contextlib.suppress(ConnectionResetError):
            await socket.close()
    return socket


async def _read_input(socket: web.WebSocketResponse, session: Session, protocol: str) -> None:
    async for message in socket:
        if message.type == WSMsgType.BINARY:
            data = bytes(message.data)
        elif message.type == WSMsgType.TEXT:
            data = str(message.data).encode()
        else:
            break
        if not data:
            continue
        channel, payload = data[0], data[1:]
        if channel == STDIN:
            session.stdin.feed(payload)
        elif channel == CLOSE and protocol.startswith("v5") and payload[:1] == bytes([STDIN]):
            session.stdin.close()
    session.stop()  # the client went away: the command goes with it
