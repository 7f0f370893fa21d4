"""CronJobs and Jobs in the catalog: a CronJob's job template takes the container-field
actions (set-image round-trips through undo), and delete-job removes a run a CronJob made —
with its pods — but refuses a Job nobody would run again."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Lab
from tests.writes import Writes
from tools import actions
from tools.errors import Invalid
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef, normalized

CRONJOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "report", "namespace": "shop"},
    "spec": {
        "schedule": "*/5 * * * *",
        "concurrencyPolicy": "Forbid",
        "jobTemplate": {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [
                            {"name": "report", "image": "busybox:1.99-nope", "command": ["true"]}
                        ],
                    }
                }
            }
        },
    },
}


def _jobs(kube: KubeClient) -> list[dict[str, Any]]:
    return kube.list("batch/v1", "Job", namespace="shop")


def test_set_image_on_a_cronjob_changes_its_job_template_and_is_undone(
    kube: KubeClient, executor: Executor
) -> None:
    kube.create(CRONJOB)
    action = actions.build(
        "set-image",
        {"kind": "CronJob", "target": "report", "namespace": "shop", "image": "busybox:1.36"},
    )
    before = kube.get(action.ref())
    writes = Writes(executor)
    outcome = writes.write(action, actor="test")
    template = kube.get(action.ref())["spec"]["jobTemplate"]["spec"]["template"]
    assert template["spec"]["containers"][0]["image"] == "busybox:1.36"
    assert outcome.undo_id is not None
    writes.undo(outcome.undo_id, actor="test")
    assert normalized(kube.get(action.ref())) == normalized(before)


def test_delete_job_removes_a_stuck_run_of_a_cronjob_and_its_pods(
    lab: Lab, kube: KubeClient, executor: Executor
) -> None:
    kube.create(CRONJOB)
    lab.control.post("/lab/v1/settle", {"horizon": 330})
    [job] = _jobs(kube)
    name = job["metadata"]["name"]
    pods = [
        p
        for p in kube.list("v1", "Pod", namespace="shop")
        if p["metadata"]["name"].startswith(name)
    ]
    assert pods, "the run has a pod"
    action = actions.build("delete-job", {"target": name, "namespace": "shop"})
    assert action.intent(job) == (
        f"Delete job/{name} in shop and its pods; cronjob/report runs again at its next schedule"
    )
    Writes(executor).write(action, actor="test")
    lab.settle()
    assert _jobs(kube) == []
    left = [p["metadata"]["name"] for p in kube.list("v1", "Pod", namespace="shop")]
    assert not [p for p in left if p.startswith(name)], left


def test_delete_job_refuses_a_job_no_cronjob_made(kube: KubeClient, executor: Executor) -> None:
    kube.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "migrate", "namespace": "shop"},
            "spec": {"template": CRONJOB["spec"]["jobTemplate"]["spec"]["template"]},
        }
    )
    action = actions.build("delete-job", {"target": "migrate", "namespace": "shop"})
    with pytest.raises(Invalid, match="job/migrate was not made by a CronJob"):
        Writes(executor).write(action, actor="test")
    assert kube.get(ObjectRef("Job", "migrate", "shop"))["metadata"]["name"] == "migrate"
