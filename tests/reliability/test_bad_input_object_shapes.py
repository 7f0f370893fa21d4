"""Shapes the object generator (test_bad_input_objects.py) found crashing a reader or a plan,
each one the API schema allows: a null optional reference, field or map (``valueFrom`` with a
null ``configMapKeyRef``, a null ``spec.replicas`` or ``minReplicas``, a null ``data``,
``annotations`` or ``limits``) and a revision annotation edited into something that is not a
number. Each now reads as the API's default or is refused with a typed error."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agents import diagnose, health
from agents.model import ResourceKey
from tools import actions
from tools.actions import REVISION
from tools.errors import Invalid

UID = "d0000000-0000-0000-0000-000000000001"


def _deployment(**spec: Any) -> dict[str, Any]:
    container = {"name": "web", "image": "example/web:1"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "hotel", "uid": UID, "resourceVersion": "7"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [container]},
            },
            **spec,
        },
    }


def _replica_set(revision: str, image: str) -> dict[str, Any]:
    rs = _deployment()
    rs["kind"] = "ReplicaSet"
    rs["metadata"] = {
        "name": f"web-{revision or 'x'}",
        "namespace": "hotel",
        "uid": f"rs-{revision}",
        "resourceVersion": "3",
        "annotations": {REVISION: revision},
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": UID}
        ],
    }
    rs["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return rs


def test_a_null_reference_in_env_envfrom_or_a_volume_names_nothing_a_workload_reads() -> None:
    workload = _deployment()
    pod = workload["spec"]["template"]["spec"]
    pod["containers"][0]["env"] = [
        {"name": "A", "valueFrom": {"configMapKeyRef": None}},
        {"name": "B", "valueFrom": {"secretKeyRef": {"key": "password"}}},  # name is optional
        {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "web-config", "key": "c"}}},
    ]
    pod["containers"][0]["envFrom"] = [{"configMapRef": None}, {"secretRef": {"name": "web"}}]
    pod["volumes"] = [{"name": "v", "configMap": None}, {"name": "w", "secret": None}]
    assert diagnose.referenced(workload) == {
        ResourceKey(kind="ConfigMap", name="web-config"),
        ResourceKey(kind="Secret", name="web"),
    }


def test_a_null_replicas_is_the_apis_default_of_one_in_the_health_score() -> None:
    state = health.state_of("hotel", {"Deployment": [_deployment(replicas=None)]})
    assert [(w.name, w.desired) for w in state.workloads] == [("web", 1)]


@pytest.mark.parametrize("revision", ["abc", "", "3.5", " 2 ", "\u0663", "9" * 5000])
def test_a_deployment_whose_revision_is_not_a_number_is_refused_for_rollout_undo(
    revision: str,
) -> None:
    deployment = _deployment()
    deployment["metadata"]["annotations"] = {REVISION: revision}
    undo = actions.build("rollout-undo", {"target": "web", "namespace": "hotel"})
    with pytest.raises(Invalid, match="not a number"):
        undo.plan(deployment, [_replica_set("1", "example/web:0")])


def test_a_replica_set_whose_revision_is_not_a_number_is_no_revision_to_roll_back_to() -> None:
    deployment = _deployment()
    deployment["metadata"]["annotations"] = {REVISION: "3"}
    history = [
        _replica_set("1", "example/web:good"),
        _replica_set("two", "example/web:edited"),
        _replica_set("3", "example/web:1"),
    ]
    undo = actions.build("rollout-undo", {"target": "web", "namespace": "hotel"})
    plan = undo.plan(deployment, history)
    assert plan.after is not None
    assert plan.after["spec"]["template"]["spec"]["containers"][0]["image"] == "example/web:good"
    with pytest.raises(Invalid, match=r"no revision 2 \(it has 1, 3\)"):
        actions.build(
            "rollout-undo", {"target": "web", "namespace": "hotel", "to_revision": 2}
        ).plan(deployment, history)


def test_an_hpa_with_a_null_min_replicas_is_planned_from_the_default_of_one() -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "hotel", "uid": "h", "resourceVersion": "1"},
        "spec": {"minReplicas": None, "maxReplicas": 3},
    }
    action = actions.build("patch-hpa", {"target": "web", "namespace": "hotel", "max_replicas": 5})
    assert "1-5 replicas" in action.intent(hpa)
    plan = action.plan(hpa)
    assert plan.after is not None and plan.after["spec"]["maxReplicas"] == 5
    with pytest.raises(Invalid, match="minReplicas 1 is above maxReplicas 0"):
        action.model_copy(update={"max_replicas": None}).plan(
            {**hpa, "spec": {"minReplicas": None, "maxReplicas": 0}}
        )


def _meta() -> dict[str, Any]:
    return {"name": "x", "namespace": "hotel", "uid": "u", "resourceVersion": "1"}


@pytest.mark.parametrize(
    ("name", "params", "obj", "written"),
    [
        (
            "patch-configmap-key",
            {"key": "LOG_LEVEL", "value": "debug"},
            {"apiVersion": "v1", "kind": "ConfigMap", "data": None},
            ("data", "LOG_LEVEL"),
        ),
        (
            "set-quota",
            {"resource": "pods", "value": "20"},
            {"apiVersion": "v1", "kind": "ResourceQuota", "spec": {"hard": None}},
            ("spec", "hard", "pods"),
        ),
    ],
)
def test_a_null_map_is_written_into_as_an_empty_one(
    name: str, params: dict[str, Any], obj: dict[str, Any], written: tuple[str, ...]
) -> None:
    current = {**copy.deepcopy(obj), "metadata": _meta()}
    plan = actions.build(name, {"target": "x", "namespace": "hotel", **params}).plan(current)
    value: Any = plan.after
    for step in written:
        value = value[step]
    assert value == params["value"]


def test_a_null_annotations_or_limits_of_a_template_is_written_into_as_an_empty_one() -> None:
    deployment = _deployment()
    deployment["spec"]["template"]["metadata"]["annotations"] = None
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": None}
    restart = actions.build(
        "rollout-restart",
        {"target": "web", "namespace": "hotel", "restarted_at": "2026-01-01T00:00:00Z"},
    ).plan(deployment)
    assert restart.after is not None
    annotations = restart.after["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"}
    resources = actions.build(
        "set-resources", {"target": "web", "namespace": "hotel", "limits": {"memory": "1Gi"}}
    ).plan(deployment)
    assert resources.after is not None
    container = resources.after["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"memory": "1Gi"}
