"""Alert groups in the store, and the use-case that turns an Alertmanager notification into
incidents: ``AlertIntake.receive``.

One incident per alert group (and namespace), also across processes and restarts: a group is
a row keyed by (group key, namespace), read, decided (``incidents.alerts.decide``) and written in
one ``BEGIN IMMEDIATE`` transaction together with the incident it opens and the typed
``incident.alert_*`` events — so two receivers posting the same group at once open one incident
(the second reads the first one's row and finds nothing new), and a surface following the event
stream never sees an alert without its incident. Rows change by compare-and-set on ``version``
as incidents do, and an incident is opened the way ``IncidentWorkflow.start`` opens one,
joining the namespace's open incident when there is one (the unique index on open incidents).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from incidents.alert_text import alert_name
from incidents.alerts import (
    Action,
    AlertGroup,
    AlertmanagerPayload,
    AlertRecord,
    GroupDecision,
    Refusal,
    cluster_of,
    decide,
    partition,
    question,
    requester,
)
from incidents.model import Incident, IncidentState, new_incident_id
from incidents.repository import (
    IncidentClosed,
    IncidentEventType,
    IncidentNotFound,
    IncidentRepository,
    NamespaceTaken,
    StaleIncident,
)
from incidents.workflow import IncidentWorkflow
from store import versioned
from store.audit import AuditLog
from store.db import Store
from store.errors import Stale
from tools.errors import UnknownCluster
from tools.objects import ObjectRef

log = logging.getLogger("stratus.alerts")
SHOWN_ALERTS = 20  # alerts an event carries; the rest are counted


class StaleAlertGroup(Stale):
    """Someone else stored the alert group first (compare-and-set lost)."""


TABLE = versioned.Table(
    "alert_groups",
    "alert group",
    ("incident_id", "firing", "version", "body", "updated_at"),
    key=("group_key", "namespace"),
    stale=StaleAlertGroup,
)


class AlertGroupRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, group_key: str, namespace: str) -> AlertGroup | None:
        rows = self.store.query(
            "SELECT body FROM alert_groups WHERE group_key = ? AND namespace = ?",
            [group_key, namespace],
        )
        return AlertGroup.model_validate_json(rows[0]["body"]) if rows else None

    def for_incident(self, incident_id: str) -> list[AlertGroup]:
        rows = self.store.query(
            "SELECT body FROM alert_groups WHERE incident_id = ? ORDER BY created_at",
            [incident_id],
        )
        return [AlertGroup.model_validate_json(r["body"]) for r in rows]

    def put(self, group: AlertGroup, *, expected_version: int | None) -> AlertGroup:
        """Insert a new group (``expected_version`` None) or store the next version of a known
        one (compare-and-set); raises ``StaleAlertGroup`` when someone else wrote first."""
        saved = group.model_copy(update={"version": (expected_version or 0) + 1})
        columns: dict[str, Any] = {
            "incident_id": saved.incident_id,
            "firing": 1 if saved.any_firing else 0,
            "version": saved.version,
            "body": saved.model_dump_json(),
            "updated_at": saved.last_at.isoformat(),
        }
        key = {"group_key": saved.group_key, "namespace": saved.namespace}
        with self.store.immediate() as db:
            if expected_version is None:
                try:
                    db.table("alert_groups").insert(
                        {**columns, **key, "created_at": saved.first_at.isoformat()}
                    )
                except sqlite3.IntegrityError as exc:
                    raise StaleAlertGroup(
                        "the alert group was stored by someone else first",
                        subject=group.group_key,
                        details={"record": "alert group"},
                    ) from exc
                return saved
            TABLE.save(db, {**columns, **key}, expected=expected_version)
        return saved


@dataclass(frozen=True)
class GroupOutcome:
    namespace: str
    action: Action
    incident_id: str | None = None
    opened: bool = False  # a new incident: the caller posts its thread and advances it
    joined: bool = False  # the group joined the namespace's open incident
    fired: tuple[str, ...] = ()
    resolved: tuple[str, ...] = ()
    all_resolved: bool = False
    reason: str = ""


@dataclass(frozen=True)
class IntakeResult:
    groups: list[GroupOutcome] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)

    @property
    def opened(self) -> list[str]:
        return [g.incident_id for g in self.groups if g.opened and g.incident_id]

    def to_json(self) -> dict[str, Any]:
        return {
            "groups": [asdict(g) for g in self.groups],
            "refused": [asdict(r) for r in self.refused],
        }


class AlertIntake:
    """Alertmanager notification in, incidents opened or updated out (nothing advanced: the
    caller investigates in the background, as ``stratus investigate`` and the bot do)."""

    def __init__(self, workflow: IncidentWorkflow, *, retries: int = 8) -> None:
        self.workflow = workflow
        self.store = workflow.store
        self.groups = AlertGroupRepository(workflow.store)
        self.incidents = IncidentRepository(workflow.store)
        self.audit = AuditLog(workflow.store)
        self.retries = retries

    def receive(self, payload: AlertmanagerPayload) -> IntakeResult:
        cluster, wrong_cluster = self._cluster(payload)
        if wrong_cluster is not None:
            self._refused(payload, wrong_cluster)
            return IntakeResult([], [wrong_cluster])
        split = partition(payload)
        # The cluster is read before the transaction: nothing waits on the network while
        # SQLite's write lock is held.
        exists = {ns: self._exists(ns, cluster) for ns in split.by_namespace}
        for namespace in split.by_namespace:
            # An incident parked past the bound (its thread never posted) is not joined.
            self.workflow.release_parked_in(namespace, cluster=cluster)
        outcomes = [
            self._one(payload, namespace, alerts, exists[namespace], cluster)
            for namespace, alerts in sorted(split.by_namespace.items())
        ]
        for refusal in split.refused:
            self._refused(payload, refusal)
        refused = [
            *split.refused,
            *(Refusal(o.reason, o.fired, o.namespace) for o in outcomes if o.action == "refuse"),
        ]
        return IntakeResult(outcomes, refused)

    def _cluster(self, payload: AlertmanagerPayload) -> tuple[str, Refusal | None]:
        """The cluster the notification's ``cluster`` label names, or why it is refused: a
        name the fleet does not serve is never guessed. Without a fleet (one unnamed
        cluster) the label decides nothing, as before fleets."""
        named, mixed = cluster_of(payload)
        if mixed is not None or not self.workflow.fleet:
            return "", mixed
        try:
            return self.workflow.cluster_named(named), None
        except UnknownCluster as unknown:
            names = tuple(alert_name(a.labels) for a in payload.alerts)
            return "", Refusal(unknown.message, names, cluster=named)

    def _exists(self, namespace: str, cluster: str) -> bool:
        kube = self.workflow.deps.on(cluster).kube
        return kube.find(ObjectRef("Namespace", namespace)) is not None

    def _one(
        self,
        payload: AlertmanagerPayload,
        namespace: str,
        alerts: list[Any],
        exists: bool,
        cluster: str = "",
    ) -> GroupOutcome:

        def attempt() -> GroupOutcome:
            # A writer outside this protocol may move the group: then it is decided again.
            with self.store.immediate():
                stored = self.groups.get(payload.group_key, namespace)
                decision = decide(
                    stored,
                    payload=payload,
                    namespace=namespace,
                    alerts=alerts,
                    incident_open=self._open(stored),
                    namespace_exists=exists,
                    now=self.workflow.clock.now(),
                )
                return self._apply(
                    decision, payload, expected=stored.version if stored else None, cluster=cluster
                )

        return versioned.retrying(
            attempt,
            attempts=self.retries,
            record="alert group",
            subject=payload.group_key,
            stale=StaleAlertGroup,
        )

    def _open(self, stored: AlertGroup | None) -> bool:
        if stored is None or stored.incident_id is None:
            return False
        try:
            return self.incidents.get(stored.incident_id).is_open
        except IncidentNotFound:
            return False

    # ------------------------------------------------------------------ applying a decision

    def _apply(
        self,
        decision: GroupDecision,
        payload: AlertmanagerPayload,
        *,
        expected: int | None,
        cluster: str = "",
    ) -> GroupOutcome:
        group = decision.group
        fired = tuple(a.alertname for a in decision.fired)
        resolved = tuple(a.alertname for a in decision.resolved)
        base = GroupOutcome(
            namespace=group.namespace,
            action=decision.action,
            incident_id=group.incident_id,
            fired=fired,
            resolved=resolved,
            all_resolved=decision.all_resolved,
            reason=decision.reason,
        )
        if decision.action == "open":
            incident, joined = self._open_incident(decision, cluster)
            group = self.groups.put(
                group.model_copy(update={"incident_id": incident.id}), expected_version=expected
            )
            self._fired(incident, decision, payload, joined=joined)
            self._audit(decision, payload, incident.id, cluster)
            return replace(base, incident_id=incident.id, opened=not joined, joined=joined)
        group = self.groups.put(group, expected_version=expected)
        if decision.action == "refuse":
            self._refused(payload, Refusal(decision.reason, fired, group.namespace))
        elif decision.action == "update" and group.incident_id:
            incident = self.incidents.get(group.incident_id)
            if decision.fired:
                self._fired(incident, decision, payload, joined=False)
            if decision.resolved:
                self._resolved(incident, decision)
            self._audit(decision, payload, incident.id, cluster)
        return base

    def _open_incident(self, decision: GroupDecision, cluster: str = "") -> tuple[Incident, bool]:
        """As ``IncidentWorkflow.start`` opens one, inside this transaction."""
        flow = self.workflow
        now = flow.clock.now()
        incident = Incident(
            id=new_incident_id(),
            namespace=decision.group.namespace,
            question=question(decision.fired),
            requester=requester(decision.fired),
            source="alert",
            state=IncidentState.DETECTING,
            created_at=now,
            updated_at=now,
            max_attempts=flow.config.max_attempts,
            planner=flow.llm.name if flow.llm else flow.offline.name,
            cluster=cluster,
        )
        # The namespace's recent escalation is looked at again (the same incident and thread):
        # reported as opened, so the bot drives it, as it drives a new one.
        again = flow.recent_escalation(decision.group.namespace, cluster=cluster)
        if again is not None:
            with contextlib.suppress(IncidentClosed, NamespaceTaken, StaleIncident):
                return flow.reopen(again.id, actor=incident.requester, why=incident.question), False
        existing = self.incidents.insert(incident)
        return (existing, True) if existing is not None else (incident, False)

    def _fired(
        self,
        incident: Incident,
        decision: GroupDecision,
        payload: AlertmanagerPayload,
        *,
        joined: bool,
    ) -> None:
        names = _names(decision.fired)
        self.incidents.note(
            incident,
            IncidentEventType.ALERT_FIRED,
            actor=requester(decision.fired),
            message=f"{names} fired"
            + (" (the alert group joined this open incident)" if joined else ""),
            data={
                "group_key": decision.group.group_key[:300],
                "receiver": decision.group.receiver,
                "alerts": [a.view() for a in decision.fired[:SHOWN_ALERTS]],
                "more": max(len(decision.fired) - SHOWN_ALERTS, 0) + payload.truncated_alerts,
                "joined": joined,
            },
        )

    def _resolved(self, incident: Incident, decision: GroupDecision) -> None:
        others = [
            g
            for g in self.groups.for_incident(incident.id)
            if (g.group_key, g.namespace) != (decision.group.group_key, decision.group.namespace)
        ]
        groups = [decision.group, *others]
        still = [a.alertname for g in groups for a in g.firing]
        clear = not any(g.any_firing for g in groups)
        self.incidents.note(
            incident,
            IncidentEventType.ALERT_RESOLVED,
            actor=requester(decision.resolved),
            message=f"{_names(decision.resolved)} cleared"
            + ("; no alert of this incident is firing any more" if clear else ""),
            data={
                "group_key": decision.group.group_key[:300],
                "alerts": [a.view() for a in decision.resolved[:SHOWN_ALERTS]],
                "more": max(len(decision.resolved) - SHOWN_ALERTS, 0),
                "group_clear": decision.all_resolved,
                "incident_clear": clear,
                "still_firing": sorted(set(still))[:SHOWN_ALERTS],
                "incident_state": incident.state.value,
            },
        )

    def _audit(
        self, decision: GroupDecision, payload: AlertmanagerPayload, incident: str, cluster: str
    ) -> None:
        self.audit.append(
            actor="alertmanager",
            event="alert",
            subject=f"namespace/{decision.group.namespace}",
            payload={
                "incident": incident,
                "action": decision.action,
                "group_key": payload.group_key[:300],
                "fired": [a.alertname for a in decision.fired][:SHOWN_ALERTS],
                "resolved": [a.alertname for a in decision.resolved][:SHOWN_ALERTS],
                **({"cluster": cluster} if cluster else {}),
            },
        )

    def _refused(self, payload: AlertmanagerPayload, refusal: Refusal) -> None:
        log.warning("alert refused (%s): %s", ", ".join(refusal.alertnames), refusal.reason)
        self.audit.append(
            actor="alertmanager",
            event="alert_refused",
            subject=f"namespace/{refusal.namespace}" if refusal.namespace else "alertmanager",
            payload={
                "reason": refusal.reason,
                "alerts": list(refusal.alertnames)[:SHOWN_ALERTS],
                "group_key": payload.group_key[:300],
                **({"cluster": refusal.cluster[:120]} if refusal.cluster else {}),
            },
        )


def _names(alerts: list[AlertRecord]) -> str:
    shown = sorted({a.alertname for a in alerts})
    return ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
