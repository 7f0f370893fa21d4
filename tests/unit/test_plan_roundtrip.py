"""Plans and inverse plans as dict in, dict out, for every reversible action of the catalog: a
hypothesis round trip with no cluster. The objects are the lab's own, recorded from two
scenarios (tests/fixtures/snapshots/); a dict stands in for the API server's storage and applies
a ``WritePlan`` as the executor would have it applied (replace with optimistic concurrency,
create, delete). Property: plan → apply → inverse plan → apply gives back the original object
(ignoring what the server sets), the object written is exactly the diff shown, and an object
changed by someone else in between is refused with a conflict unless forced. The live version
of this property, through the executor and the lab, is tests/tools/test_roundtrip.py."""

from __future__ import annotations

import base64
import copy
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from store.records import Execution
from tests.unit.snapshots import recorded
from tools import actions, errors, secrets
from tools.actions import Action, WritePlan
from tools.objects import LAST_APPLIED, ObjectRef, normalized, yaml_diff
from undo.stack import plan_inverse

Key = tuple[str, str, str]  # kind, namespace, name


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def _world() -> dict[Key, dict[str, Any]]:
    """Hotel as left by an OOM kill and its rollout (two revisions of geo), with a
    NetworkPolicy; shop with a quota, an HPA, a StatefulSet and a claim."""
    objects: dict[Key, dict[str, Any]] = {}
    for name in ("hotel-geo-oom", "hotel-profile-network-policy", "shop-quota-blocks-rollout"):
        raw = recorded(name).raw
        for obj in itertools.chain(*raw["objects"].values(), *raw["cluster"].values()):
            if obj.get("kind") in ("Event", "Endpoints"):
                continue
            objects.setdefault(key_of(obj), obj)
    return objects


WORLD = _world()


def names(kind: str, namespace: str = "") -> list[str]:
    return sorted(n for k, ns, n in WORLD if k == kind and (ns == namespace or not namespace))


