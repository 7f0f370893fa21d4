"""Issue 19 §5, security: the manifests grant no Secret read and nothing cluster-admin. Every
overlay is rendered as ``kubectl apply -k`` would send it (tests/deploy/test_manifests.py's
helpers), and so is each opt-in component no overlay includes (impersonation, secrets) layered
on the socket overlay. Every rule of every Role and ClusterRole is counted and judged: no
wildcard (group, resource, verb or name), no Secret verb at all, no ``escalate`` or ``bind``,
``impersonate`` only by name; every binding names a ``stratus-`` role (never cluster-admin,
admin or edit) for Stratus's service account only.

The one place Secrets may appear is the opt-in ``components/secrets``: its ``stratus-secrets``
role is counted apart, must be exactly the Secret grants derived from the action catalog, and
must be bound only in the namespaces the installer named."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.test_manifests import DEPLOY, OVERLAYS, _of, _secrets_bindings, kustomize
from tools import permissions, rbac

SECRETS_ROLE = "stratus-secrets"
FORBIDDEN_ROLES = ("cluster-admin", "admin", "edit")
SUBJECT = {"kind": "ServiceAccount", "name": "stratus", "namespace": "stratus"}


def _layer(tmp_path: Path, component: str) -> list[dict[str, Any]]:
    """The socket overlay with ``component`` added (and, for secrets, its bindings)."""
    layer = tmp_path / component
    layer.mkdir()
    relative = Path(os.path.relpath(DEPLOY, layer))
    resources = [str(relative / "overlays" / "socket")]
    if component == "secrets":
        (layer / "bindings.yaml").write_text(_secrets_bindings())
        resources.append("bindings.yaml")
    (layer / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {"resources": resources, "components": [str(relative / "components" / component)]}
        )
    )
    return kustomize(layer)


def problems(objects: list[dict[str, Any]], *, secrets_in: set[str]) -> tuple[list[str], int]:
    """What the rendered objects grant beyond the rules above, in words, and how many rules
    were judged. ``secrets_in``: where the opt-in Secret role may be bound (empty: nowhere)."""
    found: list[str] = []
    rules = 0
    for role in _of(objects, "Role") + _of(objects, "ClusterRole"):
        name = role["metadata"]["name"]
        for rule in role.get("rules") or []:
            rules += 1
            parts = [*rule.get("apiGroups", []), *rule.get("resources", [])]
            parts += [*rule.get("verbs", []), *rule.get("resourceNames", [])]
            if "*" in parts or any("*" in p for p in parts):
                found.append(f"{name}: a wildcard in {rule}")
            if any(r.split("/")[0] == "secrets" for r in rule.get("resources", [])) and not (
                name == SECRETS_ROLE and secrets_in
            ):
                found.append(f"{name}: Secrets ({rule['verbs']})")
            if {"escalate", "bind"} & set(rule.get("verbs", [])):
                found.append(f"{name}: escalate or bind")
            if "impersonate" in rule.get("verbs", []) and not rule.get("resourceNames"):
                found.append(f"{name}: impersonate without names")
    for binding in _of(objects, "RoleBinding") + _of(objects, "ClusterRoleBinding"):
        ref = binding["roleRef"]["name"]
        where = binding["metadata"].get("namespace", "")
        if ref in FORBIDDEN_ROLES or not ref.startswith("stratus-"):
            found.append(f"binding {binding['metadata']['name']} to {ref}")
        if binding.get("subjects") != [SUBJECT]:
            found.append(f"binding {binding['metadata']['name']} for {binding.get('subjects')}")
        if ref == SECRETS_ROLE and (binding["kind"] != "RoleBinding" or where not in secrets_in):
            found.append(f"{SECRETS_ROLE} bound in {where or 'the whole cluster'}")
    return found, rules


def test_no_rendered_manifest_grants_secrets_a_wildcard_or_cluster_admin(tmp_path: Path) -> None:
    rendered = {f"overlays/{o}": kustomize(DEPLOY / "overlays" / o) for o in OVERLAYS}
    for component in ("impersonation", "secrets"):
        rendered[f"overlays/socket + components/{component}"] = _layer(tmp_path, component)
    roles = rules = bindings = 0
    for name, objects in rendered.items():
        secrets_in = {"apps"} if name.endswith("components/secrets") else set()
        found, judged = problems(objects, secrets_in=secrets_in)
        assert found == [], name
        roles += len(_of(objects, "Role") + _of(objects, "ClusterRole"))
        bindings += len(_of(objects, "RoleBinding") + _of(objects, "ClusterRoleBinding"))
        rules += judged
    opted = rendered["overlays/socket + components/secrets"]
    secret_role = next(
        r for r in _of(opted, "ClusterRole") if r["metadata"]["name"] == SECRETS_ROLE
    )
    assert rbac.grants_of(secret_role["rules"]) == permissions.derive().secrets
    secret_rules = len(secret_role["rules"])
    print(
        f"\nsecurity, RBAC: {len(rendered)} renderings ({', '.join(rendered)}): {roles} Roles "
        f"and ClusterRoles, {rules} rules, {bindings} bindings judged; 0 wildcards, 0 Secret "
        f"grants outside the opt-in {SECRETS_ROLE} ({secret_rules} rule(s), exactly the "
        "catalog's Secret grants, bound only in the namespace named), 0 bindings to "
        "cluster-admin, admin or edit"
    )


def test_the_judge_names_each_grant_too_many() -> None:
    """It can fail: a planted rule or binding of each kind is named."""
    planted: list[dict[str, Any]] = [
        {
            "kind": "ClusterRole",
            "metadata": {"name": "stratus-read"},
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
                {"apiGroups": ["apps"], "resources": ["*"], "verbs": ["list"]},
                {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]},
            ],
        },
        {
            "kind": "ClusterRole",
            "metadata": {"name": SECRETS_ROLE},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}],
        },
        {
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "oops"},
            "roleRef": {"name": "cluster-admin"},
            "subjects": [SUBJECT],
        },
        {
            "kind": "RoleBinding",
            "metadata": {"name": "s", "namespace": "kube-system"},
            "roleRef": {"name": SECRETS_ROLE},
            "subjects": [{"kind": "Group", "name": "system:authenticated"}],
        },
    ]
    found, rules = problems(planted, secrets_in={"apps"})
    assert rules == 4
    assert found == [
        "stratus-read: Secrets (['get'])",
        "stratus-read: a wildcard in {'apiGroups': ['apps'], 'resources': ['*'], 'verbs': "
        "['list']}",
        "stratus-read: impersonate without names",
        "binding s for [{'kind': 'Group', 'name': 'system:authenticated'}]",
        f"{SECRETS_ROLE} bound in kube-system",
        "binding oops to cluster-admin",
    ]
    assert "stratus-secrets: Secrets (['list'])" in problems(planted, secrets_in=set())[0]
