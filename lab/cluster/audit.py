"""The lab's audit log: who changed what, as a real API server's audit backend records it.

A cluster's audit log is where "who did this" is answered after the fact; with impersonation
it names both the account that sent the request (``user``) and the person it acted as
(``impersonatedUser``), as ``audit.k8s.io/v1`` events do. The lab keeps the writes (not the
reads: a settle loop reads thousands of times) of the last few thousand requests in memory,
served at ``GET /lab/v1/audit``.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from lab.cluster.rbac import UserInfo

MAX_EVENTS = 5000
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def is_write(method: str) -> bool:
    return method.upper() in _VERBS


class AuditTrail:
    """The last ``MAX_EVENTS`` write requests, oldest first."""

    def __init__(self) -> None:
        self._events: deque[dict[str, Any]] = deque(maxlen=MAX_EVENTS)
        self._lock = threading.Lock()
        self._serial = 0

    def record(
        self,
        *,
        method: str,
        uri: str,
        user: UserInfo,
        acting: UserInfo,
        code: int,
        object_ref: dict[str, str] | None,
        stamp: str,
    ) -> None:
        with self._lock:
            self._serial += 1
            event: dict[str, Any] = {
                "kind": "Event",
                "apiVersion": "audit.k8s.io/v1",
                "level": "Metadata",
                "auditID": f"lab-{self._serial}",
                "stage": "ResponseComplete",
                "requestURI": uri,
                "verb": _VERBS.get(method.upper(), method.lower()),
                "user": user.as_dict(),
                "responseStatus": {"code": code},
                "requestReceivedTimestamp": stamp,
            }
            if acting is not user:
                event["impersonatedUser"] = acting.as_dict()
            if object_ref:
                event["objectRef"] = object_ref
            self._events.append(event)

    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._events)

    def clear(self) -> None:
        with self._lock:
            self._events.clear()