class DictCluster:
    """The API server's storage as a dict: what a plan writes, with resourceVersions."""

    def __init__(self) -> None:
        self.objects = dict(WORLD)  # shared, never mutated: writes store copies
        self.counter = itertools.count(10_000_000)

    def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        return self.objects.get((ref.kind, ref.namespace, ref.name))

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Store ``obj`` as a person would (setup, someone else's change), with a new version."""
        stored = copy.deepcopy(obj)
        stored["metadata"]["resourceVersion"] = str(next(self.counter))
        self.objects[key_of(stored)] = stored
        return stored

    def related(self, action: Action, current: dict[str, Any] | None) -> list[dict[str, Any]]:
        wanted = action.related()
        if wanted is None or current is None:
            return []
        selector = ((current.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        return [
            obj
            for (kind, namespace, _), obj in self.objects.items()
            if kind == wanted[1]
            and namespace == action.namespace
            and selector.items() <= (obj["metadata"].get("labels") or {}).items()
        ]

    def apply(self, plan: WritePlan) -> dict[str, Any] | None:
        obj = plan.after or plan.before
        if obj is None:
            return None  # an inverse with nothing to do (a created object already gone)
        key = key_of(obj)
        current = self.objects.get(key)
        if plan.operation == "delete":
            assert current is not None, f"{key} does not exist"
            del self.objects[key]
            return None
        assert plan.after is not None
        if plan.operation == "create":
            assert current is None, f"{key} already exists"
            return self.put(plan.after)
        assert current is not None, f"{key} does not exist"
        sent = plan.after["metadata"].get("resourceVersion")
        if sent != current["metadata"].get("resourceVersion"):
            raise AssertionError(f"409 Conflict on {key}: the plan was made from another version")
        return self.put(plan.after)


def execution_of(action: Action, plan: WritePlan, written: dict[str, Any] | None) -> Execution:
    """The record the executor keeps of an applied write (what ``plan_inverse`` reads)."""
    obj = plan.after or plan.before or {}
    return Execution(
        id="exec-unit",
        incident_id=None,
        transaction_id=None,
        action=action.name,
        operation=plan.operation,
        api_version=str(obj.get("apiVersion", "")),
        kind=action.kind,
        namespace=action.ref().namespace,
        name=action.target,
        actor="unit",
        state="applied",
        before_image=secrets.stored_image(plan.before),
        planned_after=secrets.stored_image(plan.after),
        before_rv=((plan.before or {}).get("metadata") or {}).get("resourceVersion"),
        written_rv=((written or {}).get("metadata") or {}).get("resourceVersion"),
        diff=plan.diff,
        intent="",
        error=None,
        inverse_of=None,
        created_at="2026-01-01T00:00:00Z",
    )


# ------------------------------------------------------------------ what to try, per action

HOTEL_WORKLOADS = st.sampled_from(names("Deployment", "hotel"))
SHOP_WORKLOADS = st.sampled_from(
    [("Deployment", n) for n in names("Deployment", "shop")]
    + [("StatefulSet", n) for n in names("StatefulSet", "shop")]
)
NODES = st.sampled_from(names("Node"))
TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=10)
KEYS = st.sampled_from(["LOG_LEVEL", "log-level", "feature.flag", "NEW_KEY"])
Setup = Callable[[DictCluster], None]
Case = tuple[str, dict[str, Any], Setup | None]


def nothing(cluster: DictCluster) -> None:
    return None


@st.composite
def workload(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        return {"kind": "Deployment", "target": draw(HOTEL_WORKLOADS), "namespace": "hotel"}
    kind, name = draw(SHOP_WORKLOADS)
    return {"kind": kind, "target": name, "namespace": "shop"}


def container_of(target: dict[str, Any]) -> str:
    obj = WORLD[(target["kind"], target["namespace"], target["target"])]
    return str(obj["spec"]["template"]["spec"]["containers"][0]["name"])


@st.composite
def workload_case(draw: st.DrawFn, name: str) -> Case:
    target = draw(workload())
    params: dict[str, Any] = {**target, "container": container_of(target)}
    if name == "scale":
        params = {**target, "replicas": draw(st.integers(0, 5))}
    elif name == "rollout-restart":
        params = {**target, "restarted_at": draw(st.datetimes()).strftime("%Y-%m-%dT%H:%M:%SZ")}
    elif name == "set-image":
        params["image"] = (
            f"example/{draw(TEXT)}:{draw(st.integers(0, 9))}.{draw(st.integers(0, 9))}"
        )
    elif name == "set-env":
        params["variable"] = draw(st.sampled_from(["LOG_LEVEL", "FEATURE_FLAG", "EXTRA"]))
        params["value"] = draw(TEXT)
    elif name == "set-resources":
        params["limits"] = {"memory": draw(st.sampled_from(["64Mi", "300Mi", "1Gi", None]))}
        params["requests"] = {"cpu": draw(st.sampled_from(["50m", "250m", "1"]))}
    elif name == "set-command":
        params["command"] = draw(st.lists(TEXT, min_size=1, max_size=3))
        params["args"] = draw(st.one_of(st.none(), st.lists(TEXT, max_size=2)))
    elif name == "set-node-selector":
        del params["container"]
        selector = st.dictionaries(st.sampled_from(["zone", "disktype"]), TEXT, max_size=2)
        params["node_selector"] = draw(st.one_of(st.none(), selector))
    return name, params, None


@st.composite
def rollout_undo_case(draw: st.DrawFn) -> Case:
    # The two workloads the recorded faults rolled out twice.
    target, namespace = draw(st.sampled_from([("geo", "hotel"), ("checkout", "shop")]))
    return "rollout-undo", {"target": target, "namespace": namespace}, None


@st.composite
def service_case(draw: st.DrawFn, name: str) -> Case:
    if name == "create-service":
        ports = draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "name": TEXT.map(lambda t: "p" + t[:9].strip("-")),
                        "port": st.integers(1, 65535),
                    }
                ),
                min_size=1,
                max_size=2,
                unique_by=lambda p: (p["name"], p["port"]),
            )
        )
        params = {
            "kind": "Service",
            "target": "new-" + draw(TEXT).strip("-") + "x",
            "namespace": "hotel",
            "selector": {"app": draw(TEXT)},
            "ports": ports,
        }
        return name, params, None
    patch: dict[str, Any] = draw(
        st.one_of(
            st.fixed_dictionaries({"target_port": st.integers(1, 65535)}),
            st.fixed_dictionaries({"port": st.integers(1, 65535)}),
            st.fixed_dictionaries({"selector": st.dictionaries(st.just("app"), TEXT, min_size=1)}),
        )
    )
    target = draw(st.sampled_from(names("Service", "hotel")))
    return name, {"kind": "Service", "target": target, "namespace": "hotel", **patch}, None


