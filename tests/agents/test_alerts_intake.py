"""Alertmanager notifications into incidents, against the lab over real HTTP and a real store:
one incident per alert group (also when two receivers post the same group at once, in
threads or in processes, and after a restart), repeats that add nothing, new alerts and
cleared ones on the group's incident, joining the namespace's open incident, refusals that
open nothing, and the workflow investigating an alert's incident to the end."""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.planner.offline import OfflinePlanner
from incidents.alert_store import AlertGroupRepository, AlertIntake, IntakeResult
from incidents.alerts import AlertmanagerPayload, outcome
from incidents.model import IncidentState
from incidents.repository import IncidentEventType, IncidentRepository
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from policies.model import Rule
from proposals.service import ProposalService
from store.audit import AuditLog
from store.db import Store
from tests.agents.alert_payloads import alert, payload
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient

ALLOW = Rule(name="allow-everything", decision="allow", allow_irreversible=True)


def build(kube: KubeClient, store: Store) -> IncidentWorkflow:
    box = PolicyBox()
    box.set(ALLOW)
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=box
    )
    return IncidentWorkflow(
        service=service,
        kube=kube,
        offline=OfflinePlanner(),
        config=WorkflowConfig(settle_timeout=8, poll_interval=0.1),
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "alerts.db"


@pytest.fixture
def intake(kube: KubeClient, db: Path) -> Iterator[AlertIntake]:
    store = Store(db)
    yield AlertIntake(build(kube, store))
    store.close()


def receive(intake: AlertIntake, body: dict[str, Any]) -> IntakeResult:
    return intake.receive(AlertmanagerPayload.model_validate(body))


def alert_events(intake: AlertIntake, incident_id: str) -> list[Any]:
    return [
        e.event
        for e in intake.incidents.events(incident_id=incident_id)
        if e.event.type in (IncidentEventType.ALERT_FIRED, IncidentEventType.ALERT_RESOLVED)
    ]


def test_the_first_notification_opens_one_incident_started_by_the_alert(
    lab: Lab, intake: AlertIntake
) -> None:
    result = receive(intake, payload(alert(pod="geo-1", summary="geo keeps restarting")))
    (group,) = result.groups
    assert group.action == "open" and group.opened and result.opened == [group.incident_id]
    incident = intake.incidents.get(result.opened[0])
    assert incident.namespace == "hotel" and incident.source == "alert"
    assert incident.requester == "alert:KubePodCrashLooping"
    assert incident.state == IncidentState.DETECTING
    assert incident.question == "alert fired: KubePodCrashLooping"
    (fired,) = alert_events(intake, incident.id)
    assert fired.type == IncidentEventType.ALERT_FIRED
    (shown,) = fired.data["alerts"]
    assert shown["summary"] == "geo keeps restarting" and shown["labels"]["pod"] == "geo-1"
    assert AuditLog(intake.store).verify() == []


def test_a_repeat_opens_nothing_and_says_nothing(lab: Lab, intake: AlertIntake) -> None:
    first = receive(intake, payload(alert()))
    again = receive(intake, payload(alert()))
    assert again.groups[0].action == "repeat" and again.opened == []
    assert again.groups[0].incident_id == first.opened[0]
    assert len(alert_events(intake, first.opened[0])) == 1
    assert len(intake.incidents.recent()) == 1


def test_new_and_cleared_alerts_go_to_the_group_s_incident(lab: Lab, intake: AlertIntake) -> None:
    (incident_id,) = receive(intake, payload(alert(pod="geo-1"))).opened
    oom = alert("KubeContainerOOMKilled", pod="geo-1")
    more = receive(intake, payload(alert(pod="geo-1"), oom))
    assert more.groups[0].action == "update" and more.groups[0].fired == ("KubeContainerOOMKilled",)
    receive(intake, payload(alert(pod="geo-1", status="resolved"), oom))
    last = receive(
        intake,
        payload(
            alert(pod="geo-1", status="resolved"),
            alert("KubeContainerOOMKilled", pod="geo-1", status="resolved"),
        ),
    )
    assert last.groups[0].all_resolved
    events = alert_events(intake, incident_id)
    assert [e.type.value for e in events] == [
        "incident.alert_fired",
        "incident.alert_fired",
        "incident.alert_resolved",
        "incident.alert_resolved",
    ]
    assert not events[2].data["incident_clear"] and events[2].data["still_firing"] == [
        "KubeContainerOOMKilled"
    ]
    assert events[3].data["incident_clear"]
    summary = outcome(intake.incidents.events(incident_id=incident_id))
    assert summary is not None and summary.cleared
    assert summary.fired == ("KubePodCrashLooping", "KubeContainerOOMKilled")


def test_a_second_group_in_the_namespace_joins_its_open_incident_and_clears_with_it(
    lab: Lab, intake: AlertIntake
) -> None:
    (incident_id,) = receive(intake, payload(alert(), group_key="g-crash")).opened
    joined = receive(intake, payload(alert("KubePodNotReady"), group_key="g-pending"))
    assert joined.groups[0].joined and joined.groups[0].incident_id == incident_id
    assert joined.opened == []
    receive(intake, payload(alert(status="resolved"), group_key="g-crash"))
    events = alert_events(intake, incident_id)
    assert events[1].data["joined"] and not events[-1].data["incident_clear"]
    receive(intake, payload(alert("KubePodNotReady", status="resolved"), group_key="g-pending"))
    assert alert_events(intake, incident_id)[-1].data["incident_clear"]


def test_refused_alerts_open_nothing_and_are_recorded(lab: Lab, intake: AlertIntake) -> None:
    result = receive(
        intake,
        payload(
            alert(namespace=None),
            alert("KubePodNotReady", namespace="Hotel!"),
            alert("KubeContainerOOMKilled", namespace="ghost"),
        ),
    )
    assert result.opened == [] and intake.incidents.recent() == []
    reasons = " | ".join(r.reason for r in result.refused)
    assert "no namespace label" in reasons and "not a valid namespace" in reasons
    assert "'ghost' does not exist" in reasons
    refusals = [r for r in AuditLog(intake.store).records(limit=100) if r.event == "alert_refused"]
    assert len(refusals) == 3


def test_the_same_group_after_a_restart_is_the_same_incident(
    lab: Lab, kube: KubeClient, db: Path
) -> None:
    first = Store(db)
    (incident_id,) = receive(AlertIntake(build(kube, first)), payload(alert())).opened
    first.close()
    second = Store(db)
    try:
        intake = AlertIntake(build(kube, second))
        again = receive(intake, payload(alert(), alert("KubePodNotReady")))
        assert again.opened == [] and again.groups[0].incident_id == incident_id
        assert again.groups[0].fired == ("KubePodNotReady",)
        assert len(IncidentRepository(second).recent()) == 1
    finally:
        second.close()


def test_two_receivers_posting_the_same_group_at_once_open_one_incident(
    lab: Lab, kube: KubeClient, db: Path
) -> None:
    """Eight receivers, each with its own connection (as separate processes have), post the
    same first notification at the same moment."""
    Store(db).close()  # migrated once, before the race
    barrier = threading.Barrier(8)
    results: list[IntakeResult] = []
    errors: list[BaseException] = []

    def post() -> None:
        store = Store(db)
        client = KubeClient(kubeconfig=str(lab.kubeconfig))
        try:
            intake = AlertIntake(build(client, store))
            body = AlertmanagerPayload.model_validate(payload(alert(pod="geo-1")))
            barrier.wait()
            results.append(intake.receive(body))
        except BaseException as error:
            errors.append(error)
        finally:
            client.close()
            store.close()

    threads = [threading.Thread(target=post) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    opened = [i for r in results for i in r.opened]
    assert len(opened) == 1
    assert sorted(r.groups[0].action for r in results) == ["open"] + ["repeat"] * 7
    store = Store(db)
    try:
        assert len(IncidentRepository(store).recent()) == 1
        events = IncidentRepository(store).events(incident_id=opened[0])
        assert [e.event.type for e in events].count(IncidentEventType.ALERT_FIRED) == 1
        assert AlertGroupRepository(store).get('{}:{namespace="hotel"}', "hotel") is not None
    finally:
        store.close()


def _post_in_a_process(db: str, kubeconfig: str, start: Any, out: Any) -> None:
    store = Store(db)
    client = KubeClient(kubeconfig=kubeconfig)
    try:
        intake = AlertIntake(build(client, store))
        body = AlertmanagerPayload.model_validate(payload(alert(pod="geo-1")))
        start.wait()
        out.put(intake.receive(body).opened)
    finally:
        client.close()
        store.close()


def test_two_processes_posting_the_same_group_at_once_open_one_incident(lab: Lab, db: Path) -> None:
    Store(db).close()
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    out = context.Queue()
    workers = [
        context.Process(target=_post_in_a_process, args=(str(db), str(lab.kubeconfig), start, out))
        for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    try:
        start.set()
        opened = [i for _ in workers for i in out.get(timeout=90)]
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
    assert len(opened) == 1
    store = Store(db)
    try:
        assert len(IncidentRepository(store).recent()) == 1
    finally:
        store.close()


def test_an_alert_s_incident_is_investigated_and_its_alerts_clearing_are_noted(
    lab: Lab, intake: AlertIntake
) -> None:
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    lab.settle()
    firing = alert("ServiceHighErrorRate", service="frontend")
    (incident_id,) = receive(intake, payload(firing)).opened
    done = intake.workflow.advance(incident_id)
    assert done.state == IncidentState.RESOLVED, done.reason
    cleared = receive(intake, payload({**firing, "status": "resolved"}))
    assert cleared.groups[0].action == "update" and cleared.groups[0].all_resolved
    (resolved,) = [
        e for e in alert_events(intake, incident_id) if e.type == IncidentEventType.ALERT_RESOLVED
    ]
    assert resolved.data["incident_clear"] and resolved.data["incident_state"] == "resolved"
