"""Issue 18's mechanisms on recorded snapshots (no lab): an init container that never ends, a
container a rollout added that fails, and a StatefulSet's template change rolled back through
its ControllerRevisions. Each names the mechanism, not a scenario's objects."""

from __future__ import annotations

import dataclasses
import json

from agents.analyzers import _workloads as w
from agents.analyzers import analyze
from agents.analyzers.init_containers import stuck_init_containers
from agents.analyzers.jobs import failed_jobs
from agents.analyzers.replicas import hpa_floor
from agents.model import Category, Finding, ResourceKey
from agents.planner.offline import plan_offline
from agents.remedies import escalation, remedies_for
from agents.snapshot import LAST_APPLIED, Snapshot
from tests.unit.snapshots import recorded


def _without_logs(snapshot: Snapshot) -> Snapshot:
    return dataclasses.replace(snapshot, logs={}, previous_logs={})


def _strip_history(snapshot: Snapshot) -> Snapshot:
    """The snapshot as if the workloads had no earlier revision to compare with."""
    objects = {k: v for k, v in snapshot.objects.items() if k not in ("ReplicaSet",)}
    objects["ReplicaSet"] = [
        rs
        for rs in snapshot.objects.get("ReplicaSet", [])
        if int((rs["metadata"].get("annotations") or {}).get(w.REVISION, "0")) > 1
    ]
    return dataclasses.replace(snapshot, objects=objects)


def test_an_init_container_waiting_in_a_loop_after_a_rollout_is_rolled_back() -> None:
    snapshot = recorded("s1-shop-init-container-never-finishes").snapshot()
    [finding] = stuck_init_containers(snapshot)
    assert finding.mechanism == "init-container-stuck"
    assert str(finding.resource) == "Deployment/catalog"
    assert finding.facts["init"] is True and finding.facts["rollback_to"] == 1
    assert any(e.source == "log" and "waiting" in e.text for e in finding.evidence)
    plan = plan_offline(snapshot)
    assert plan.candidates[0].steps[0].action == "rollout-undo"
    assert plan.candidates[0].steps[0].params == {"to_revision": 1}


def test_a_running_init_container_that_says_nothing_is_not_a_fault() -> None:
    """Slow is not stuck: without a waiting line or a passed progress deadline, nothing."""
    snapshot = _without_logs(recorded("s1-shop-init-container-never-finishes").snapshot())
    assert stuck_init_containers(snapshot) == []


def test_a_stuck_init_container_the_rollout_did_not_bring_has_no_rollback() -> None:
    snapshot = _strip_history(recorded("s1-shop-init-container-never-finishes").snapshot())
    [finding] = stuck_init_containers(snapshot)
    assert "rollback_to" not in finding.facts
    assert finding.confidence < 0.85  # a waiting log alone is the weakest sign


def test_a_sidecar_the_rollout_added_explains_its_own_crash() -> None:
    snapshot = recorded("s1-hotel-sidecar-command-missing").snapshot()
    found = [f for f in analyze(snapshot) if f.facts.get("container") == "envoy"]
    assert [f.mechanism for f in found] == ["command-not-found"]
    assert found[0].facts["rollback_to"] == 1
    plan = plan_offline(snapshot)
    assert plan.diagnosis is not None and str(plan.diagnosis.resource) == "Deployment/geo"
    assert plan.candidates[0].steps[0].action == "rollout-undo"


def test_a_statefulset_template_change_is_read_from_its_controller_revisions() -> None:
    snapshot = recorded("s1-shop-statefulset-probe-wrong-port").snapshot()
    postgres = snapshot.get("StatefulSet", "postgres")
    assert postgres is not None
    change = w.latest_change(snapshot, postgres)
    assert change is not None and change.previous == 1 and change.revision == 2
    assert change.touches("postgres", "readinessProbe")
    plan = plan_offline(snapshot)
    assert plan.diagnosis is not None and plan.diagnosis.mechanism == "probe-wrong-port"
    first = plan.candidates[0].steps[0]
    assert (first.action, first.kind, first.name) == ("rollout-undo", "StatefulSet", "postgres")
    assert first.params == {"to_revision": 1}


def _finding(mechanism: str, **facts: object) -> Finding:
    kind, name = str(facts["workload_kind"]), str(facts["workload"])
    return Finding(
        analyzer="test",
        mechanism=mechanism,
        category=Category.BAD_DEPLOY,
        resource=ResourceKey(kind=kind, name=name, namespace="ns"),
        summary=f"{kind.lower()}/{name}: container app cannot pull its image",
        facts=dict(facts),
    )


def test_an_escalation_names_what_to_do_and_why_stratus_cannot() -> None:
    job = escalation.manual(
        _finding("image-pull-failed", workload_kind="Job", workload="backfill", container="app")
    )
    assert job is not None
    assert job.startswith("re-create job/backfill with the fault fixed (container app cannot")
    assert "Stratus cannot: a Job's pod template cannot be changed" in job

    cron = escalation.manual(
        _finding(
            "image-pull-failed",
            workload_kind="CronJob",
            workload="report",
            container="app",
            jobs=["report-1"],
        )
    )
    assert cron is not None
    assert "fix container app of cronjob/report in its job template" in cron
    assert "then delete job/report-1 so its stuck pods go" in cron
    assert cron.endswith("Stratus cannot: " + escalation.NO_KNOWN_GOOD)

    probe = escalation.manual(
        _finding(
            "probe-wrong-port",
            workload_kind="StatefulSet",
            workload="db",
            container="db",
            probe="readinessProbe",
            serves=[5432],
        )
    )
    assert probe is not None and "readinessProbe of container db of statefulset/db" in probe
    assert "(it serves 5432)" in probe and escalation.NO_PROBE_ACTION in probe

    config = escalation.manual(
        _finding(
            "missing-config-ref",
            workload_kind="Deployment",
            workload="web",
            container="web",
            message='configmap "settings" not found',
        )
    )
    assert config is not None
    assert config.startswith(
        "create what container web of deployment/web reads and is missing "
        '(configmap "settings" not found)'
    )
    assert "the catalog does not create ConfigMaps or Secrets" in config

    assert escalation.manual(_finding("x", workload_kind="", workload="")) is None