@st.composite
def configmap_case(draw: st.DrawFn, name: str) -> Case:
    key, applied, drifted = draw(KEYS), draw(TEXT), draw(TEXT)
    params = {"kind": "ConfigMap", "target": "hotel-config", "namespace": "hotel", "key": key}
    if name == "patch-configmap-key":
        return name, {**params, "value": draw(TEXT)}, None

    def drift(cluster: DictCluster) -> None:
        obj = copy.deepcopy(cluster.get(ObjectRef("ConfigMap", "hotel-config", "hotel")))
        assert obj is not None
        annotations = obj["metadata"].setdefault("annotations", {})
        annotations[LAST_APPLIED] = json.dumps({"data": {key: applied}})
        obj.setdefault("data", {})[key] = drifted
        cluster.put(obj)

    return name, params, drift


@st.composite
def secret_case(draw: st.DrawFn) -> Case:
    key, applied, drifted = draw(KEYS), draw(TEXT), draw(TEXT)
    as_string = draw(st.booleans())

    def drift(cluster: DictCluster) -> None:
        encoded = {key: base64.b64encode(applied.encode()).decode()}
        last = {"stringData": {key: applied}} if as_string else {"data": encoded}
        cluster.put(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": "unit-credentials",
                    "namespace": "hotel",
                    "annotations": {LAST_APPLIED: json.dumps(last)},
                },
                "data": {key: base64.b64encode(drifted.encode()).decode()},
            }
        )

    params = {"kind": "Secret", "target": "unit-credentials", "namespace": "hotel", "key": key}
    return "restore-secret-key", params, drift


@st.composite
def node_case(draw: st.DrawFn, name: str) -> Case:
    node = draw(NODES)
    params: dict[str, Any] = {"kind": "Node", "target": node}
    taint = {"key": draw(st.sampled_from(["dedicated", "example.com/gpu"])), "effect": "NoSchedule"}

    def prepare(cluster: DictCluster) -> None:
        obj = copy.deepcopy(cluster.get(ObjectRef("Node", node)))
        assert obj is not None
        if name == "uncordon":
            obj["spec"]["unschedulable"] = True
        else:
            obj["spec"].setdefault("taints", []).append(taint)
        cluster.put(obj)

    if name == "cordon":
        return name, params, None
    if name == "remove-taint":
        params = {**params, **taint}
    return name, params, prepare


@st.composite
def shop_case(draw: st.DrawFn, name: str) -> Case:
    if name == "patch-hpa":
        low = draw(st.integers(1, 3))
        params = {"min_replicas": low, "max_replicas": draw(st.integers(low, 9))}
        target = names("HorizontalPodAutoscaler", "shop")[0]
        return (
            name,
            {"kind": "HorizontalPodAutoscaler", "target": target, "namespace": "shop", **params},
            None,
        )
    quota = names("ResourceQuota", "shop")[0]
    if name == "set-quota":
        resource = draw(st.sampled_from(["pods", "requests.cpu", "limits.memory"]))
        value = (
            str(draw(st.integers(1, 50)))
            if resource == "pods"
            else draw(st.sampled_from(["2", "4Gi"]))
        )
        params = {"kind": "ResourceQuota", "target": quota, "namespace": "shop"}
        return name, {**params, "resource": resource, "value": value}, None
    if name == "delete-resourcequota":
        return name, {"kind": "ResourceQuota", "target": quota, "namespace": "shop"}, None
    claim = names("PersistentVolumeClaim", "shop")[0]

    def unbind(cluster: DictCluster) -> None:
        # Stratus deletes only claims that were never bound (a missing storage class).
        obj = copy.deepcopy(cluster.get(ObjectRef("PersistentVolumeClaim", claim, "shop")))
        assert obj is not None
        obj["spec"].pop("volumeName", None)
        obj["status"] = {"phase": "Pending"}
        cluster.put(obj)

    return name, {"kind": "PersistentVolumeClaim", "target": claim, "namespace": "shop"}, unbind


