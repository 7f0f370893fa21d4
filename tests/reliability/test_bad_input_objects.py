"""Issue 19 §5, bad input from the cluster: Kubernetes objects of odd shapes. The lab's own
objects (the snapshots recorded from its scenarios, tests/unit/snapshots.py) are broken by a
hypothesis generator — status missing, optional fields removed or null, lists and maps empty,
strings empty, long or odd, numbers at their edges, containers stripped to what the API
requires, env entries whose ``valueFrom`` holds a null reference, revision annotations that are
not numbers — and fed to everything that reads objects without a cluster: the snapshot's choice
of logs, the health score's reading of a namespace, every analyzer, the diagnosis and the
offline planner's remedies, and the pure ``plan()`` of every catalog action whose kind the
object is. Property: nothing raises, except an action's plan refusing with a typed
``ToolError`` (whose words a person reads).

The generator keeps what every API server sets or requires and varies everything else
(``_REQUIRED`` says which and why). Derandomized, so every run tries the same objects; no
socket."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from agents import health
from agents import snapshot as snapshots
from agents.analyzers import analyze
from agents.planner.offline import plan_offline
from agents.snapshot import Snapshot
from tests.unit.snapshots import NAMES, recorded
from tools import actions
from tools.actions import REVISION, Action
from tools.errors import ToolError

EXAMPLES = 70  # snapshots
MAX_BROKEN = 40  # objects broken in one snapshot
Path = tuple[str | int, ...]

# What an API server always sets on an object it returns: kept as recorded.
_KEPT: frozenset[Path] = frozenset(
    {
        ("apiVersion",),
        ("kind",),
        ("metadata",),
        ("metadata", "name"),
        ("metadata", "namespace"),
        ("metadata", "uid"),
        ("metadata", "resourceVersion"),
    }
)
# Fields of a list item the API schema requires: an object without one is refused with 422 and
# never stored, so the generator never removes or nulls them (a container or env entry without
# `name`, a volume without `name`, an owner reference without its uid, a status condition
# without its type, a container status without its container's name, a port without its number).
_REQUIRED: dict[str, frozenset[str]] = {
    "containers": frozenset({"name"}),
    "initContainers": frozenset({"name"}),
    "ephemeralContainers": frozenset({"name"}),
    "env": frozenset({"name"}),
    "volumes": frozenset({"name"}),
    "volumeMounts": frozenset({"name", "mountPath"}),
    "ownerReferences": frozenset({"apiVersion", "kind", "name", "uid"}),
    "conditions": frozenset({"type", "status"}),
    "containerStatuses": frozenset({"name"}),
    "initContainerStatuses": frozenset({"name"}),
    "ports": frozenset({"port", "containerPort"}),
    "taints": frozenset({"key", "effect"}),
}
# Parts of an object's spec the API server always returns: `spec` itself (a struct, sent as `{}`
# at least, never null), and what a workload's spec requires (its pod template, the template's
# pod spec, a selector, a CronJob's job template; a pod spec's containers), refused with 422
# when absent.
_STRUCTURE: frozenset[Path] = frozenset(
    {
        ("spec",),
        ("spec", "selector"),
        ("spec", "template"),
        ("spec", "template", "spec"),
        ("spec", "template", "spec", "containers"),
        ("spec", "containers"),
        ("spec", "jobTemplate"),
        ("spec", "jobTemplate", "spec"),
        ("spec", "jobTemplate", "spec", "template"),
        ("spec", "jobTemplate", "spec", "template", "spec"),
        ("spec", "jobTemplate", "spec", "template", "spec", "containers"),
    }
)
_OPTIONAL_SELECTOR = frozenset({"Service", "NetworkPolicy", "HorizontalPodAutoscaler"})
# Maps of string to string (labels, annotations, a ConfigMap's data, a selector): the API
# server decodes a null value as "" and never returns null there, so their values get odd
# strings, never null.
_STRING_MAPS = frozenset(
    {"labels", "annotations", "data", "stringData", "selector", "matchLabels", "nodeSelector"}
)
# What a revision annotation may hold once someone has edited it by hand.
_REVISIONS = ("", "abc", "3.5", "-1", "1e3", " 2 ", "0x10", "9" * 5000, "\u0663")
_ODD_TEXT = ("", " ", "x" * 300, "\u202e<!channel>", "null", "-1", "0", "\n")
# Fixed parameters of every catalog action, for a plan against the object as it comes.
_PARAMS: dict[str, dict[str, Any]] = {
    "scale": {"replicas": 2},
    "rollout-restart": {"restarted_at": "2026-01-01T00:00:00Z"},
    "rollout-undo": {},
    "set-image": {"image": "example/web:1.0"},
    "set-env": {"variable": "LOG_LEVEL", "value": "debug"},
    "set-resources": {"limits": {"memory": "256Mi"}},
    "set-command": {"command": ["serve"]},
    "set-node-selector": {"node_selector": {"zone": "a"}},
    "patch-service": {"target_port": 8080},
    "create-service": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]},
    "patch-configmap-key": {"key": "LOG_LEVEL", "value": "debug"},
    "restore-configmap-key": {"key": "LOG_LEVEL"},
    "restore-secret-key": {"key": "password"},
    "patch-hpa": {"max_replicas": 5},
    "cordon": {},
    "uncordon": {},
    "remove-taint": {"key": "node.kubernetes.io/unschedulable"},
    "delete-pod": {},
    "delete-job": {},
    "delete-networkpolicy": {},
    "set-quota": {"resource": "pods", "value": "20"},
    "delete-resourcequota": {},
    "delete-pvc": {},
}


@dataclass
class Tally:
    snapshots: int = 0
    objects: int = 0
    changes: Counter[str] = field(default_factory=Counter)
    plans: int = 0
    refused: int = 0

    def reset(self) -> None:
        self.snapshots = self.objects = self.plans = self.refused = 0
        self.changes.clear()


TALLY = Tally()


class OddSnapshot:
    """A recorded snapshot with some of its objects broken, and what was done to them (the
    repr hypothesis prints when a case fails)."""

    def __init__(
        self,
        name: str,
        changes: list[str],
        broken: list[dict[str, Any]],
        plans: list[tuple[dict[str, Any], str]],
        snapshot: Snapshot,
    ) -> None:
        self.name, self.changes, self.broken, self.plans = name, changes, broken, plans
        self.snapshot = snapshot

    def __repr__(self) -> str:
        return f"OddSnapshot({self.name!r}, {len(self.changes)} changes: {self.changes[:60]!r})"


def _mutable(obj: dict[str, Any]) -> list[Path]:
    """The paths of ``obj`` the generator may change."""
    found: list[Path] = []
    kept = _KEPT | _STRUCTURE
    if obj.get("kind") in _OPTIONAL_SELECTOR:
        kept -= {("spec", "selector")}

    def walk(value: Any, path: Path, key: str | int) -> None:
        if isinstance(value, dict):
            for inner_key, inner in value.items():
                inner_path = (*path, inner_key)
                listed = len(path) >= 2 and isinstance(path[-1], int)
                parent = path[-2] if listed else None
                if inner_path in kept or (
                    isinstance(parent, str) and inner_key in _REQUIRED.get(parent, ())
                ):
                    walk(inner, inner_path, inner_key)
                    continue
                found.append(inner_path)
                walk(inner, inner_path, inner_key)
        elif isinstance(value, list):
            for index, inner in enumerate(value):
                found.append((*path, index))
                walk(inner, (*path, index), key)

    walk(obj, (), "")
    return found


def _odd(value: Any, *, in_string_map: bool) -> list[Any]:
    """What an API server may send in place of ``value``: null (where the schema allows it),
    or an empty or odd value of its own type; never another JSON type."""
    null: list[Any] = [] if in_string_map else [None]
    if value is None:
        return []  # already null: its type is not known any more
    if isinstance(value, dict):
        return [*null, {}]
    if isinstance(value, list):
        return [*null, []]
    if isinstance(value, bool):
        return [*null, not value]
    if isinstance(value, int):
        return [*null, 0, -1, 2**31, 2**63 - 1]
    if isinstance(value, float):
        return [*null, 0.0, -1.0]
    return [*null, *_ODD_TEXT]


def _at(obj: Any, path: Path) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def _break_part(draw: st.DrawFn, obj: dict[str, Any]) -> str:
    """One change to ``obj``; returns its name for the tally."""
    how = draw(st.sampled_from(["part", "part", "part", "status", "container", "env", "revision"]))
    spec = _pod_spec(obj)
    if how == "status" and "status" in obj:
        del obj["status"]
        return "status removed"
    if how == "container" and spec and spec.get("containers"):
        containers = spec["containers"]
        index = draw(st.integers(0, len(containers) - 1))
        kept = {k: containers[index][k] for k in ("name", "image") if k in containers[index]}
        containers[index] = kept
        return "container without optional fields"
    if how == "env" and spec and spec.get("containers"):
        container = draw(st.sampled_from(spec["containers"]))
        ref = draw(st.sampled_from(["configMapKeyRef", "secretKeyRef", "fieldRef"]))
        value_from: dict[str, Any] = {ref: draw(st.sampled_from([None, {}, {"key": "k"}]))}
        env = container.get("env") or []
        env.append(
            {
                "name": draw(st.sampled_from(["LOG_LEVEL", "X", "DB_PASSWORD"])),
                "valueFrom": value_from,
            }
        )
        container["env"] = env
        return "env valueFrom with a null or empty ref"
    if how == "revision" and obj["kind"] in ("Deployment", "ReplicaSet"):
        annotations = obj["metadata"].get("annotations") or {}
        annotations[REVISION] = draw(st.sampled_from(_REVISIONS))
        obj["metadata"]["annotations"] = annotations
        return "revision annotation not a number"
    where = _mutable(obj)
    if not where:
        return "no part left to change"
    path = draw(st.sampled_from(where))
    parent = _at(obj, path[:-1])
    if isinstance(parent, list):
        assert isinstance(path[-1], int)
        del parent[path[-1]]  # a list item is dropped, never nulled: the API refuses a null item
        return "list item removed"
    in_string_map = len(path) >= 2 and path[-2] in _STRING_MAPS
    choice = draw(st.sampled_from(["remove", *_odd(parent[path[-1]], in_string_map=in_string_map)]))
    if choice == "remove":
        del parent[path[-1]]
        return "field removed"
    parent[path[-1]] = choice
    return "field null" if choice is None else "field empty or odd"


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    if obj.get("kind") == "Pod":
        return spec
    if isinstance(spec.get("jobTemplate"), dict):
        spec = spec["jobTemplate"].get("spec") or {}
    template = spec.get("template")
    inner = template.get("spec") if isinstance(template, dict) else None
    return inner if isinstance(inner, dict) else None


@st.composite
def odd_snapshots(draw: st.DrawFn) -> OddSnapshot:
    name = draw(st.sampled_from(NAMES))
    odd = recorded(name).snapshot()
    by_kind = {k: group for k, group in (*odd.objects.items(), *odd.cluster.items()) if group}
    kinds = sorted(by_kind)
    changes: list[str] = []
    broken: list[dict[str, Any]] = []
    # A kind first, then one of its objects: the many Events would crowd out the rest.
    for _ in range(draw(st.integers(1, MAX_BROKEN))):
        group = by_kind[draw(st.sampled_from(kinds))]
        obj = group[draw(st.integers(0, len(group) - 1))]
        if not any(obj is seen for seen in broken):
            broken.append(obj)
        for _ in range(draw(st.integers(1, 4))):
            changes.append(f"{obj['kind']}/{obj['metadata']['name']}: {_break_part(draw, obj)}")
    # One catalog action of its kind planned on each broken object (a plan writes a YAML diff,
    # too slow to try all of them on every object).
    plans = [
        (obj, draw(st.sampled_from(names))) for obj in broken if (names := _actions_of(obj["kind"]))
    ]
    return OddSnapshot(name, changes, broken, plans, odd)


def _actions_of(kind: str) -> list[str]:
    return [name for name, cls in actions.CATALOG.items() if kind in cls.kinds]


def _plan(odd: Snapshot, obj: dict[str, Any], name: str) -> bool:
    """The plan of catalog action ``name`` on ``obj``: True when it refused with a typed error."""
    action: Action = actions.build(
        name,
        {
            **_PARAMS[name],
            "kind": obj["kind"],
            "target": obj["metadata"]["name"],
            "namespace": obj["metadata"].get("namespace", ""),
        },
    )
    wanted = action.related()
    try:
        action.plan(obj, odd.of(wanted[1]) if wanted else [])
    except ToolError:
        return True
    return False


@settings(
    derandomize=True,
    # No shrinking: a failing case names its snapshot and its changes, and shrinking forty
    # broken objects through the whole analysis takes minutes.
    phases=[Phase.explicit, Phase.generate],
    report_multiple_bugs=False,
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(odd_snapshots())
def _read_and_plan(odd: OddSnapshot) -> None:
    snap = odd.snapshot
    snapshots.log_targets(snap.pods)
    health.score(health.state_of(snap.namespace, snap.objects))
    analyze(snap)
    plan_offline(snap)
    refused = sum(_plan(snap, obj, action) for obj, action in odd.plans)
    TALLY.snapshots += 1
    TALLY.objects += len(odd.broken)
    TALLY.changes.update(change.split(": ", 1)[1] for change in odd.changes)
    TALLY.plans += len(odd.plans)
    TALLY.refused += refused


def test_objects_of_odd_shapes_crash_no_reader_analyzer_planner_or_action_plan() -> None:
    TALLY.reset()
    _read_and_plan()
    assert TALLY.snapshots >= EXAMPLES
    changes = ", ".join(f"{n:,} {what}" for what, n in TALLY.changes.most_common())
    print(
        f"\nbad input, objects: {TALLY.objects:,} objects generated in {TALLY.snapshots:,} "
        f"snapshots analysed ({changes}); through the log choice, the health score, every "
        f"analyzer, the diagnosis and the offline planner; {TALLY.plans:,} action plans "
        f"({TALLY.refused:,} refused with a ToolError): 0 crashes"
    )
