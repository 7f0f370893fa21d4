"""autoscaling/v1, batch/v1 Jobs and CronJobs, policy/v1 budgets and eviction, ControllerRevisions
and PersistentVolumes, through the official Python client over HTTP (the kubectl verbs are in
the matrix, tests/lab/test_kubectl.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from lab.controllers.cron_schedule import Schedule
from tests.conftest import Lab


@pytest.fixture
def api(lab: Lab) -> Iterator[client.ApiClient]:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(lab.kubeconfig), client_configuration=configuration)
    with client.ApiClient(configuration) as api_client:
        yield api_client


def _job(name: str, command: list[str], **spec: object) -> client.V1Job:
    container = client.V1Container(name="main", image="busybox:1.36", command=command)
    template = client.V1PodTemplateSpec(
        spec=client.V1PodSpec(containers=[container], restart_policy="Never")
    )
    return client.V1Job(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1JobSpec(template=template, **spec),  # type: ignore[arg-type]
    )


def _conditions(job: client.V1Job) -> list[str]:
    return [c.type for c in job.status.conditions or [] if c.status == "True"]


def test_hpa_one_storage_served_as_v1_and_v2(api: client.ApiClient) -> None:
    v1, v2 = client.AutoscalingV1Api(api), client.AutoscalingV2Api(api)
    v1.create_namespaced_horizontal_pod_autoscaler(
        "hotel",
        client.V1HorizontalPodAutoscaler(
            metadata=client.V1ObjectMeta(name="geo"),
            spec=client.V1HorizontalPodAutoscalerSpec(
                scale_target_ref=client.V1CrossVersionObjectReference(
                    api_version="apps/v1", kind="Deployment", name="geo"
                ),
                min_replicas=2,
                max_replicas=5,
                target_cpu_utilization_percentage=70,
            ),
        ),
    )
    stored = v2.read_namespaced_horizontal_pod_autoscaler("geo", "hotel")
    assert stored.api_version == "autoscaling/v2"
    assert stored.spec.metrics[0].resource.target.average_utilization == 70
    assert stored.status.desired_replicas == 2
    assert client.AppsV1Api(api).read_namespaced_deployment("geo", "hotel").spec.replicas == 2
    seen = v1.read_namespaced_horizontal_pod_autoscaler("geo", "hotel")
    assert seen.api_version == "autoscaling/v1"
    assert seen.spec.target_cpu_utilization_percentage == 70
    assert seen.status.current_cpu_utilization_percentage == 40
    v1.patch_namespaced_horizontal_pod_autoscaler(
        "geo", "hotel", {"spec": {"targetCPUUtilizationPercentage": 60}}
    )
    assert (
        v2.read_namespaced_horizontal_pod_autoscaler("geo", "hotel")
        .spec.metrics[0]
        .resource.target.average_utilization
        == 60
    )
    listed = v1.list_namespaced_horizontal_pod_autoscaler("hotel").items
    assert [h.spec.max_replicas for h in listed] == [5]


def test_jobs_run_to_completion_or_fail(api: client.ApiClient, lab: Lab) -> None:
    batch = client.BatchV1Api(api)
    batch.create_namespaced_job("hotel", _job("once", ["echo", "hello"]))
    batch.create_namespaced_job(
        "hotel", _job("three", ["sleep", "5"], completions=3, parallelism=2)
    )
    batch.create_namespaced_job("hotel", _job("broken", ["sh", "-c", "exit 1"], backoff_limit=2))
    once = batch.read_namespaced_job("once", "hotel")
    assert once.status.succeeded == 1 and "Complete" in _conditions(once)
    assert once.spec.selector.match_labels["batch.kubernetes.io/controller-uid"] == (
        once.metadata.uid
    )
    core = client.CoreV1Api(api)
    pods = core.list_namespaced_pod("hotel", label_selector="job-name=once").items
    assert [p.status.phase for p in pods] == ["Succeeded"]
    assert core.read_namespaced_pod_log(pods[0].metadata.name, "hotel") == "hello\n"
    three = batch.read_namespaced_job("three", "hotel")
    assert three.status.succeeded == 3 and "Complete" in _conditions(three)
    assert three.status.completion_time > three.status.start_time
    broken = batch.read_namespaced_job("broken", "hotel")
    assert broken.status.failed == 3 and "Failed" in _conditions(broken)
    assert broken.status.conditions[-1].reason == "BackoffLimitExceeded"
    with pytest.raises(ApiException) as refused:
        batch.create_namespaced_job(
            "hotel",
            client.V1Job(
                metadata=client.V1ObjectMeta(name="always"),
                spec=client.V1JobSpec(
                    template=client.V1PodTemplateSpec(
                        spec=client.V1PodSpec(
                            containers=[client.V1Container(name="c", image="busybox")],
                            restart_policy="Always",
                        )
                    )
                ),
            ),
        )
    assert refused.value.status == 422 and "restartPolicy" in str(refused.value.body)
    batch.delete_namespaced_job("once", "hotel", propagation_policy="Background")
    assert not core.list_namespaced_pod("hotel", label_selector="job-name=once").items


def test_cronjob_creates_jobs_on_the_lab_clock(api: client.ApiClient, lab: Lab) -> None:
    batch = client.BatchV1Api(api)
    template = _job("unused", ["echo", "tick"])
    batch.create_namespaced_cron_job(
        "hotel",
        client.V1CronJob(
            metadata=client.V1ObjectMeta(name="tick"),
            spec=client.V1CronJobSpec(
                schedule="*/5 * * * *",
                job_template=client.V1JobTemplateSpec(spec=template.spec),
            ),
        ),
    )
    assert not batch.list_namespaced_job("hotel").items
    lab.control.post("/lab/v1/settle", {"horizon": 1800})
    jobs = batch.list_namespaced_job("hotel").items
    assert len(jobs) == 3  # successfulJobsHistoryLimit
    assert all(j.metadata.owner_references[0].name == "tick" for j in jobs)
    minutes = sorted(int(j.metadata.name.rsplit("-", 1)[1]) for j in jobs)
    assert all(m % 5 == 0 for m in minutes) and minutes[1] - minutes[0] == 5
    cronjob = batch.read_namespaced_cron_job("tick", "hotel")
    assert cronjob.status.last_schedule_time and cronjob.status.last_successful_time
    batch.delete_namespaced_cron_job("tick", "hotel", propagation_policy="Background")
    assert not batch.list_namespaced_job("hotel").items
    with pytest.raises(ApiException) as refused:
        batch.create_namespaced_cron_job(
            "hotel",
            client.V1CronJob(
                metadata=client.V1ObjectMeta(name="bad"),
                spec=client.V1CronJobSpec(
                    schedule="every minute",
                    job_template=client.V1JobTemplateSpec(spec=template.spec),
                ),
            ),
        )
    assert refused.value.status == 422


def test_cron_schedules() -> None:
    base = 1_700_000_000.0  # 2023-11-14T22:13:20Z
    assert Schedule("*/15 * * * *").next_after(base) == 1_700_000_100.0  # 22:15
    assert Schedule("7 * * * *").next_after(base) == base + (60 - 13 + 7) * 60 - 20
    assert Schedule("@daily").next_after(base) == 1_700_006_400.0  # midnight
    assert Schedule("0 9 * * mon-fri").next_after(base) == 1_700_038_800.0  # Wed 09:00
    with pytest.raises(ValueError):
        Schedule("61 * * * *")


def test_eviction_respects_disruption_budgets(api: client.ApiClient) -> None:
    policy, core = client.PolicyV1Api(api), client.CoreV1Api(api)
    policy.create_namespaced_pod_disruption_budget(
        "shop",
        client.V1PodDisruptionBudget(
            metadata=client.V1ObjectMeta(name="frontend"),
            spec=client.V1PodDisruptionBudgetSpec(
                min_available=2, selector=client.V1LabelSelector(match_labels={"app": "frontend"})
            ),
        ),
    )
    budget = policy.read_namespaced_pod_disruption_budget("frontend", "shop")
    assert (budget.status.current_healthy, budget.status.disruptions_allowed) == (2, 0)
    pod = core.list_namespaced_pod("shop", label_selector="app=frontend").items[0]
    eviction = client.V1Eviction(
        metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace="shop")
    )
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod_eviction(pod.metadata.name, "shop", eviction)
    assert refused.value.status == 429
    assert "disruption budget frontend needs 2 healthy pods" in str(refused.value.body)
    policy.patch_namespaced_pod_disruption_budget("frontend", "shop", {"spec": {"minAvailable": 1}})
    core.create_namespaced_pod_eviction(pod.metadata.name, "shop", eviction)
    names = [p.metadata.name for p in core.list_namespaced_pod("shop").items]
    assert pod.metadata.name not in names


def test_controller_revisions_and_persistent_volumes(api: client.ApiClient) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    revisions = apps.list_namespaced_controller_revision("shop").items
    assert sorted(r.metadata.owner_references[0].kind for r in revisions) == [
        "DaemonSet",
        "StatefulSet",
    ]
    apps.patch_namespaced_stateful_set(
        "postgres",
        "shop",
        {"spec": {"template": {"metadata": {"annotations": {"restartedAt": "now"}}}}},
    )
    owned = [
        r
        for r in apps.list_namespaced_controller_revision("shop").items
        if r.metadata.owner_references[0].name == "postgres"
    ]
    assert sorted(r.revision for r in owned) == [1, 2]
    status = apps.read_namespaced_stateful_set("postgres", "shop").status
    newest = max(owned, key=lambda r: r.revision)
    assert status.update_revision == newest.metadata.name
    claim = core.read_namespaced_persistent_volume_claim("data-postgres-0", "shop")
    volume = core.read_persistent_volume(claim.spec.volume_name)
    assert volume.status.phase == "Bound"
    assert volume.spec.claim_ref.name == "data-postgres-0"
    assert volume.spec.capacity == claim.status.capacity
    assert volume.spec.storage_class_name == "standard"
    apps.delete_namespaced_stateful_set("postgres", "shop")
    core.delete_namespaced_persistent_volume_claim("data-postgres-0", "shop")
    names = [v.metadata.name for v in core.list_persistent_volume().items]
    assert claim.spec.volume_name not in names  # reclaimPolicy Delete
    assert not [
        r
        for r in apps.list_namespaced_controller_revision("shop").items
        if r.metadata.owner_references[0].name == "postgres"
    ]


def test_missing_resource_is_named_in_the_404(lab: Lab) -> None:
    import json
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{lab.url}/apis/batch/v1/namespaces/hotel/widgets")
    body = json.loads(missing.value.read())
    assert missing.value.code == 404 and "(widgets in batch/v1)" in body["message"]
