"""The ClusterRole aggregation controller: an aggregated role's ``rules`` are the rules of the
roles its ``aggregationRule`` selects.

A real cluster's controller-manager writes them into the role, so ``view`` holds what every
``aggregate-to-view`` role grants, ``edit`` (which selects ``view`` by its
``aggregate-to-edit`` label) holds view's rules and its own, and ``admin`` holds all three:
aggregation is transitive because each role's rules are already written out. A deployment
adds to them with a labelled ClusterRole of its own, and ``kubectl get clusterrole admin -o
yaml`` shows what the role grants. The authorizer reads the written rules.
"""

from __future__ import annotations

from typing import Any

from lab.cluster.selectors import label_selector_from_object, matches_labels
from lab.controllers.context import ControllerContext

KEY = "clusterroles.rbac.authorization.k8s.io"


def aggregated_rules(role: dict[str, Any], roles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules ``role`` aggregates from ``roles`` (as the controller does: each selector in
    turn, the matching roles by name, each rule once, the role itself left out)."""
    rules: list[dict[str, Any]] = []
    name = role["metadata"]["name"]
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
        wanted = label_selector_from_object(selector)
        for other in sorted(roles, key=lambda r: str(r["metadata"]["name"])):
            if other["metadata"]["name"] == name:
                continue
            if not matches_labels(wanted, other["metadata"].get("labels")):
                continue
            for rule in other.get("rules") or []:
                if rule not in rules:
                    rules.append(rule)
    return rules


class ClusterRoleAggregator:
    COMPONENT = "clusterrole-aggregation-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        # One pass writes each role from the others' current rules; the settle loop runs
        # controllers to a fixed point, so a chain (view → edit → admin) completes.
        for role in self.ctx.store.list_objects(KEY):
            if not role.get("aggregationRule"):
                continue
            rules = aggregated_rules(role, self.ctx.store.list_objects(KEY))
            if rules != (role.get("rules") or []):
                self.ctx.write_object(KEY, {**role, "rules": rules})
