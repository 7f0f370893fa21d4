"""The workload and pod analyzers on faults the bundled scenarios do not hold: other services,
other apps, other values, and mechanisms beyond the bundled set — plus the things that must
stay quiet (a workload parked at zero, normal warning noise)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.analyzers import analyze
from agents.model import Category, Finding, PlanResult
from agents.planner.offline import plan_offline
from agents.snapshot import LAST_APPLIED, Snapshot, take
from lab.scenarios import load_fault
from tests.agents.offline_harness import allow_all_service, apply
from tests.conftest import Lab
from tools.k8s import KubeClient
from tools.objects import ObjectRef


def inject(lab: Lab, fault: str, namespace: str, **params: Any) -> None:
    lab.control.post(f"/lab/v1/faults/{fault}/inject", {"namespace": namespace, "params": params})
    lab.settle()


def look(kube: KubeClient, namespace: str) -> tuple[Snapshot, list[Finding], PlanResult]:
    snapshot = take(kube, namespace)
    return snapshot, analyze(snapshot), plan_offline(snapshot)


def only(findings: list[Finding], mechanism: str) -> Finding:
    found = [f for f in findings if f.mechanism == mechanism]
    assert len(found) == 1, [(f.mechanism, str(f.resource)) for f in findings]
    return found[0]


def fixed(lab: Lab, kube: KubeClient, plan: PlanResult, namespace: str, tmp_path: Path) -> None:
    """Apply the top candidate through the proposal service; the namespace ends healthy."""
    service = allow_all_service(kube, tmp_path / "stratus.db")
    apply(service, plan.candidates[0], namespace)
    lab.settle()
    assert plan_offline(take(kube, namespace)).diagnosis is None


def test_oom_in_another_app_is_rolled_back_then_the_limit_restored(
    lab: Lab, kube: KubeClient, tmp_path: Path
) -> None:
    inject(lab, "memory-limit", "shop", deployment="cart", container="cart", memory="8Mi")
    _, findings, plan = look(kube, "shop")
    oom = only(findings, "oom-killed")
    assert (str(oom.resource), oom.category) == ("Deployment/cart", Category.RESOURCES)
    assert any(e.source == "revision" and "8Mi" in e.text for e in oom.evidence)
    actions = [c.steps[0].action for c in plan.candidates]
    assert actions[:2] == ["rollout-undo", "set-resources"]
    assert plan.candidates[1].steps[0].params["limits"]["memory"] != "8Mi"
    fixed(lab, kube, plan, "shop", tmp_path)


def test_a_missing_tag_on_another_service_restores_the_image_that_ran(
    lab: Lab, kube: KubeClient
) -> None:
    inject(
        lab,
        "image-tag",
        "hotel",
        deployment="search",
        container="search",
        image="stratus/hotel-search:7.7",
    )
    _, findings, plan = look(kube, "hotel")
    pull = only(findings, "image-pull-failed")
    assert str(pull.resource) == "Deployment/search"
    assert plan.diagnosis is not None and plan.diagnosis.resource.name == "search"
    set_image = next(c for c in plan.candidates if c.steps[0].action == "set-image")
    assert set_image.steps[0].params == {"image": "stratus/hotel-search:1.0", "container": "search"}


def test_a_wrong_binary_in_the_shop_is_a_bad_deploy(
    lab: Lab, kube: KubeClient, tmp_path: Path
) -> None:
    inject(
        lab, "wrong-command", "shop", deployment="catalog", container="catalog", binary="catalogd"
    )
    _, findings, plan = look(kube, "shop")
    crash = only(findings, "command-not-found")
    assert (str(crash.resource), crash.category) == ("Deployment/catalog", Category.BAD_DEPLOY)
    assert plan.diagnosis is not None and plan.diagnosis.resource.name == "catalog"
    fixed(lab, kube, plan, "shop", tmp_path)


def test_a_missing_credential_is_authentication_and_another_variable_is_configuration(
    lab: Lab, kube: KubeClient
) -> None:
    inject(lab, "remove-env", "hotel", deployment="rate", container="rate", env="DB_USER")
    _, findings, _ = look(kube, "hotel")
    missing = only(findings, "missing-env")
    assert (missing.facts["variable"], missing.category) == ("DB_USER", Category.AUTHENTICATION)
    assert missing.facts["rollback_to"] == 1


def test_a_rejected_literal_value_names_the_variable_and_rolls_back(
    lab: Lab, kube: KubeClient, tmp_path: Path
) -> None:
    inject(
        lab, "set-env", "hotel", deployment="geo", container="geo", env="LOG_LEVEL", value="verbose"
    )
    _, findings, plan = look(kube, "hotel")
    rejected = only(findings, "rejected-env-value")
    assert (rejected.facts["variable"], rejected.category) == ("LOG_LEVEL", Category.CONFIGURATION)
    assert plan.candidates[0].steps[0].action == "rollout-undo"
    fixed(lab, kube, plan, "hotel", tmp_path)


def test_a_selector_no_node_satisfies_in_the_shop(
    lab: Lab, kube: KubeClient, tmp_path: Path
) -> None:
    inject(lab, "nonexistent-node", "shop", deployment="cart", node="gpu-pool-7")
    _, findings, plan = look(kube, "shop")
    pending = only(findings, "unschedulable-node-selector")
    assert (str(pending.resource), pending.category) == ("Deployment/cart", Category.SCHEDULING)
    assert [c.steps[0].action for c in plan.candidates] == ["rollout-undo", "set-node-selector"]
    fixed(lab, kube, plan, "shop", tmp_path)


def test_a_readiness_probe_on_another_port_and_service(lab: Lab, kube: KubeClient) -> None:
    inject(
        lab, "readiness-probe-port", "hotel", deployment="profile", container="profile", port=7070
    )
    _, findings, plan = look(kube, "hotel")
    probe = only(findings, "probe-wrong-port")
    assert (str(probe.resource), probe.facts["port"]) == ("Deployment/profile", 7070)
    assert plan.diagnosis is not None and plan.diagnosis.category == Category.HEALTH_CHECK


def test_scaled_to_zero_in_the_shop_is_scaled_back_to_what_was_applied(
    lab: Lab, kube: KubeClient, tmp_path: Path
) -> None:
    inject(lab, "scale-to-zero", "shop", deployment="catalog")
    _, findings, plan = look(kube, "shop")
    zero = only(findings, "scaled-to-zero")
    assert any(e.source == "log" for e in zero.evidence), "callers' errors are the evidence"
    step = plan.candidates[0].steps[0]
    assert (step.action, step.name, step.params) == ("scale", "catalog", {"replicas": 1})
    fixed(lab, kube, plan, "shop", tmp_path)


PARKED: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "nightly-report", "namespace": "hotel"},
    "spec": {
        "replicas": 0,
        "selector": {"matchLabels": {"app": "nightly-report"}},
        "template": {
            "metadata": {"labels": {"app": "nightly-report"}},
            "spec": {"containers": [{"name": "report", "image": "nginx:1.27"}]},
        },
    },
}
PARKED_SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "nightly-report", "namespace": "hotel"},
    "spec": {"selector": {"app": "nightly-report"}, "ports": [{"port": 80, "targetPort": 80}]},
}


def test_a_workload_parked_at_zero_that_nobody_calls_is_left_alone(
    lab: Lab, kube: KubeClient
) -> None:
    kube.create(PARKED)
    kube.create(PARKED_SERVICE)
    lab.settle()
    _, findings, plan = look(kube, "hotel")
    assert findings == [] and plan.diagnosis is None and plan.candidates == []


def test_a_workload_applied_with_replicas_behind_an_exposed_service_is_needed_at_zero(
    lab: Lab, kube: KubeClient
) -> None:
    applied = json.dumps({**PARKED, "spec": {**PARKED["spec"], "replicas": 2}})
    metadata = {**PARKED["metadata"], "annotations": {LAST_APPLIED: applied}}
    kube.create({**PARKED, "metadata": metadata})
    kube.create({**PARKED_SERVICE, "spec": {**PARKED_SERVICE["spec"], "type": "NodePort"}})
    lab.settle()
    _, findings, plan = look(kube, "hotel")
    zero = only(findings, "scaled-to-zero")
    assert zero.confidence < 0.9, "a declaration of need is weaker proof than failing callers"
    step = plan.candidates[0].steps[0]
    assert (step.action, step.name, step.params) == ("scale", "nightly-report", {"replicas": 2})


def test_normal_warning_noise_raises_nothing(lab: Lab, kube: KubeClient) -> None:
    pod = kube.list("v1", "Pod", namespace="hotel", label_selector="app=geo")[0]["metadata"]["name"]
    for reason, message, involved in (
        ("Unhealthy", "Readiness probe failed: connection refused", pod),
        ("BackOff", "Back-off restarting failed container", "geo-gone-12345"),
        ("FailedScheduling", "0/3 nodes are available", "search-old-abcde"),
    ):
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"noise-{reason.lower()}", "namespace": "hotel"},
                "involvedObject": {"kind": "Pod", "name": involved, "namespace": "hotel"},
                "type": "Warning",
                "reason": reason,
                "message": message,
                "count": 3,
            }
        )
    lab.settle()
    _, findings, plan = look(kube, "hotel")
    assert findings == [] and plan.diagnosis is None


def test_an_autoscaler_capped_below_what_its_target_needs(lab: Lab, kube: KubeClient) -> None:
    hpa = kube.get(ObjectRef("HorizontalPodAutoscaler", "frontend", "shop"))
    hpa["spec"].update({"minReplicas": 1, "maxReplicas": 1})
    kube.replace(hpa)
    lab.settle()
    _, findings, plan = look(kube, "shop")
    capped = only(findings, "hpa-caps-replicas")
    assert str(capped.resource) == "HorizontalPodAutoscaler/frontend"
    step = plan.candidates[0].steps[0]
    assert (step.action, step.params) == ("patch-hpa", {"min_replicas": 2, "max_replicas": 4})


def test_memory_and_tried_reorder_and_drop_candidates(lab: Lab, kube: KubeClient) -> None:
    inject(
        lab, "image-tag", "hotel", deployment="geo", container="geo", image="stratus/hotel-geo:0.0"
    )
    snapshot = take(kube, "hotel")
    first, second = plan_offline(snapshot).candidates[:2]
    undone_before = [
        (first.mechanism, first.key(), "undone"),
        (second.mechanism, second.key(), "fixed"),
    ]
    remembered = plan_offline(snapshot, past=undone_before).candidates
    assert remembered[0].key() == second.key() and "incident memory" in remembered[0].why
    without_first = plan_offline(snapshot, tried=[first.key()]).candidates
    assert without_first[0].key() == second.key()


@pytest.mark.parametrize("fault", ["memory-limit", "wrong-command"])
def test_a_statefulset_rolls_back_through_its_controller_revisions(
    lab: Lab, kube: KubeClient, fault: str
) -> None:
    """Issue 18: a StatefulSet's template history is its ControllerRevisions, so it rolls back
    like a Deployment (``kubectl rollout undo statefulset/x``); patching the one field in place
    stays the alternative."""
    params = {"memory": "4Mi"} if fault == "memory-limit" else {"binary": "pg-nope"}
    statefulset = kube.get(ObjectRef("StatefulSet", "postgres", "shop"))
    container = statefulset["spec"]["template"]["spec"]["containers"][0]["name"]
    lab.control.post(
        f"/lab/v1/faults/{fault}/inject",
        {
            "namespace": "shop",
            "params": {"deployment": "postgres", "container": container, **params},
            "fault": _as_statefulset(fault),
        },
    )
    lab.settle()
    kube.delete(ObjectRef("Pod", "postgres-0", "shop"))  # OnDelete or not, a new pod shows it
    lab.settle()
    _, findings, plan = look(kube, "shop")
    assert plan.diagnosis is not None and str(plan.diagnosis.resource) == "StatefulSet/postgres"
    assert plan.candidates, findings
    first = plan.candidates[0].steps[0]
    assert (first.action, first.kind, first.name, first.params) == (
        "rollout-undo",
        "StatefulSet",
        "postgres",
        {"to_revision": 1},
    )
    in_place = "set-resources" if fault == "memory-limit" else "set-command"
    assert any(c.steps[0].action == in_place for c in plan.candidates[1:]), plan.candidates


def _as_statefulset(fault: str) -> dict[str, Any]:
    """The bundled fault, aimed at a StatefulSet (the library's faults patch Deployments)."""
    body = load_fault(fault).model_dump(mode="json", exclude_none=True)
    for step in body["steps"]:
        if "patch" in step:
            step["patch"]["kind"] = "StatefulSet"
    for target in body.get("targets", []):
        target["kind"] = "StatefulSet"
    return body