def test_a_job_pod_belongs_to_the_cronjob_that_made_the_job() -> None:
    cronjob = {"metadata": {"name": "report", "uid": "c"}}
    job = {
        "metadata": {
            "name": "report-1",
            "ownerReferences": [{"kind": "CronJob", "name": "report", "controller": True}],
        }
    }
    bare = {"metadata": {"name": "backfill"}}
    pod = {
        "metadata": {
            "name": "report-1-x",
            "ownerReferences": [{"kind": "Job", "name": "report-1", "controller": True}],
        }
    }
    lone = {
        "metadata": {
            "name": "backfill-x",
            "ownerReferences": [{"kind": "Job", "name": "backfill", "controller": True}],
        }
    }
    snapshot = Snapshot(
        namespace="ns",
        objects={"CronJob": [cronjob], "Job": [job, bare], "Pod": [pod, lone]},
        cluster={},
    )
    assert w.workload_of(snapshot, pod) == ("CronJob", "report")
    assert w.workload_of(snapshot, lone) == ("Job", "backfill")


def _applied(obj: dict[str, object]) -> str:
    return json.dumps(obj)


def _hpa_snapshot(minimum: int, replicas: int) -> Snapshot:
    hpa_spec = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 4,
    }
    hpa = {
        "metadata": {"name": "web", "annotations": {LAST_APPLIED: _applied({"spec": hpa_spec})}},
        "spec": {**hpa_spec, "minReplicas": minimum, "maxReplicas": max(minimum, 4)},
    }
    web = {
        "metadata": {
            "name": "web",
            "annotations": {LAST_APPLIED: _applied({"spec": {"replicas": 2}})},
        },
        "spec": {"replicas": replicas},
    }
    return Snapshot(
        namespace="ns",
        objects={"HorizontalPodAutoscaler": [hpa], "Deployment": [web]},
        cluster={},
    )


def test_an_autoscaler_floor_raised_above_what_it_was_applied_with_is_put_back() -> None:
    [finding] = hpa_floor(_hpa_snapshot(minimum=10, replicas=10))
    assert finding.mechanism == "hpa-floor-raised"
    assert finding.facts == {
        "min_replicas": 2,
        "max_replicas": 4,
        "target_kind": "Deployment",
        "target": "web",
        "replicas": 2,
    }
    [candidate] = remedies_for(finding, _hpa_snapshot(minimum=10, replicas=10))
    assert [(s.action, s.kind, s.params) for s in candidate.steps] == [
        ("patch-hpa", "HorizontalPodAutoscaler", {"min_replicas": 2, "max_replicas": 4}),
        ("scale", "Deployment", {"replicas": 2}),
    ]


def test_an_autoscaler_at_its_applied_floor_is_left_alone() -> None:
    assert hpa_floor(_hpa_snapshot(minimum=2, replicas=2)) == []
    assert hpa_floor(_hpa_snapshot(minimum=2, replicas=3)) == []  # scaled up by load: fine


def test_an_init_container_repeating_one_line_is_polling_not_slow() -> None:
    snapshot = recorded("s1-shop-init-container-never-finishes").snapshot()
    key = next(k for k in snapshot.logs if k.endswith("/wait-for-schema"))
    polling = dataclasses.replace(snapshot, logs={**snapshot.logs, key: "ping db\nping db\n"})
    [finding] = stuck_init_containers(polling)
    assert any(e.source == "log" and e.text == "ping db" for e in finding.evidence)
    once = dataclasses.replace(snapshot, logs={**snapshot.logs, key: "ping db\n"})
    assert stuck_init_containers(once) == []


def _failed_job_snapshot(owner: list[dict[str, object]]) -> Snapshot:
    job = {
        "metadata": {"name": "backfill", "uid": "j", "ownerReferences": owner},
        "status": {
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            ]
        },
    }
    pod = {
        "metadata": {
            "name": "backfill-x",
            "ownerReferences": [{"kind": "Job", "name": "backfill", "controller": True}],
        },
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "load",
                    "ready": False,
                    "state": {"terminated": {"exitCode": 127, "reason": "Error"}},
                }
            ],
        },
    }
    return Snapshot(
        namespace="ns",
        objects={"Job": [job], "Pod": [pod]},
        cluster={},
        logs={"pod/backfill-x/load": "sh: loader: not found\n"},
    )


def test_a_one_off_job_that_gave_up_is_named_and_escalated_with_what_to_do() -> None:
    plan = plan_offline(_failed_job_snapshot([]))
    assert plan.diagnosis is not None and str(plan.diagnosis.resource) == "Job/backfill"
    assert plan.diagnosis.mechanism == "job-failed"
    assert "container load exits at once" in plan.diagnosis.summary
    assert plan.candidates == []
    [note] = [n for n in plan.notes if n.startswith("no catalog action")]
    assert "re-create job/backfill with the fault fixed" in note


def test_a_failed_run_of_a_cronjob_is_left_to_its_next_schedule() -> None:
    made_by = [{"kind": "CronJob", "name": "nightly", "controller": True}]
    assert failed_jobs(_failed_job_snapshot(made_by)) == []
