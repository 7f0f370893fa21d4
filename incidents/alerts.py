"""Alertmanager's webhook read as data, and what each notification means for incidents.

Alertmanager posts a notification (webhook payload version 4) for an alert *group* — the
alerts its route gathered under one ``groupKey`` — when the group first fires, when alerts
join or clear, and again every ``repeat_interval``. Stratus keeps one incident per alert group
and namespace: the first firing opens it (or joins the namespace's open incident), later
notifications add what is new to it, and cleared alerts are noted on it.

``partition`` and ``decide`` are pure: payload and stored group in, the next stored group and
what to record out. ``incidents.alert_store`` applies the decision in one transaction.

Everything in a payload is untrusted data (labels and annotations are free text that anyone
able to create a PrometheusRule, or to forge a request, writes): it is bounded, stripped of
control characters, and only ever shown as quoted data — never read as an instruction.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from incidents.alert_text import Annotations, Labels, alert_name, clean
from incidents.repository import IncidentEnvelope, IncidentEventType
from tools import names
from tools.errors import Invalid

MAX_ALERTS = 1000  # per notification (Alertmanager's max_alerts cuts below this)
GROUP_KEY = 1024
KEPT_ALERTS = 200  # alerts remembered in full per group; the oldest cleared ones go first
# Alerts remembered per group as (status, startsAt) only — about 100 bytes each — so that a
# group re-sent whole (every repeat_interval) is a repeat however large it is: twice the most
# one notification carries. Past it, the oldest cleared ones go first.
KEPT_SEEN = 2 * MAX_ALERTS


class AlertStatus(enum.StrEnum):
    FIRING = "firing"
    RESOLVED = "resolved"


class _Payload(BaseModel):
    # Alertmanager may add fields; those are ignored. Missing or mistyped ones are refused.
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class Alert(_Payload):
    status: AlertStatus
    labels: Labels
    annotations: Annotations = Field(default_factory=dict)
    starts_at: datetime = Field(alias="startsAt")
    ends_at: datetime | None = Field(default=None, alias="endsAt")
    generator_url: str = Field(default="", alias="generatorURL", max_length=4096)
    fingerprint: str = Field(default="", max_length=128)

    @property
    def key(self) -> str:
        """Alertmanager's fingerprint, or one of ours from the labels when it sent none."""
        if self.fingerprint:
            return clean(self.fingerprint, 64)
        joined = "\n".join(f"{k}={v}" for k, v in sorted(self.labels.items()))
        return "sha-" + hashlib.sha256(joined.encode()).hexdigest()[:16]


class AlertmanagerPayload(_Payload):
    """Alertmanager's webhook body (``version: "4"``)."""

    version: Literal["4"]
    group_key: str = Field(alias="groupKey", min_length=1, max_length=GROUP_KEY)
    truncated_alerts: int = Field(default=0, alias="truncatedAlerts", ge=0)
    status: AlertStatus
    receiver: str = Field(max_length=256)
    group_labels: Labels = Field(default_factory=dict, alias="groupLabels")
    common_labels: Labels = Field(default_factory=dict, alias="commonLabels")
    common_annotations: Annotations = Field(default_factory=dict, alias="commonAnnotations")
    external_url: str = Field(default="", alias="externalURL", max_length=4096)
    alerts: list[Alert] = Field(max_length=MAX_ALERTS)


# ---------------------------------------------------------------------- what is stored


