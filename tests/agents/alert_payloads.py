"""Alertmanager webhook bodies as Alertmanager 0.25 sends them (version 4), for tests."""

from __future__ import annotations

import hashlib
from typing import Any

STARTS = "2026-11-20T10:00:00.000Z"
NEVER = "0001-01-01T00:00:00Z"


def alert(
    name: str = "KubePodCrashLooping",
    *,
    status: str = "firing",
    namespace: str | None = "hotel",
    starts: str = STARTS,
    summary: str = "Pod is crash looping.",
    **labels: str,
) -> dict[str, Any]:
    where = {"namespace": namespace} if namespace is not None else {}
    every = {"alertname": name, "severity": "warning", **where, **labels}
    fingerprint = hashlib.sha256(repr(sorted(every.items())).encode()).hexdigest()[:16]
    return {
        "status": status,
        "labels": every,
        "annotations": {
            "summary": summary,
            "description": f"{name} in {namespace}",
            "runbook_url": "https://runbooks.example/" + name.lower(),
        },
        "startsAt": starts,
        "endsAt": NEVER if status == "firing" else "2026-11-20T10:09:00.000Z",
        "generatorURL": "http://prometheus:9090/graph?g0.expr=up",
        "fingerprint": fingerprint,
    }


def payload(
    *alerts: dict[str, Any], group_key: str = '{}:{namespace="hotel"}', **extra: Any
) -> dict[str, Any]:
    firing = any(a["status"] == "firing" for a in alerts)
    common = dict(alerts[0]["labels"]) if len(alerts) == 1 else {}
    return {
        "receiver": "stratus",
        "status": "firing" if firing else "resolved",
        "alerts": list(alerts),
        "groupLabels": {"namespace": "hotel"},
        "commonLabels": common,
        "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093",
        "version": "4",
        "groupKey": group_key,
        "truncatedAlerts": 0,
        **extra,
    }
