"""The incident thread's alert messages: which alerts fired (with their summaries, quoted as
data from the alert) and which cleared — rendered from the ``incident.alert_*`` events."""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import Block

from bot import blocks as b
from bot.text import command_words, thread_words
from incidents.alerts import Refusal

SHOWN = 10
WHERE = ("pod", "container", "deployment", "service")


def _where(labels: dict[str, Any]) -> str:
    return ", ".join(f"{key} {labels[key]}" for key in WHERE if labels.get(key))


def _line(alert: dict[str, Any]) -> str:
    return thread_words.alert_line(
        str(alert.get("alertname", "")),
        str(alert.get("severity", "")),
        _where(alert.get("labels") or {}),
        str(alert.get("summary", "")),
    )


def fired(data: dict[str, Any]) -> list[Block]:
    alerts = list(data.get("alerts") or [])
    more = len(alerts[SHOWN:]) + int(data.get("more") or 0)
    lines = [_line(a) for a in alerts[:SHOWN]]
    body = thread_words.alerts_fired(
        len(alerts) + int(data.get("more") or 0), bool(data.get("joined"))
    )
    return b.sections(
        "\n".join([body, *lines, *([thread_words.alerts_more(more)] if more else [])])
    )


def resolved(data: dict[str, Any]) -> list[Block]:
    alerts = list(data.get("alerts") or [])
    lines = [
        thread_words.alert_cleared_line(str(a.get("alertname", "")), _where(a.get("labels") or {}))
        for a in alerts[:SHOWN]
    ]
    more = len(alerts[SHOWN:]) + int(data.get("more") or 0)
    tail = thread_words.alerts_all_clear(str(data.get("incident_state", "")))
    if not data.get("incident_clear"):
        tail = thread_words.alerts_still_firing([str(n) for n in data.get("still_firing") or []])
    return b.sections(
        "\n".join([*lines, *([thread_words.alerts_more(more)] if more else []), tail])
    )


def cluster_refused(refusal: Refusal) -> list[Block]:
    """The error card for alerts naming a cluster the fleet does not serve (or several): no
    incident opened, and why (docs/fleet.md)."""
    return [
        b.section(command_words.alert_cluster_refused(refusal.reason, list(refusal.alertnames))),
        b.context(command_words.ALERT_CLUSTER_HINT),
    ]
