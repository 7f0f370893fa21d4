"""In-memory object storage with a cluster-wide resourceVersion and a watch history.

Stored objects are never mutated in place: every write stores a new dict. That makes
snapshots for watch events and list responses free, and lets readers hold on to an object
without it changing under them. Everything here runs on the lab's event-loop thread.
"""

from __future__ import annotations

import json
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from lab.cluster.clock import Clock

HISTORY_LIMIT = 20_000


@dataclass(frozen=True)
class WatchEvent:
    resource_version: int
    type: str  # ADDED, MODIFIED or DELETED
    key: str  # the resource type's storage key, e.g. "deployments.apps"
    obj: dict[str, Any]
    old: dict[str, Any] | None


class ResourceVersionTooOld(Exception):
    """A watch asked to resume from a version that is no longer in the history (410 Gone)."""


Listener = Callable[[WatchEvent], None]


class ObjectStore:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self._json: dict[tuple[str, str, str], tuple[str, bytes]] = {}
        self._rv = 0
        self._history: deque[WatchEvent] = deque(maxlen=HISTORY_LIMIT)
        self._listeners: list[Listener] = []

    # ------------------------------------------------------------ reading

    @property
    def resource_version(self) -> int:
        return self._rv

    def get(self, key: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get(key, {}).get((namespace, name))

    def list_objects(self, key: str, namespace: str | None = None) -> list[dict[str, Any]]:
        bucket = self._objects.get(key, {})
        if namespace:
            items = [obj for (ns, _), obj in bucket.items() if ns == namespace]
        else:
            items = list(bucket.values())
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        return items

    def iter_all(self, key: str) -> Iterator[dict[str, Any]]:
        return iter(list(self._objects.get(key, {}).values()))

    def encoded(self, key: str, obj: dict[str, Any]) -> bytes:
        """The object as JSON bytes, cached per resourceVersion (lists of 1,000 pods stay fast)."""
        meta = obj["metadata"]
        cache_key = (key, meta.get("namespace", ""), meta["name"])
        stored = self.get(key, cache_key[1], cache_key[2]) is obj
        rv = meta.get("resourceVersion", "")
        cached = self._json.get(cache_key) if stored else None
        if cached and cached[0] == rv:
            return cached[1]
        data = json.dumps(obj, separators=(",", ":")).encode()
        if stored:
            self._json[cache_key] = (rv, data)
        return data

    # ------------------------------------------------------------ writing

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def create(self, key: str, obj: dict[str, Any]) -> dict[str, Any]:
        obj = {**obj, "metadata": {**obj["metadata"]}}
        meta = obj["metadata"]
        meta["uid"] = meta.get("uid") or str(uuid.uuid4())
        meta["creationTimestamp"] = self._clock.timestamp()
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        self._objects.setdefault(key, {})[(meta.get("namespace", ""), meta["name"])] = obj
        self._emit(WatchEvent(rv, "ADDED", key, obj, None))
        return obj

    def replace(self, key: str, obj: dict[str, Any]) -> dict[str, Any]:
        obj = {**obj, "metadata": {**obj["metadata"]}}
        meta = obj["metadata"]
        slot = (meta.get("namespace", ""), meta["name"])
        old = self._objects[key][slot]
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        self._objects[key][slot] = obj
        self._emit(WatchEvent(rv, "MODIFIED", key, obj, old))
        return obj

    def delete(self, key: str, namespace: str, name: str) -> dict[str, Any]:
        old = self._objects[key].pop((namespace, name))
        self._json.pop((key, namespace, name), None)
        rv = self._next_rv()
        final = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)}}
        self._emit(WatchEvent(rv, "DELETED", key, final, old))
        return final

    def clear(self) -> None:
        """Forget every object (lab reset); watchers see nothing, they are expected to re-list."""
        self._objects.clear()
        self._json.clear()
        self._history.clear()

    # ------------------------------------------------------------ watching

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def events_since(self, key: str, resource_version: int) -> list[WatchEvent]:
        if resource_version >= self._rv:
            return []
        if self._history and self._history[0].resource_version > resource_version + 1:
            raise ResourceVersionTooOld(str(resource_version))
        if not self._history and resource_version < self._rv:
            raise ResourceVersionTooOld(str(resource_version))
        return [e for e in self._history if e.resource_version > resource_version and e.key == key]

    def _emit(self, event: WatchEvent) -> None:
        self._history.append(event)
        for listener in list(self._listeners):
            listener(event)