CASES: dict[str, st.SearchStrategy[Case]] = {
    **{
        n: workload_case(n)
        for n in (
            "scale",
            "rollout-restart",
            "set-image",
            "set-env",
            "set-resources",
            "set-command",
            "set-node-selector",
        )
    },
    "rollout-undo": rollout_undo_case(),
    "patch-service": service_case("patch-service"),
    "create-service": service_case("create-service"),
    "patch-configmap-key": configmap_case("patch-configmap-key"),
    "restore-configmap-key": configmap_case("restore-configmap-key"),
    "restore-secret-key": secret_case(),
    "cordon": node_case("cordon"),
    "uncordon": node_case("uncordon"),
    "remove-taint": node_case("remove-taint"),
    "patch-hpa": shop_case("patch-hpa"),
    "set-quota": shop_case("set-quota"),
    "delete-resourcequota": shop_case("delete-resourcequota"),
    "delete-pvc": shop_case("delete-pvc"),
    "delete-networkpolicy": st.just(
        (
            "delete-networkpolicy",
            {
                "kind": "NetworkPolicy",
                "target": names("NetworkPolicy", "hotel")[0],
                "namespace": "hotel",
            },
            None,
        )
    ),
}
SETTINGS = settings(max_examples=15, deadline=None, derandomize=True, database=None)


def planned(case: Case) -> tuple[DictCluster, Action, dict[str, Any] | None, WritePlan]:
    name, params, setup = case
    cluster = DictCluster()
    (setup or nothing)(cluster)
    action = actions.build(name, params)
    current = cluster.get(action.ref())
    try:
        plan = action.plan(current, cluster.related(action, current))
    except errors.Invalid:
        reject()  # a generated change that does not apply here (hypothesis counts these)
    if not plan.changes_anything:
        reject()
    return cluster, action, current, plan


def test_every_reversible_action_has_a_case() -> None:
    reversible = {n for n, cls in actions.CATALOG.items() if cls.reversible}
    assert set(CASES) == reversible
    assert {n for n, cls in actions.CATALOG.items() if not cls.reversible} == {
        "delete-pod",
        "delete-job",
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_apply_then_inverse_gives_back_the_original(name: str) -> None:
    @SETTINGS
    @given(case=CASES[name])
    def roundtrip(case: Case) -> None:
        cluster, action, original, plan = planned(case)
        written = cluster.apply(plan)
        label = action.label()
        assert yaml_diff(original, written, label=label) == plan.diff, "written ≠ shown"
        record = execution_of(action, plan, written)
        inverse = plan_inverse(record, cluster.get(action.ref()), force=False, before=plan.before)
        cluster.apply(inverse)
        assert normalized(cluster.get(action.ref())) == normalized(original)

    roundtrip()


@pytest.mark.parametrize("name", sorted(n for n in CASES if n != "create-service"))
def test_a_change_made_since_is_a_conflict_unless_forced(name: str) -> None:
    @SETTINGS
    @given(case=CASES[name], note=TEXT)
    def conflict(case: Case, note: str) -> None:
        cluster, action, original, plan = planned(case)
        written = cluster.apply(plan)
        record = execution_of(action, plan, written)
        ref = action.ref()
        if written is None:  # deleted: someone re-creates it
            assert original is not None
            changed = cluster.put(original)
        else:
            changed = copy.deepcopy(written)
            changed["metadata"].setdefault("annotations", {})["someone"] = note
            changed = cluster.put(changed)
        with pytest.raises(errors.UndoConflict):
            plan_inverse(record, cluster.get(ref), force=False, before=plan.before)
        forced = plan_inverse(record, cluster.get(ref), force=True, before=plan.before)
        cluster.apply(forced)
        assert normalized(cluster.get(ref)) == normalized(original)
        assert changed is not None

    conflict()
