"""RBAC objects for the permissions ``tools.permissions`` derives: which roles, bound where.

The roles are apart by where they are bound: namespaced reads and writes as ClusterRoles bound
by a RoleBinding in each managed namespace, the cluster-scoped reads and the node writes by
ClusterRoleBindings, the leader Lease by a Role in Stratus's own namespace, and the opt-in
Secret role only where an operator names it. ``stratus deploy rbac`` prints them, part by part
as the manifests keep them (``base/rbac.yaml``, ``managed/``, ``components/secrets``). Pure:
dicts out, nothing sent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools import names
from tools.errors import Invalid
from tools.permissions import Grant, Permissions

RBAC_API = "rbac.authorization.k8s.io/v1"


def rules(grants: Iterable[Grant]) -> list[dict[str, Any]]:
    """PolicyRules for ``grants``: one rule per (group, names, verbs), resources merged, in a
    stable order so the printed YAML does not move between runs."""
    by_resource: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for grant in grants:
        by_resource[(grant.group, grant.name, grant.resource)].add(grant.verb)
    merged: dict[tuple[str, str, tuple[str, ...]], list[str]] = defaultdict(list)
    for (group, name, resource), verb_set in sorted(by_resource.items()):
        merged[(group, name, tuple(sorted(verb_set)))].append(resource)
    result: list[dict[str, Any]] = []
    for (group, name, verbs), resources in sorted(merged.items()):
        rule: dict[str, Any] = {
            "apiGroups": [group],
            "resources": sorted(resources),
            "verbs": list(verbs),
        }
        if name:
            rule["resourceNames"] = [name]
        result.append(rule)
    return result


def grants_of(rules_: Iterable[Mapping[str, Any]]) -> frozenset[Grant]:
    """The grants a list of PolicyRules gives (the inverse of ``rules``), to compare a
    manifest with what is derived. Wildcards are kept as the literal ``*`` so a test sees
    them rather than expanding them."""
    found: set[Grant] = set()
    for rule in rules_:
        names = list(rule.get("resourceNames") or [""])
        for group in rule.get("apiGroups") or [""]:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    found.update(Grant(group, resource, verb, name) for name in names)
    return frozenset(found)


@dataclass(frozen=True)
class Install:
    """Where Stratus runs and which namespaces it manages."""

    namespace: str = "stratus"
    service_account: str = "stratus"
    managed: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()  # namespaces where the opt-in Secret role is bound

    @classmethod
    def checked(
        cls,
        *,
        namespace: str = "stratus",
        service_account: str = "stratus",
        managed: Iterable[str] = (),
        secrets: Iterable[str] = (),
    ) -> Install:
        """An installation from what a person typed: valid names, each namespace once, and
        never Stratus's own namespace as a managed one (the write scope protects it)."""
        names.check_namespace(namespace)
        names.check_name("ServiceAccount", service_account)
        managed_ = tuple(dict.fromkeys(names.check_namespace(n) for n in managed))
        secrets_ = tuple(dict.fromkeys(names.check_namespace(n) for n in secrets))
        if namespace in managed_:
            raise Invalid(
                f"{namespace} is Stratus's own namespace; it is not managed (its writes there "
                "are refused by the write scope), so it gets no read or write binding"
            )
        outside = [n for n in secrets_ if n not in managed_]
        if outside:
            raise Invalid(
                f"Secrets can be opted into only in managed namespaces; {', '.join(outside)} "
                "is not one of them"
            )
        return cls(namespace, service_account, managed_, secrets_)


ROLE_NAMES = {
    "read": "stratus-read",
    "read_cluster": "stratus-read-cluster",
    "write": "stratus-write",
    "write_cluster": "stratus-write-nodes",
    "secrets": "stratus-secrets",
    "leader": "stratus-leader",
}
LABELS = {"app.kubernetes.io/name": "stratus", "app.kubernetes.io/component": "rbac"}


def _meta(name: str, namespace: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return meta


def _subject(install: Install) -> list[dict[str, Any]]:
    return [
        {"kind": "ServiceAccount", "name": install.service_account, "namespace": install.namespace}
    ]


def cluster_role(name: str, grants: Iterable[Grant]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRole",
        "metadata": _meta(name),
        "rules": rules(grants),
    }


def _binding(install: Install, *, role_kind: str, role: str, namespace: str = "") -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API,
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": _meta(role, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": _subject(install),
    }


def cluster_objects(permissions: Permissions, install: Install) -> list[dict[str, Any]]:
    """The roles and the bindings that do not depend on the managed namespaces."""
    names = ROLE_NAMES
    return [
        cluster_role(names["read"], permissions.read),
        cluster_role(names["read_cluster"], permissions.read_cluster),
        cluster_role(names["write"], permissions.write),
        cluster_role(names["write_cluster"], permissions.write_cluster),
        _binding(install, role_kind="ClusterRole", role=names["read_cluster"]),
        _binding(install, role_kind="ClusterRole", role=names["write_cluster"]),
        {
            "apiVersion": RBAC_API,
            "kind": "Role",
            "metadata": _meta(names["leader"], install.namespace),
            "rules": rules(permissions.leader),
        },
        _binding(install, role_kind="Role", role=names["leader"], namespace=install.namespace),
    ]


def managed_bindings(install: Install) -> list[dict[str, Any]]:
    """The read and write roles bound in each managed namespace (and the Secret role where
    it is opted into)."""
    objects: list[dict[str, Any]] = []
    for namespace in install.managed:
        for key in ("read", "write"):
            objects.append(
                _binding(
                    install, role_kind="ClusterRole", role=ROLE_NAMES[key], namespace=namespace
                )
            )
    for namespace in install.secrets:
        objects.append(
            _binding(
                install, role_kind="ClusterRole", role=ROLE_NAMES["secrets"], namespace=namespace
            )
        )
    return objects


def rbac_objects(
    permissions: Permissions, install: Install, *, with_secrets_role: bool = False
) -> list[dict[str, Any]]:
    """Every RBAC object of an installation, in the order ``kubectl apply`` wants them."""
    objects = cluster_objects(permissions, install)
    if with_secrets_role or install.secrets:
        objects.append(cluster_role(ROLE_NAMES["secrets"], permissions.secrets))
    return objects + managed_bindings(install)


PARTS = ("all", "roles", "bindings", "secrets")


def rbac_part(part: str, install: Install, permissions: Permissions) -> list[dict[str, Any]]:
    """One part of the RBAC objects, as the manifests keep them apart: ``roles`` (the roles
    and the bindings that do not depend on the managed namespaces: base/rbac.yaml),
    ``bindings`` (the managed namespaces' bindings: managed/), ``secrets`` (the opt-in role:
    components/secrets) or ``all`` of them."""
    if part == "roles":
        return cluster_objects(permissions, install)
    if part == "bindings":
        return managed_bindings(install)
    if part == "secrets":
        return [cluster_role(ROLE_NAMES["secrets"], permissions.secrets)]
    if part == "all":
        return rbac_objects(permissions, install)
    raise Invalid(f"unknown part {part!r}: one of {', '.join(PARTS)}")
