"""What every simulated controller shares: the store, the API, the clock, events, images."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from lab.cluster.api import ApiService
from lab.cluster.clock import Clock
from lab.cluster.store import ObjectStore
from lab.controllers.exec_files import WritableLayers
from lab.images import ImageCatalog


def owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_uid(obj: dict[str, Any]) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


@dataclass
class EventRecorder:
    """Creates core/v1 Events, folding repeats into ``count`` like the kubelet's correlator."""

    store: ObjectStore
    clock: Clock
    _index: dict[tuple[str, str, str, str, str], str] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)
    limit_per_namespace: int = 2000

    def record(
        self,
        obj: dict[str, Any],
        event_type: str,
        reason: str,
        message: str,
        *,
        component: str,
        host: str | None = None,
        field_path: str | None = None,
    ) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        key = (namespace, meta.get("uid", ""), reason, message, field_path or "")
        now = self.clock.timestamp()
        name = self._index.get(key)
        existing = self.store.get("events", namespace, name) if name else None
        if existing is not None:
            updated = {**existing, "count": int(existing.get("count", 1)) + 1, "lastTimestamp": now}
            self.store.replace("events", updated)
            return
        name = f"{meta['name']}.{secrets.token_hex(8)}"
        involved = {
            "kind": obj["kind"],
            "namespace": meta.get("namespace", ""),
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "apiVersion": obj["apiVersion"],
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        if field_path:
            involved["fieldPath"] = field_path
        source = {"component": component, **({"host": host} if host else {})}
        event = {
            "kind": "Event",
            "apiVersion": "v1",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": event_type,
            "eventTime": None,
            "reportingComponent": component,
            "reportingInstance": host or "",
        }
        self.store.create("events", event)
        self._index[key] = name
        self._counts[namespace] = self._counts.get(namespace, 0) + 1
        if self._counts[namespace] > self.limit_per_namespace * 1.1:
            self._trim(namespace)

    def _trim(self, namespace: str) -> None:
        """Drop the oldest events, like the API server's event TTL, in batches."""
        events = self.store.list_objects("events", namespace)
        events.sort(key=lambda e: e.get("lastTimestamp") or "")
        for old in events[: max(len(events) - self.limit_per_namespace, 0)]:
            self.store.delete("events", namespace, old["metadata"]["name"])
        self._counts[namespace] = min(len(events), self.limit_per_namespace)

    def expire(self, before: float) -> int:
        """Delete events last seen before ``before`` (seconds since the epoch), as the API
        server's event TTL does; returns how many went."""
        gone = 0
        for event in self.store.list_objects("events", None):
            if Clock.parse(event.get("lastTimestamp")) < before:
                meta = event["metadata"]
                self.store.delete("events", meta.get("namespace", ""), meta["name"])
                self._counts[meta.get("namespace", "")] = max(
                    self._counts.get(meta.get("namespace", ""), 1) - 1, 0
                )
                gone += 1
        if gone:
            self._index = {k: v for k, v in self._index.items() if self._exists(k, v)}
        return gone

    def _exists(self, key: tuple[str, str, str, str, str], name: str) -> bool:
        return self.store.get("events", key[0], name) is not None

    def clear(self) -> None:
        self._index.clear()
        self._counts.clear()


@dataclass
class ControllerContext:
    store: ObjectStore
    api: ApiService
    clock: Clock
    events: EventRecorder
    images: ImageCatalog
    # What containers write, seen by their own commands and by ``kubectl exec`` alike.
    layers: WritableLayers = field(default_factory=WritableLayers)

    def write_status(self, key: str, obj: dict[str, Any], status: dict[str, Any]) -> bool:
        """Store a new status when it differs; returns whether anything was written."""
        if obj.get("status") == status:
            return False
        self.store.replace(key, {**obj, "status": status})
        return True

    def write_object(self, key: str, obj: dict[str, Any]) -> dict[str, Any]:
        return self.store.replace(key, obj)
