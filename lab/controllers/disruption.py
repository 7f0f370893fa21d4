"""policy/v1: the disruption controller (PodDisruptionBudget status) and pod eviction.

``kubectl drain`` evicts through ``POST …/pods/{name}/eviction``. As on a real server, an
eviction that would take a budget's healthy pods below what it asks for is refused with
``429 TooManyRequests`` (kubectl retries every 5 s until its ``--timeout``); otherwise the
budget's allowance is spent and the pod deleted. Pods that are not running, and pods no budget
covers, are evicted at once.
"""

from __future__ import annotations

from typing import Any

from lab.cluster.errors import ApiError
from lab.cluster.resources import by_kind
from lab.controllers.context import ControllerContext
from lab.controllers.workloads import pod_is_active, pod_is_ready, resolve_int_or_percent

PDB_KEY = "poddisruptionbudgets.policy"
COMPONENT = "controllermanager"


def _selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    if not selector:
        return False  # policy/v1: an empty selector matches nothing… unless it is {} explicitly
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        value = labels.get(expr.get("key", ""))
        values = expr.get("values") or []
        operator = expr.get("operator")
        if (
            (operator == "In" and value not in values)
            or (operator == "NotIn" and value in values)
            or (operator == "Exists" and value is None)
            or (operator == "DoesNotExist" and value is not None)
        ):
            return False
    return True


def covers(pdb: dict[str, Any], pod: dict[str, Any]) -> bool:
    selector = (pdb.get("spec") or {}).get("selector")
    if selector == {}:
        return True  # policy/v1: an empty selector selects every pod of the namespace
    return _selector_matches(selector, pod["metadata"].get("labels") or {})


class DisruptionController:
    """Keeps each budget's status: expected, healthy and desired pods, disruptions allowed."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        for pdb in self.ctx.store.iter_all(PDB_KEY):
            self.ctx.write_status(PDB_KEY, pdb, self.status_of(pdb))

    def status_of(self, pdb: dict[str, Any], *, spent: int = 0) -> dict[str, Any]:
        spec = pdb.get("spec") or {}
        namespace = pdb["metadata"]["namespace"]
        pods = [
            p
            for p in self.ctx.store.list_objects("pods", namespace)
            if pod_is_active(p) and covers(pdb, p)
        ]
        expected = len(pods)
        healthy = sum(1 for p in pods if pod_is_ready(p))
        if "minAvailable" in spec:
            desired = resolve_int_or_percent(spec["minAvailable"], expected, round_up=True)
        elif "maxUnavailable" in spec:
            desired = expected - resolve_int_or_percent(
                spec["maxUnavailable"], expected, round_up=True
            )
        else:
            desired = expected
        desired = max(desired, 0)
        allowed = max(healthy - desired - spent, 0)
        old = pdb.get("status") or {}
        previous = next((c for c in old.get("conditions") or [] if c.get("type")), None)
        value = "True" if allowed > 0 else "False"
        stamp = (
            previous["lastTransitionTime"]
            if previous and previous.get("status") == value
            else self.ctx.clock.timestamp()
        )
        return {
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "conditions": [
                {
                    "type": "DisruptionAllowed",
                    "status": value,
                    "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                    "message": "",
                    "observedGeneration": pdb["metadata"].get("generation", 1),
                    "lastTransitionTime": stamp,
                }
            ],
        }


def evict(ctx: ControllerContext, namespace: str, name: str, *, dry_run: bool = False) -> None:
    """Delete a pod through the eviction subresource, or refuse as the API server does."""
    pod_rt = by_kind("Pod")
    pod = ctx.api.get(pod_rt, namespace, name)
    if pod_is_active(pod) and (pod.get("status") or {}).get("phase") == "Running":
        budgets = [p for p in ctx.store.list_objects(PDB_KEY, namespace) if covers(p, pod)]
        if len(budgets) > 1:
            raise ApiError(
                500,
                "InternalError",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                "does not support.",
            )
        if budgets:
            pdb = budgets[0]
            status = DisruptionController(ctx).status_of(pdb)
            if status["disruptionsAllowed"] <= 0 and pod_is_ready(pod):
                raise ApiError(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    causes=[
                        {
                            "reason": "DisruptionBudget",
                            "message": f"The disruption budget {pdb['metadata']['name']} needs "
                            f"{status['desiredHealthy']} healthy pods and has "
                            f"{status['currentHealthy']} currently",
                        }
                    ],
                )
            if not dry_run:
                spent = DisruptionController(ctx).status_of(pdb, spent=1)
                ctx.write_status(PDB_KEY, pdb, spent)
    if not dry_run:
        ctx.api.delete(pod_rt, namespace, name)
