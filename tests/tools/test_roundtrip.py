"""Property: for every action kind, applying writes exactly the diff shown, and undo returns
the object to its before-image (ignoring server-set fields). Against the lab over HTTP; writes
and undos go through the proposal service (``tests.writes``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proposals.errors import NoChange
from tests.conftest import Lab
from tests.writes import Writes
from tools import actions
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef, normalized, yaml_diff
from undo.stack import UndoStack

HOTEL_SERVICES = [
    "frontend",
    "search",
    "geo",
    "profile",
    "rate",
    "recommendation",
    "user",
    "reservation",
]
names = st.sampled_from(HOTEL_SERVICES)
short_text = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
quantities = st.sampled_from(["64Mi", "128Mi", "300Mi", "1Gi"])
cpus = st.sampled_from(["50m", "100m", "250m", "1"])

PARAMS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "scale": st.fixed_dictionaries(
        {"target": names, "namespace": st.just("hotel"), "replicas": st.integers(0, 3)}
    ),
    "rollout-restart": st.fixed_dictionaries(
        {
            "target": names,
            "namespace": st.just("hotel"),
            "restarted_at": st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")),
        }
    ),
    "set-image": st.fixed_dictionaries(
        {
            "target": names,
            "namespace": st.just("hotel"),
            "image": st.sampled_from(["1.0", "1.1", "9.9"]),
        }
    ),
    "set-env": st.fixed_dictionaries(
        {
            "target": names,
            "namespace": st.just("hotel"),
            "variable": st.sampled_from(["FEATURE_FLAG", "LOG_LEVEL", "EXTRA"]),
            "value": short_text,
        }
    ),
    "set-resources": st.fixed_dictionaries(
        {
            "target": names,
            "namespace": st.just("hotel"),
            "limits": st.fixed_dictionaries({"memory": quantities}),
            "requests": st.fixed_dictionaries({"cpu": cpus}),
        }
    ),
    "set-command": st.fixed_dictionaries(
        {
            "target": names,
            "namespace": st.just("hotel"),
            "command": st.lists(short_text, min_size=1, max_size=3),
            "args": st.one_of(st.none(), st.lists(short_text, max_size=2)),
        }
    ),
    "set-node-selector": st.fixed_dictionaries(
        {
            "target": names,
            "namespace": st.just("hotel"),
            "node_selector": st.dictionaries(
                st.sampled_from(["kubernetes.io/hostname", "zone"]),
                st.sampled_from(["node-1", "node-2", "lab-a"]),
                min_size=1,
                max_size=2,
            ),
        }
    ),
    "patch-service": st.fixed_dictionaries(
        {
            "kind": st.just("Service"),
            "target": names,
            "namespace": st.just("hotel"),
            "target_port": st.integers(1, 65535),
        }
    ),
    "patch-configmap-key": st.fixed_dictionaries(
        {
            "kind": st.just("ConfigMap"),
            "target": st.just("hotel-config"),
            "namespace": st.just("hotel"),
            "key": st.sampled_from(["log-level", "new-key"]),
            "value": short_text,
        }
    ),
    "patch-hpa": st.fixed_dictionaries(
        {
            "kind": st.just("HorizontalPodAutoscaler"),
            "target": st.just("frontend"),
            "namespace": st.just("shop"),
            "min_replicas": st.integers(1, 2),
            "max_replicas": st.integers(3, 6),
        }
    ),
    "cordon": st.fixed_dictionaries(
        {"kind": st.just("Node"), "target": st.sampled_from(["node-1", "node-2", "node-3"])}
    ),
}
SETTINGS = settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _fix_image(name: str, params: dict[str, Any]) -> dict[str, Any]:
    if name == "set-image":
        params = {**params, "image": f"stratus/hotel-{params['target']}:{params['image']}"}
    return params


def roundtrip(
    kube: KubeClient, executor: Executor, stack: UndoStack, action: actions.Action
) -> None:
    before = kube.get(action.ref())
    writes = Writes(executor)
    try:
        outcome = writes.write(action, actor="property-test")
    except NoChange:  # the generated change was already in place
        assert normalized(kube.get(action.ref())) == normalized(before)
        return
    written = kube.get(action.ref())
    assert (
        yaml_diff(before, written, label=f"{action.kind.lower()}/{action.target}")
        == outcome.plan.diff
    ), "the object written differs from the diff shown"
    assert outcome.undo_id is not None
    writes.undo(outcome.undo_id, actor="property-test")
    assert normalized(kube.get(action.ref())) == normalized(before)


def _make_test(name: str) -> Callable[..., None]:
    @SETTINGS
    @given(params=PARAMS[name])
    def test(
        lab: Lab, kube: KubeClient, executor: Executor, stack: UndoStack, params: dict[str, Any]
    ) -> None:
        roundtrip(kube, executor, stack, actions.build(name, _fix_image(name, params)))

    test.__name__ = f"test_apply_then_undo_restores_{name.replace('-', '_')}"
    return test


for _name in PARAMS:
    globals()[f"test_apply_then_undo_restores_{_name.replace('-', '_')}"] = _make_test(_name)


def test_every_catalog_action_has_a_roundtrip_test() -> None:
    covered = set(PARAMS) | {"rollout-undo", "uncordon", "delete-pod", "delete-networkpolicy"}
    covered |= {"delete-job"}  # tests/tools/test_job_actions.py
    covered |= {  # tests/tools/test_new_actions.py
        "create-service",
        "set-quota",
        "delete-resourcequota",
        "delete-pvc",
        "remove-taint",
        "restore-configmap-key",
        "restore-secret-key",
    }
    assert covered == set(actions.CATALOG)


@SETTINGS
@given(image=st.sampled_from(["1.1", "1.2", "9.9"]), target=names)
def test_rollout_undo_roundtrip(
    lab: Lab, kube: KubeClient, executor: Executor, stack: UndoStack, image: str, target: str
) -> None:
    writes = Writes(executor)
    change = writes.write(
        actions.build(
            "set-image",
            {"target": target, "namespace": "hotel", "image": f"stratus/hotel-{target}:{image}"},
        ),
        actor="property-test",
    )
    roundtrip(
        kube,
        executor,
        stack,
        actions.build("rollout-undo", {"target": target, "namespace": "hotel"}),
    )
    assert change.undo_id is not None
    writes.undo(change.undo_id, actor="property-test")


def test_uncordon_roundtrip(kube: KubeClient, executor: Executor, stack: UndoStack) -> None:
    Writes(executor).write(actions.build("cordon", {"kind": "Node", "target": "node-3"}), actor="t")
    roundtrip(
        kube, executor, stack, actions.build("uncordon", {"kind": "Node", "target": "node-3"})
    )


def test_delete_networkpolicy_is_undone_by_recreating_it(
    kube: KubeClient, executor: Executor, stack: UndoStack
) -> None:
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "deny-geo", "namespace": "hotel", "labels": {"a": "b"}},
        "spec": {"podSelector": {"matchLabels": {"app": "geo"}}, "policyTypes": ["Ingress"]},
    }
    kube.create(policy)
    action = actions.build(
        "delete-networkpolicy",
        {"kind": "NetworkPolicy", "target": "deny-geo", "namespace": "hotel"},
    )
    before = kube.get(action.ref())
    writes = Writes(executor)
    outcome = writes.write(action, actor="t")
    assert kube.find(action.ref()) is None
    assert outcome.undo_id is not None
    writes.undo(outcome.undo_id, actor="t")
    restored = kube.get(action.ref())
    assert normalized(restored) == normalized(before)
    assert restored["metadata"]["uid"] != before["metadata"]["uid"]


def test_delete_pod_needs_no_inverse(
    kube: KubeClient, executor: Executor, stack: UndoStack
) -> None:
    pod = kube.list("v1", "Pod", namespace="hotel", label_selector="app=geo")[0]
    outcome = Writes(executor).write(
        actions.build(
            "delete-pod", {"kind": "Pod", "target": pod["metadata"]["name"], "namespace": "hotel"}
        ),
        actor="t",
    )
    assert outcome.state == "executed" and outcome.undo_id is None  # nothing to undo
    rows = executor.store.query(
        "SELECT id FROM undo_entries WHERE execution_id = ?", [outcome.execution_id]
    )
    entry = stack.entries.get(rows[0]["id"])
    assert entry is not None and entry.state == "no_inverse"
    assert stack.entries.active() == []
    replacement = kube.list("v1", "Pod", namespace="hotel", label_selector="app=geo")
    assert len(replacement) == 1 and replacement[0]["metadata"]["uid"] != pod["metadata"]["uid"]


def test_cordon_is_undone_even_after_the_node_controller_taints_the_node(
    executor: Executor, stack: UndoStack, kube: KubeClient, lab: Lab
) -> None:
    node = ObjectRef("Node", "node-1")
    writes = Writes(executor)
    outcome = writes.write(actions.build("cordon", {"kind": "Node", "target": "node-1"}),
                           actor="t")  # fmt: skip
    lab.settle()
    taints = kube.get(node)["spec"].get("taints") or []
    assert any(t["key"] == "node.kubernetes.io/unschedulable" for t in taints)
    writes.undo(outcome.undo_id or "", actor="t")  # no conflict: the taint is the controller's
    lab.settle()
    restored = kube.get(node)["spec"]
    assert not restored.get("unschedulable") and not restored.get("taints")
