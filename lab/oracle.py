"""Scenario oracles: was the fault mitigated, and was nothing else damaged?

*Mitigated* means every workload of the namespace is fully available and rolled out, no pod is
pending or failing, every service answers without errors, and the scenario's own checks hold.
*No collateral damage* compares every other workload's replicas, images and selector and every
other service's selector and ports with a baseline taken just before injection — so scaling
down or deleting a healthy neighbour does not pass, as it does in AIOpsLab's oracle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lab.cluster.resources import by_kind
from lab.cluster.store import ObjectStore
from lab.controllers.workloads import pod_is_ready
from lab.scenarios import Check, Scenario

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
_BAD_WAITING = {
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
}


@dataclass
class Verdict:
    scenario: str
    mitigated: bool
    no_collateral_damage: bool
    problems: list[str] = field(default_factory=list)
    damage: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.mitigated and self.no_collateral_damage

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "passed": self.passed,
            "mitigated": self.mitigated,
            "no_collateral_damage": self.no_collateral_damage,
            "problems": self.problems,
            "collateral_damage": self.damage,
        }


def _containers(obj: dict[str, Any]) -> dict[str, str]:
    template = (obj.get("spec") or {}).get("template") or {}
    return {
        c["name"]: c.get("image", "") for c in (template.get("spec") or {}).get("containers") or []
    }


def baseline(store: ObjectStore, namespace: str) -> dict[str, Any]:
    """What must still hold after the incident, for every workload and service."""
    snapshot: dict[str, Any] = {}
    for kind in WORKLOAD_KINDS:
        for obj in store.list_objects(by_kind(kind).key, namespace):
            snapshot[f"{kind}/{obj['metadata']['name']}"] = {
                "replicas": (obj.get("spec") or {}).get("replicas"),
                "images": _containers(obj),
                "selector": (obj.get("spec") or {}).get("selector"),
            }
    for svc in store.list_objects("services", namespace):
        spec = svc.get("spec") or {}
        snapshot[f"Service/{svc['metadata']['name']}"] = {
            "selector": spec.get("selector"),
            "ports": [(p.get("port"), p.get("targetPort")) for p in spec.get("ports") or []],
        }
    return snapshot


def collateral_damage(before: dict[str, Any], after: dict[str, Any], faulty: set[str]) -> list[str]:
    damage = []
    for key, expected in before.items():
        if key in faulty:
            continue
        actual = after.get(key)
        if actual is None:
            damage.append(f"{key} was deleted")
            continue
        for aspect, value in expected.items():
            if actual.get(aspect) != value:
                damage.append(f"{key}: {aspect} changed from {value!r} to {actual.get(aspect)!r}")
    return damage


def _workload_problems(store: ObjectStore, namespace: str, before: dict[str, Any]) -> list[str]:
    problems = []
    for kind in WORKLOAD_KINDS:
        for obj in store.list_objects(by_kind(kind).key, namespace):
            name = f"{kind}/{obj['metadata']['name']}"
            status = obj.get("status") or {}
            if kind == "DaemonSet":
                desired = int(status.get("desiredNumberScheduled", 0))
                ready = int(status.get("numberReady", 0))
                updated = int(status.get("updatedNumberScheduled", 0))
            else:
                desired = int(obj["spec"].get("replicas", 1))
                ready = int(status.get("availableReplicas", status.get("readyReplicas", 0)))
                updated = int(status.get("updatedReplicas", 0))
                if desired == 0 and (before.get(name) or {}).get("replicas"):
                    problems.append(f"{name} is scaled to 0 replicas")
                    continue
            if ready < desired:
                problems.append(f"{name} has {ready}/{desired} replicas available")
            elif updated < desired:
                problems.append(f"{name} rollout incomplete: {updated}/{desired} updated")
            elif kind == "Deployment" and int(status.get("replicas", 0)) > desired:
                problems.append(f"{name} still runs old replicas")
    return problems


def _pod_problems(store: ObjectStore, namespace: str) -> list[str]:
    problems = []
    for pod in store.list_objects("pods", namespace):
        name = f"Pod/{pod['metadata']['name']}"
        status = pod.get("status") or {}
        if status.get("phase") == "Pending" and not (pod.get("spec") or {}).get("nodeName"):
            problems.append(f"{name} is Pending (unschedulable)")
            continue
        for container in status.get("containerStatuses") or []:
            waiting = (container.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in _BAD_WAITING:
                problems.append(f"{name} container {container['name']}: {waiting['reason']}")
        if status.get("phase") == "Running" and not pod_is_ready(pod) and not problems:
            problems.append(f"{name} is not ready")
    return problems


def _field(obj: dict[str, Any], path: str) -> tuple[bool, Any]:
    node: Any = obj
    for step in [s for s in path.split(".") if s]:
        if isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        elif isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return False, None
    return True, node


class OracleError(Exception):
    """The scenario's oracle cannot be evaluated as written (a check on a kind the lab does not
    serve): the verdict would be a guess, so there is none, and the message says why."""


def _check(store: ObjectStore, namespace: str, check: Check) -> str | None:
    try:
        rt = by_kind(check.kind)
    except KeyError as error:
        raise OracleError(
            f"its oracle checks {check.kind}/{check.name}, a kind the lab does not serve"
        ) from error
    obj = store.get(rt.key, namespace if rt.namespaced else "", check.name)
    label = f"{check.kind}/{check.name}"
    if check.exists is not None:
        if (obj is not None) != check.exists:
            return f"{label} {'does not exist' if check.exists else 'still exists'}"
        if obj is None:
            return None
    if obj is None:
        return f"{label} does not exist"
    found, value = _field(obj, check.path)
    if check.equals is not None and (not found or value != check.equals):
        return f"{label} {check.path} is {value!r}, expected {check.equals!r}"
    if check.not_equals is not None and found and value == check.not_equals:
        return f"{label} {check.path} is still {value!r}"
    return None


def evaluate(
    store: ObjectStore, traffic: dict[str, Any], scenario: Scenario, before: dict[str, Any]
) -> Verdict:
    namespace = scenario.namespace
    problems = _workload_problems(store, namespace, before)
    problems += _pod_problems(store, namespace)
    for service, counters in traffic.items():
        if counters["error_rate"] > 0:
            problems.append(
                f"Service/{service} fails {counters['error_rate']:.0%} of requests: "
                f"{counters['last_error']}"
            )
    for check in scenario.oracle.checks:
        problem = _check(store, namespace, check)
        if problem:
            problems.append(problem)
    faulty = {
        f"{r.kind}/{r.name}" for r in (scenario.root_cause.resources if scenario.root_cause else [])
    }
    damage = collateral_damage(before, baseline(store, namespace), faulty)
    return Verdict(scenario.name, not problems, not damage, problems, damage)
