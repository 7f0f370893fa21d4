"""The permissions Stratus needs are derived from its read layer and its action catalog
(``tools.permissions``): pure, so checked here without a cluster. The shipped manifests are
compared with the derivation in tests/deploy/test_manifests.py."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import ClassVar

import pytest

from agents import health, snapshot
from tools import permissions, rbac, reads
from tools.actions import CATALOG, Action
from tools.errors import Invalid
from tools.objects import API_VERSIONS
from tools.permissions import Grant
from tools.rbac import Install

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("agents", "bot", "cli", "incidents", "proposals", "policies", "tools", "undo", "store")


def _everything(perms: permissions.Permissions) -> frozenset[Grant]:
    return (
        perms.read
        | perms.read_cluster
        | perms.write
        | perms.write_cluster
        | perms.secrets
        | perms.leader
    )


def test_no_wildcard_no_patch_no_watch_and_no_secret_outside_the_opt_in_role() -> None:
    perms = permissions.derive()
    for grant in _everything(perms):
        assert "*" not in (grant.group, grant.resource, grant.verb), grant
        # Stratus replaces with the resourceVersion it planned on; it never patches or watches.
        assert grant.verb in {"get", "list", "create", "update", "delete"}, grant
    default = perms.read | perms.read_cluster | perms.write | perms.write_cluster | perms.leader
    assert not [g for g in default if g.resource.startswith("secrets")]
    assert {g.resource for g in perms.secrets} == {"secrets"}


def test_every_catalog_action_can_write_what_it_plans_and_what_its_undo_sends() -> None:
    perms = permissions.derive()
    granted = perms.write | perms.write_cluster | perms.secrets
    readable = perms.read | perms.read_cluster | perms.secrets
    for action in CATALOG.values():
        for kind in action.kinds:
            resource = permissions.RESOURCES[kind]
            own = {"replace": "update", "create": "create", "delete": "delete"}[action.operation]
            assert Grant(resource.group, resource.plural, own) in granted, (action.name, kind)
            assert Grant(resource.group, resource.plural, "get") in readable, (action.name, kind)
            if action.operation == "create" and action.reversible:
                assert Grant(resource.group, resource.plural, "delete") in granted
            if action.operation == "delete" and action.reversible:
                assert Grant(resource.group, resource.plural, "create") in granted


def test_writes_are_exactly_the_catalogs_verbs() -> None:
    """Nothing is granted for writing that no catalog action (or its undo) sends."""
    perms = permissions.derive()
    expected = set()
    for action in CATALOG.values():
        for kind in action.kinds:
            if kind == "Secret":
                continue
            resource = permissions.RESOURCES[kind]
            expected |= {
                Grant(resource.group, resource.plural, verb)
                for verb in permissions.action_verbs(action, kind)
            }
    assert perms.write | perms.write_cluster == expected


def test_a_delete_can_be_fenced_by_recovery() -> None:
    """Recovery stops a held delete by replacing the object with a fence annotation
    (``tools.fences``): every kind Stratus deletes — pods, jobs too — needs ``update``."""
    perms = permissions.derive()
    for kind in ("Pod", "Job", "NetworkPolicy", "PersistentVolumeClaim", "ResourceQuota"):
        resource = permissions.RESOURCES[kind]
        assert Grant(resource.group, resource.plural, "delete") in perms.write
        assert Grant(resource.group, resource.plural, "update") in perms.write, kind
    # A pod is never created by Stratus: a deleted pod is the controller's to replace.
    assert Grant("", "pods", "create") not in perms.write
    assert Grant("batch", "jobs", "create") not in perms.write


def test_the_only_cluster_wide_write_is_the_node_actions() -> None:
    perms = permissions.derive()
    assert perms.write_cluster == {Grant("", "nodes", "update")}
    # A Node is registered by its kubelet: never created, never deleted by Stratus.
    assert Grant("", "nodes", "create") not in _everything(perms)
    assert Grant("", "nodes", "delete") not in _everything(perms)
    assert not [g for g in _everything(perms) if g.resource == "namespaces" and g.verb != "get"]


def test_a_new_action_widens_the_write_role_and_a_removed_one_narrows_it() -> None:
    class DeleteService(Action):
        name = "delete-service"
        kinds: ClassVar[tuple[str, ...]] = ("Service",)
        operation = "delete"
        reversible = False

    base = permissions.derive(catalog={"scale": CATALOG["scale"]})
    wider = permissions.derive(catalog={"scale": CATALOG["scale"], "x": DeleteService})
    # The delete, and the update its recovery fence sends.
    assert wider.write - base.write == {
        Grant("", "services", "delete"),
        Grant("", "services", "update"),
    }
    assert Grant("apps", "deployments", "update") in base.write
    assert Grant("", "nodes", "update") not in base.write_cluster


def test_rollout_undo_lists_the_revisions_it_plans_from() -> None:
    perms = permissions.derive()
    assert Grant("apps", "replicasets", "list") in perms.read
    assert Grant("apps", "controllerrevisions", "list") in perms.read


def test_the_leader_lease_is_named_where_rbac_can_name_it() -> None:
    perms = permissions.derive()
    assert perms.leader == {
        Grant("coordination.k8s.io", "leases", "create"),
        Grant("coordination.k8s.io", "leases", "get", "stratus-leader"),
        Grant("coordination.k8s.io", "leases", "update", "stratus-leader"),
    }


def test_reads_cover_every_kind_a_look_reads() -> None:
    """The read declaration keeps up with the readers: a new kind in a snapshot, the health
    score or the read tools must be granted (or, for Secrets, be the opt-in role's)."""
    looked = {kind for _, kind in (*snapshot.NAMESPACED, *snapshot.CLUSTER)}
    looked |= {kind for _, kind in health._WORKLOAD_KINDS}
    looked |= {kind for _, kind in reads._WORKLOADS}
    assert looked - {"Secret"} <= set(permissions.READS)
    assert {"list"} <= permissions.READS["Pod"]


def _literal_kinds(tree: ast.AST) -> set[str]:
    """Kinds named by literals in calls that read: ``X.list("v1", "Kind", …)``,
    ``ObjectRef("Kind", …)`` and ``("apps/v1", "Kind")`` pairs."""
    kinds: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if name == "list" and len(node.args) >= 2 and len(args) >= 2:
                kinds.add(str(args[1]))
            if name == "ObjectRef" and node.args and isinstance(node.args[0], ast.Constant):
                kinds.add(str(node.args[0].value))
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            first, second = node.elts
            if (
                isinstance(first, ast.Constant)
                and isinstance(second, ast.Constant)
                and isinstance(first.value, str)
                and (first.value == "v1" or first.value.endswith("/v1") or "/v2" in first.value)
            ):
                kinds.add(str(second.value))
    return kinds


def test_every_kind_the_product_reads_by_literal_is_granted() -> None:
    named: dict[str, set[str]] = {}
    for package in PRODUCT:
        for path in (REPO / package).rglob("*.py"):
            for kind in _literal_kinds(ast.parse(path.read_text(), str(path))):
                named.setdefault(kind, set()).add(str(path.relative_to(REPO)))
    perms = permissions.derive()
    readable = {(g.group, g.resource) for g in perms.read | perms.read_cluster | perms.secrets}
    missing = {
        kind: sorted(where)
        for kind, where in named.items()
        if kind in permissions.RESOURCES
        and (permissions.RESOURCES[kind].group, permissions.RESOURCES[kind].plural) not in readable
    }
    assert not missing, f"read in code but not granted (tools/permissions.py READS): {missing}"
    # The scan does see the readers (an empty scan would check nothing).
    assert {"Pod", "Deployment", "Namespace", "Endpoints", "Node"} <= set(named)


def test_every_kind_stratus_knows_has_its_rbac_resource() -> None:
    assert set(API_VERSIONS) <= set(permissions.RESOURCES)
    for kind, resource in permissions.RESOURCES.items():
        api_version = API_VERSIONS.get(kind)
        if api_version is not None:
            assert resource.group == (api_version.rpartition("/")[0]), kind


def test_rules_round_trip_and_are_stable() -> None:
    perms = permissions.derive()
    for grants in (perms.read, perms.write, perms.leader, perms.secrets):
        rendered = rbac.rules(grants)
        assert rbac.grants_of(rendered) == grants
        assert rbac.rules(set(grants)) == rendered


def test_a_wildcard_in_a_manifest_is_seen_not_expanded() -> None:
    found = rbac.grants_of([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
    assert found == {Grant("*", "*", "*")}


def test_bindings_follow_the_managed_namespaces() -> None:
    install = Install.checked(managed=["hotel", "shop", "hotel"], secrets=["shop"])
    assert install.managed == ("hotel", "shop")
    bindings = rbac.managed_bindings(install)
    assert {(b["metadata"]["namespace"], b["roleRef"]["name"]) for b in bindings} == {
        ("hotel", "stratus-read"),
        ("hotel", "stratus-write"),
        ("shop", "stratus-read"),
        ("shop", "stratus-write"),
        ("shop", "stratus-secrets"),
    }
    assert all(b["kind"] == "RoleBinding" for b in bindings)
    every = rbac.rbac_part("all", install, permissions.derive())
    assert "stratus-secrets" in {o["metadata"]["name"] for o in every if o["kind"] == "ClusterRole"}
    assert all(
        s == {"kind": "ServiceAccount", "name": "stratus", "namespace": "stratus"}
        for o in every
        for s in o.get("subjects", [])
    )


@pytest.mark.parametrize(
    ("managed", "secrets", "words"),
    [
        (["stratus"], [], "own namespace"),
        (["Hotel"], [], "not a valid namespace"),
        (["hotel"], ["shop"], "only in managed namespaces"),
    ],
)
def test_an_install_that_makes_no_sense_is_refused_with_one_line(
    managed: list[str], secrets: list[str], words: str
) -> None:
    with pytest.raises(Invalid, match=words):
        Install.checked(managed=managed, secrets=secrets)


def test_an_unknown_part_is_refused() -> None:
    with pytest.raises(Invalid, match="unknown part"):
        rbac.rbac_part("everything", Install(), permissions.derive())