class _Stored(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AlertRecord(_Stored):
    """One alert of a group as Stratus last heard of it (bounded, quoted data)."""

    fingerprint: str
    alertname: str
    severity: str = ""
    status: AlertStatus
    starts_at: datetime
    ends_at: datetime | None = None
    summary: str = ""
    description: str = ""
    runbook_url: str = ""
    # The labels that say where: namespace, pod, container, deployment, service …
    labels: dict[str, str] = Field(default_factory=dict)

    def view(self) -> dict[str, Any]:
        """What an event carries about the alert."""
        return self.model_dump(mode="json", exclude={"ends_at"})


class AlertGroup(_Stored):
    """An alert group in one namespace, and the incident it belongs to."""

    schema_version: Literal[1] = 1
    group_key: str
    namespace: str
    receiver: str = ""
    incident_id: str | None = None
    alerts: dict[str, AlertRecord] = Field(default_factory=dict)  # by fingerprint
    # Every alert of the group heard of, by fingerprint (bounded by KEPT_SEEN): whether a
    # notification brings anything new is decided on these, not on the records kept in full.
    seen: dict[str, tuple[AlertStatus, datetime]] = Field(default_factory=dict)
    notifications: int = 0
    first_at: datetime
    last_at: datetime
    version: int = 0

    @property
    def firing(self) -> list[AlertRecord]:
        """The firing alerts kept in full (at most KEPT_ALERTS of them)."""
        return [a for a in self.alerts.values() if a.status == AlertStatus.FIRING]

    @property
    def any_firing(self) -> bool:
        """Whether any alert of the group is firing, also among those not kept in full."""
        return bool(self.firing) or any(s == AlertStatus.FIRING for s, _ in self.seen.values())

    def states(self) -> dict[str, tuple[AlertStatus, datetime]]:
        """What is known of each alert: the full records, and the compact ``seen`` (newer)."""
        known = {k: (a.status, a.starts_at) for k, a in self.alerts.items()}
        return {**known, **self.seen}


WHERE_LABELS = ("namespace", "pod", "container", "deployment", "service", "node", "job")


def record(alert: Alert) -> AlertRecord:
    return AlertRecord(
        fingerprint=alert.key,
        alertname=alert_name(alert.labels),
        severity=clean(alert.labels.get("severity", ""), 32),
        status=alert.status,
        starts_at=alert.starts_at,
        ends_at=alert.ends_at,
        summary=clean(alert.annotations.get("summary", ""), 500),
        description=clean(alert.annotations.get("description", ""), 1000),
        runbook_url=clean(alert.annotations.get("runbook_url", ""), 500),
        labels={k: alert.labels[k] for k in WHERE_LABELS if k in alert.labels},
    )


# ---------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class Refusal:
    """Alerts Stratus will not open an incident for, and why (recorded, never raised)."""

    reason: str
    alertnames: tuple[str, ...]
    namespace: str = ""
    # The cluster it names that the fleet does not serve, or several (docs/fleet.md): a
    # person must fix the alert's labels or the configuration, so the bot says it in Slack.
    cluster: str = ""


@dataclass(frozen=True)
class Partition:
    by_namespace: dict[str, list[Alert]]
    refused: list[Refusal]


def partition(payload: AlertmanagerPayload) -> Partition:
    """The notification's alerts by the namespace they name; alerts without a valid
    ``namespace`` label are refused (an incident needs a namespace)."""
    groups: dict[str, list[Alert]] = {}
    missing: list[str] = []
    invalid: dict[str, list[str]] = {}
    for alert in payload.alerts:
        namespace = alert.labels.get("namespace", "")
        if not namespace:
            missing.append(alert_name(alert.labels))
            continue
        try:
            names.check_namespace(namespace)
        except Invalid:
            invalid.setdefault(namespace, []).append(alert_name(alert.labels))
            continue
        groups.setdefault(namespace, []).append(alert)
    refused = []
    if missing:
        refused.append(
            Refusal(
                "the alert has no namespace label; Stratus opens incidents in a namespace "
                "(keep `namespace` on the rule's result, as the shipped rules do)",
                tuple(missing),
            )
        )
    for namespace, alertnames in invalid.items():
        refused.append(
            Refusal(
                # The label as read: cleaned, or escaped when cleaning changed it (``_value``).
                f"the namespace label {namespace[:80]!r} is not a valid namespace name",
                tuple(alertnames),
            )
        )
    return Partition(groups, refused)


def cluster_of(payload: AlertmanagerPayload) -> tuple[str, Refusal | None]:
    """The fleet's cluster a notification is about: its alerts' ``cluster`` label ('': none,
    the default cluster). Alertmanager groups by cluster when told to (``group_by: [cluster,
    namespace]``); a notification whose alerts name several clusters is refused whole rather
    than split by guess."""
    named = sorted({alert.labels.get("cluster", "") for alert in payload.alerts})
    if len(named) <= 1:
        return (named[0] if named else ""), None
    shown = ", ".join(name or "(none)" for name in named)
    return "", Refusal(
        f"the alerts of one notification name several clusters ({shown}); "
        "group them by cluster in Alertmanager (group_by: [cluster, namespace])",
        tuple(alert_name(a.labels) for a in payload.alerts),
        cluster=shown,
    )


Action = Literal["open", "update", "repeat", "record", "refuse"]


@dataclass(frozen=True)
class GroupDecision:
    """What one notification means for one alert group (in one namespace).

    - ``open``: alerts fired and the group has no open incident: open one (or join the
      namespace's open incident);
    - ``update``: alerts fired or cleared in a group whose incident is known: note them there;
    - ``repeat``: nothing new (Alertmanager's repeat_interval): only the group's count moves;
    - ``record``: nothing to investigate (alerts that cleared before Stratus heard they fired);
    - ``refuse``: alerts fired in a namespace that does not exist: recorded, no incident.
    """

    action: Action
    group: AlertGroup  # the next stored state (the executor fills ``incident_id`` on open)
    fired: list[AlertRecord]  # new, or firing again
    resolved: list[AlertRecord]  # cleared with this notification
    all_resolved: bool  # this notification cleared the group's last firing alert
    reason: str = ""


def decide(
    stored: AlertGroup | None,
    *,
    payload: AlertmanagerPayload,
    namespace: str,
    alerts: list[Alert],
    incident_open: bool,
    namespace_exists: bool,
    now: datetime,
) -> GroupDecision:
    known = stored.states() if stored else {}
    fired: list[AlertRecord] = []
    resolved: list[AlertRecord] = []
    merged = dict(stored.alerts) if stored else {}
    states = dict(known)
    for alert in alerts:
        seen = record(alert)
        before = known.get(seen.fingerprint)
        if seen.status == AlertStatus.FIRING:
            if before is not None and before[1] == seen.starts_at:
                if before[0] == AlertStatus.RESOLVED:
                    # A late or replayed firing of an alert already heard cleared (the same
                    # alert: firing again, Prometheus gives it a new startsAt): not news.
                    continue
            else:
                fired.append(seen)
        elif before is not None and before[0] == AlertStatus.FIRING:
            resolved.append(seen)
        merged[seen.fingerprint] = seen
        states[seen.fingerprint] = (seen.status, seen.starts_at)
    group = AlertGroup(
        group_key=payload.group_key,
        namespace=namespace,
        receiver=clean(payload.receiver, 120),
        incident_id=stored.incident_id if stored else None,
        alerts=_keep(merged),
        seen=_keep_seen(states),
        notifications=(stored.notifications if stored else 0) + 1,
        first_at=stored.first_at if stored else now,
        last_at=now,
        version=stored.version if stored else 0,
    )
    all_resolved = bool(resolved) and not group.any_firing
    linked = stored is not None and stored.incident_id is not None
    if fired and not (linked and incident_open):
        if not namespace_exists:
            reason = f"namespace {namespace!r} does not exist in the cluster"
            return GroupDecision("refuse", group, fired, resolved, all_resolved, reason)
        return GroupDecision("open", group, fired, resolved, all_resolved)
    if linked and (fired or resolved):
        return GroupDecision("update", group, fired, resolved, all_resolved)
    if stored is not None and not fired and not resolved:
        return GroupDecision("repeat", group, [], [], False)
    return GroupDecision("record", group, fired, resolved, all_resolved)


def _keep(alerts: dict[str, AlertRecord]) -> dict[str, AlertRecord]:
    if len(alerts) <= KEPT_ALERTS:
        return alerts
    firing = [a for a in alerts.values() if a.status == AlertStatus.FIRING]
    cleared = sorted(
        (a for a in alerts.values() if a.status != AlertStatus.FIRING),
        key=lambda a: a.starts_at,
    )
    kept = (firing + cleared[-max(KEPT_ALERTS - len(firing), 0) :])[:KEPT_ALERTS]
    return {a.fingerprint: a for a in kept}


def _keep_seen(
    states: dict[str, tuple[AlertStatus, datetime]],
) -> dict[str, tuple[AlertStatus, datetime]]:
    if len(states) <= KEPT_SEEN:
        return states
    # Firing ones first, then the most recently started; the oldest cleared ones drop out.
    order = sorted(
        states.items(),
        key=lambda kv: (kv[1][0] == AlertStatus.FIRING, kv[1][1].timestamp()),
        reverse=True,
    )
    return dict(order[:KEPT_SEEN])


def requester(fired: list[AlertRecord]) -> str:
    """Who an alert-opened incident was started by: the first alert that fired."""
    return f"alert:{fired[0].alertname}" if fired else "alert:alertmanager"


def question(fired: list[AlertRecord]) -> str:
    """The incident's question, written by Stratus from the alert names only (free text from
    the alert — its summary — stays in the events as quoted data, and never reaches a planner
    as if a person had asked it)."""
    alertnames = sorted({a.alertname for a in fired})
    return "alert fired: " + ", ".join(alertnames[:5]) + (" …" if len(alertnames) > 5 else "")


# ---------------------------------------------------------------------- for summaries


@dataclass(frozen=True)
class AlertOutcome:
    """What the alerts of an incident did, from its events: which fired, whether all cleared."""

    fired: tuple[str, ...]  # alert names, in the order they first fired
    cleared: bool  # every alert that fired has cleared since
    cleared_at: str = ""  # when the last one cleared (the event's time)


def outcome(events: list[IncidentEnvelope]) -> AlertOutcome | None:
    """None when no alert took part in the incident."""
    fired: list[str] = []
    cleared = False
    cleared_at = ""
    for envelope in events:
        event = envelope.event
        if event.type == IncidentEventType.ALERT_FIRED:
            for alert in event.data.get("alerts") or []:
                name = str(alert.get("alertname", ""))
                if name and name not in fired:
                    fired.append(name)
            cleared, cleared_at = False, ""
        elif event.type == IncidentEventType.ALERT_RESOLVED and event.data.get("incident_clear"):
            cleared, cleared_at = True, envelope.at
    return AlertOutcome(tuple(fired), cleared, cleared_at) if fired else None
