"""The pod log subresource as the kubelet serves it: ``follow``, ``sinceSeconds``, ``sinceTime``,
``tailLines``, ``limitBytes``, ``timestamps`` and ``previous``.

With ``follow`` the answer is a chunked stream that ends when the container stops running
(exits, is restarted or its pod is deleted), when ``limitBytes`` is reached, or when the client
goes away; until then new lines are sent as the container writes them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from aiohttp import web

from lab.cluster.clock import Clock
from lab.cluster.errors import ApiError, bad_request, invalid

POLL_SECONDS = 0.1


class LogContainer(Protocol):
    """What a container run offers its log readers (``lab.controllers.containers``)."""

    logs: Any
    log_times: Any
    log_total: int
    previous_logs: list[str] | None
    previous_times: list[float] | None
    state: str
    generation: int


class LogBackend(Protocol):
    def log_source(
        self, namespace: str, pod: str, container: str | None, *, previous: bool
    ) -> LogContainer: ...

    def now(self) -> float: ...


def _int_query(request: web.Request, name: str, minimum: int) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise bad_request(f"invalid {name} {raw!r}") from exc
    if value < minimum:
        bound = "greater than or equal to 0" if minimum == 0 else "greater than 0"
        raise invalid("PodLogOptions", "", [(name, f"Invalid value: {value}: must be {bound}")])
    return value


def _nano(moment: float) -> str:
    """RFC 3339 with nanoseconds, as the kubelet prefixes ``--timestamps`` lines."""
    stamp = datetime.fromtimestamp(moment, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond:06d}000Z"


class _Writer:
    """Formats lines and enforces ``limitBytes`` across one answer."""

    def __init__(self, timestamps: bool, limit: int | None) -> None:
        self.timestamps = timestamps
        self.left = limit

    @property
    def exhausted(self) -> bool:
        return self.left is not None and self.left <= 0

    def render(self, lines: Sequence[str], times: Sequence[float]) -> bytes:
        text = "".join(
            f"{_nano(at)} {line}\n" if self.timestamps else f"{line}\n"
            for line, at in zip(lines, times, strict=False)
        ).encode()
        if self.left is not None:
            text = text[: max(self.left, 0)]
            self.left -= len(text)
        return text


def _select(
    lines: Sequence[str],
    times: Sequence[float],
    since: float | None,
    tail: int | None,
) -> tuple[list[str], list[float]]:
    pairs = list(zip(lines, times, strict=False))
    if since is not None:
        pairs = [(line, at) for line, at in pairs if at >= since]
    if tail is not None:
        pairs = pairs[-tail:] if tail > 0 else []
    return [line for line, _ in pairs], [at for _, at in pairs]


async def serve_log(
    request: web.Request,
    backend: LogBackend,
    namespace: str,
    pod: str,
    check_pod: Callable[[], Any],
) -> web.StreamResponse:
    check_pod()
    query = request.query
    previous = query.get("previous") in ("true", "1")
    follow = query.get("follow") in ("true", "1") and not previous
    tail = _int_query(request, "tailLines", 0)
    limit = _int_query(request, "limitBytes", 1)
    since_seconds = _int_query(request, "sinceSeconds", 1)
    since: float | None = None
    if since_seconds is not None and query.get("sinceTime"):
        raise bad_request("at most one of `sinceTime` or `sinceSeconds` may be specified")
    if since_seconds is not None:
        since = backend.now() - since_seconds
    elif query.get("sinceTime"):
        since = Clock.parse(query["sinceTime"])
        if not since:
            raise bad_request(f"invalid sinceTime {query['sinceTime']!r}")
    container = backend.log_source(namespace, pod, query.get("container"), previous=previous)
    writer = _Writer(query.get("timestamps") in ("true", "1"), limit)
    if previous:
        lines, times = container.previous_logs or [], container.previous_times or []
    else:
        lines, times = list(container.logs), list(container.log_times)
    # Older lines carry no time in the stored record: treat them as written at start.
    times = list(times) + [0.0] * (len(lines) - len(times))
    chosen, chosen_times = _select(lines, times, since, tail)
    first = writer.render(chosen, chosen_times)
    if not follow:
        return web.Response(body=first, content_type="text/plain")
    response = web.StreamResponse(headers={"Content-Type": "text/plain"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    with contextlib.suppress(ConnectionResetError):  # the client went away: nothing to send
        await _stream(request, response, container, writer, first, check_pod)
    return response


async def _stream(
    request: web.Request,
    response: web.StreamResponse,
    container: LogContainer,
    writer: _Writer,
    first: bytes,
    check_pod: Callable[[], Any],
) -> None:
    if first:
        await response.write(first)
    seen, generation = container.log_total, container.generation
    while not writer.exhausted:
        if container.generation != generation or container.state != "running":
            break
        try:
            check_pod()
        except ApiError:
            break
        if request.transport is None or request.transport.is_closing():
            return
        if container.log_total > seen:
            fresh = min(container.log_total - seen, len(container.logs))
            new_lines = list(container.logs)[-fresh:]
            new_times = list(container.log_times)[-fresh:]
            seen = container.log_total
            chunk = writer.render(new_lines, new_times)
            if chunk:
                await response.write(chunk)
            continue
        await asyncio.sleep(POLL_SECONDS)
    await response.write_eof()
