"""Watch streams: JSON lines of ADDED/MODIFIED/DELETED events (Table rows for ``kubectl get
-w``), DELETED/ADDED when an object leaves or enters the selector, and an ERROR event with 410
Expired for a resourceVersion older than the store's history."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from lab.cluster import conversion
from lab.cluster.api import ApiService
from lab.cluster.errors import ApiError, bad_request
from lab.cluster.resources import ResourceType
from lab.cluster.selectors import object_filter, parse_field_selector, parse_label_selector
from lab.cluster.store import ResourceVersionTooOld, WatchEvent

JSON = "application/json"


def _dump(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


async def serve_watch(
    request: web.Request,
    api: ApiService,
    rt: ResourceType,
    ns: str,
    table: Callable[[list[dict[str, Any]]], dict[str, Any]],
    watchers: set[asyncio.Task[Any]],
) -> web.StreamResponse:
    """Stream the watch: the backlog since ``resourceVersion`` (or every object as ADDED),
    then each change until ``timeoutSeconds`` or the client leaves."""
    labels = parse_label_selector(request.query.get("labelSelector"))
    fields = parse_field_selector(request.query.get("fieldSelector"), rt.field_selectors, rt.kind)
    accept = object_filter(labels, fields)
    as_table = "as=Table" in request.headers.get("Accept", "")
    try:
        timeout = float(request.query.get("timeoutSeconds", "1800"))
    except ValueError as exc:
        raise bad_request("invalid timeoutSeconds") from exc
    queue: asyncio.Queue[WatchEvent] = asyncio.Queue()

    def listener(event: WatchEvent) -> None:
        if event.key == rt.key and (not ns or event.obj["metadata"].get("namespace") == ns):
            queue.put_nowait(event)

    store = api.store
    start_rv = request.query.get("resourceVersion", "")
    store.subscribe(listener)
    task = asyncio.current_task()
    if task is not None:
        watchers.add(task)
    try:
        if start_rv in ("", "0"):
            backlog = [
                WatchEvent(store.resource_version, "ADDED", rt.key, o, None)
                for o in api.list_objects(rt, ns or None)
            ]
        else:
            try:
                backlog = [
                    e
                    for e in store.events_since(rt.key, int(start_rv))
                    if not ns or e.obj["metadata"].get("namespace") == ns
                ]
            except (ValueError, ResourceVersionTooOld):
                backlog = []
                expired = ApiError(
                    410,
                    "Expired",
                    f"too old resource version: {start_rv} ({store.resource_version})",
                )
                response = await _start_stream(request)
                await response.write(_dump({"type": "ERROR", "object": expired.status()}) + b"\n")
                return response
        response = await _start_stream(request)
        sent = 0
        for event in backlog:
            sent = max(sent, event.resource_version)
            await _send(response, rt, event, accept, table if as_table else None)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                # Wake up every second to notice a client that went away: aiohttp does not
                # cancel handlers on disconnect, and a watch may be asked to last an hour.
                event = await asyncio.wait_for(queue.get(), min(remaining, 1.0))
            except TimeoutError:
                if request.transport is None or request.transport.is_closing():
                    break
                continue
            if event.resource_version <= sent:
                continue
            await _send(response, rt, event, accept, table if as_table else None)
        return response
    finally:
        store.unsubscribe(listener)
        if task is not None:
            watchers.discard(task)


async def _start_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": JSON})
    response.enable_chunked_encoding()
    await response.prepare(request)
    return response


async def _send(
    response: web.StreamResponse,
    rt: ResourceType,
    event: WatchEvent,
    accept: Callable[[dict[str, Any]], bool],
    table: Callable[[list[dict[str, Any]]], dict[str, Any]] | None,
) -> None:
    kind = event.type
    now_ok = accept(event.obj)
    if kind == "MODIFIED":
        was_ok = event.old is not None and accept(event.old)
        if now_ok and not was_ok:
            kind = "ADDED"
        elif was_ok and not now_ok:
            kind = "DELETED"
        elif not now_ok:
            return
    elif not now_ok:
        return
    obj: Any = table([event.obj]) if table is not None else conversion.from_storage(rt, event.obj)
    await response.write(_dump({"type": kind, "object": obj}) + b"\n")
