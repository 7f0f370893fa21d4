"""Thread lines say what a change did in words, never as JSON: a revision diff that changed a
memory limit reads "memory limit 16Mi → 256Mi", not ``resources {"limits": …} → {…}``. The
describer is pure; it is run here over the plan of every catalog action, with the parameters
of each action's own example, and over the revision diff the analyzers quote as evidence."""

from __future__ import annotations

import base64
import copy
import json
import shlex
from typing import Any

import pytest

from agents import changes
from agents.analyzers._workloads import compare_templates
from tools import params
from tools.actions import CATALOG, REVISION
from tools.objects import LAST_APPLIED

JSONISH = ('{"', '["', "{}", "[]", '":')


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "uid": "u-1",
            "resourceVersion": "7",
            "annotations": {REVISION: "3"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "nodeSelector": {"disktype": "hdd"},
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx:1.25",
                            "command": ["/bin/app"],
                            "env": [{"name": "LOG_LEVEL", "value": "info"}],
                            "resources": {"limits": {"memory": "16Mi"}},
                        }
                    ],
                },
            },
        },
    }


def replica_set(revision: int, image: str) -> dict[str, Any]:
    template = copy.deepcopy(deployment()["spec"]["template"])
    template["spec"]["containers"][0]["image"] = image
    return {
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"web-{revision}",
            "annotations": {REVISION: str(revision)},
            "ownerReferences": [{"uid": "u-1"}],
        },
        "spec": {"template": template},
    }


def applied(body: dict[str, Any]) -> dict[str, str]:
    return {LAST_APPLIED: json.dumps(body)}


OBJECTS: dict[str, dict[str, Any]] = {
    "Deployment": deployment(),
    "Node": {
        "kind": "Node",
        "metadata": {"name": "node-1"},
        "spec": {
            "unschedulable": False,
            "taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}],
        },
    },
    "ConfigMap": {
        "kind": "ConfigMap",
        "metadata": {"name": "web", "annotations": applied({"data": {"LOG_LEVEL": "warn"}})},
        "data": {"LOG_LEVEL": "trace"},
    },
    "Secret": {
        "kind": "Secret",
        "metadata": {
            "name": "db-auth",
            "annotations": applied({"stringData": {"password": "hunter2-old"}}),
        },
        "data": {"password": base64.b64encode(b"hunter2-new").decode()},
    },
    "HorizontalPodAutoscaler": {
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"minReplicas": 1, "maxReplicas": 1, "scaleTargetRef": {"name": "web"}},
    },
    "Service": {
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "targetPort": 9999}],
        },
    },
    "Pod": {
        "kind": "Pod",
        "metadata": {
            "name": "web-5d8f7c9b4-abcde",
            "ownerReferences": [{"kind": "ReplicaSet", "controller": True}],
        },
    },
    "Job": {
        "kind": "Job",
        "metadata": {
            "name": "report-29012345",
            "ownerReferences": [{"kind": "CronJob", "name": "report", "controller": True}],
        },
    },
    "ResourceQuota": {
        "kind": "ResourceQuota",
        "metadata": {"name": "compute"},
        "spec": {"hard": {"pods": "2"}},
    },
}
# What the command line fills in itself (a restart's stamp) and the example leaves out.
EXTRA = {"rollout-restart": {"restarted_at": "2026-11-25T03:00:00Z"}}
RELATED = [replica_set(2, "nginx:1.24"), replica_set(3, "nginx:1.25")]


def planned(name: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    cls = CATALOG[name]
    target, *pairs = shlex.split(cls.example.split("   (")[0])
    kind = cls.kinds[0]
    action = cls.model_validate(
        {
            **params.parse(cls, pairs),
            **EXTRA.get(name, {}),
            "kind": kind,
            "target": target.split("/", 1)[1],
            "namespace": "shop",
        }
    )
    current = None if cls.operation == "create" else copy.deepcopy(OBJECTS.get(kind, {}))
    if current is not None and not current:
        current = {"kind": kind, "metadata": {"name": action.target}}
    plan = action.plan(current, RELATED)
    return plan.before, plan.after


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_catalog_action_is_told_in_words(name: str) -> None:
    before, after = planned(name)
    lines = changes.object_changes(before, after)
    assert lines, f"{name}: its change is not told at all"
    for line in lines:
        assert not any(j in line for j in JSONISH), (name, line)
    assert "hunter2" not in " ".join(lines)  # a Secret's values never reach a thread


def test_a_memory_limit_reads_as_a_memory_limit() -> None:
    before, after = planned("set-resources")
    lines = changes.object_changes(before, after)
    assert "container web: memory limit 16Mi → 256Mi" in lines, lines
    assert "container web: cpu request (none) → 100m" in lines, lines


def test_each_template_action_names_what_it_changed() -> None:
    expected = {
        "set-image": "container web: image nginx:1.25 → nginx:1.27",
        "set-env": "container web: env LOG_LEVEL info → debug",
        "set-command": "container web: command /bin/app → /bin/app --serve",
        "set-node-selector": "node selector disktype hdd → ssd",
        "rollout-undo": "container web: image nginx:1.25 → nginx:1.24",
        "scale": "replicas 1 → 3",
        "patch-service": "ports[http].targetPort 9999 → 8080",
        "patch-configmap-key": "data LOG_LEVEL trace → info",
        "cordon": "unschedulable false → true",
    }
    for name, line in expected.items():
        before, after = planned(name)
        assert line in changes.object_changes(before, after), (name, line)


def test_the_revision_diff_quoted_as_evidence_has_no_json() -> None:
    old = deployment()["spec"]["template"]
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["resources"] = {"limits": {"memory": "256Mi"}}
    new["spec"]["nodeSelector"] = {}
    change = compare_templates("web", old, new, 4, 3)
    said = " ".join(change.lines)
    assert "memory limit 16Mi → 256Mi" in said, said
    assert "node selector disktype=hdd removed" in said, said
    assert not any(j in said for j in JSONISH), said


def test_a_last_applied_configuration_is_said_to_change_never_shown() -> None:
    before = OBJECTS["Secret"]
    after = copy.deepcopy(before)
    after["metadata"]["annotations"] = applied({"stringData": {"password": "hunter2-x"}})
    (line,) = changes.object_changes(before, after)
    assert "last-applied-configuration changed" in line and "hunter2" not in line
