"""Field ownership as pure functions: field sets, their ``fieldsV1`` form, conflicts and
pruning (dict in, dict out; the HTTP behaviour is in test_server_side_apply.py)."""

from __future__ import annotations

from typing import Any

import pytest

from lab.cluster import fieldsets, managed_fields
from lab.cluster.errors import ApiError


def _deployment(replicas: int = 2, image: str = "nginx:1.25", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web", **labels}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "spec": {
                    "containers": [
                        {"name": "web", "image": image, "ports": [{"containerPort": 80}]}
                    ],
                    "tolerations": [{"key": "a"}],
                }
            },
        },
    }


def _apply(live: dict[str, Any] | None, config: dict[str, Any], manager: str, **kw: Any) -> Any:
    return managed_fields.apply(
        live,
        config,
        manager=manager,
        force=kw.get("force", False),
        api_version="apps/v1",
        now="2026-01-01T00:00:00Z",
        kind="Deployment",
    )


def test_applied_set_owns_leaves_list_items_and_atomic_values() -> None:
    paths = fieldsets.applied_set(_deployment(), "Deployment")
    container = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"web"}')
    assert container in paths
    assert (*container, "f:ports", 'k:{"containerPort":80,"protocol":"TCP"}') in paths
    assert ("f:spec", "f:selector") in paths  # a label selector is atomic
    assert ("f:spec", "f:template", "f:spec", "f:tolerations") in paths  # so is this list
    assert ("f:metadata", "f:name") not in paths  # identity is nobody's
    assert fieldsets.from_fields_v1(fieldsets.to_fields_v1(paths)) == paths


def test_paths_print_as_the_server_prints_them() -> None:
    path = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"web"}', "f:image")
    assert fieldsets.describe(path) == '.spec.template.spec.containers[name="web"].image'
    port = ("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}')
    assert fieldsets.describe(port) == '.spec.ports[port=80,protocol="TCP"]'
    assert fieldsets.describe(("f:metadata", "f:finalizers", 'v:"x"')) == (
        '.metadata.finalizers[="x"]'
    )


def test_a_changed_field_of_another_applier_conflicts_unless_forced() -> None:
    first = _apply(None, _deployment(), "a")
    with pytest.raises(ApiError) as refused:
        _apply(first, _deployment(replicas=3, image="nginx:1.26"), "b")
    assert refused.value.code == 409
    assert refused.value.message == (
        'Apply failed with 2 conflicts: conflicts with "a":\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="web"].image'
    )
    forced = _apply(first, _deployment(replicas=3, image="nginx:1.26"), "b", force=True)
    owners = {e["manager"]: e["fieldsV1"] for e in forced["metadata"]["managedFields"]}
    assert "f:replicas" not in owners["a"]["f:spec"]
    assert "f:replicas" in owners["b"]["f:spec"]


def test_what_the_applier_drops_goes_unless_someone_else_owns_it() -> None:
    first = _apply(None, _deployment(tier="web", team="x"), "a")
    shared = _apply(first, {**_deployment(team="x")}, "b")
    after = _apply(shared, _deployment(), "a")
    assert after["metadata"]["labels"] == {"app": "web", "team": "x"}


def test_an_update_takes_the_fields_it_changes_from_their_owners() -> None:
    first = _apply(None, _deployment(), "a")
    scaled = {**first, "spec": {**first["spec"], "replicas": 5}}
    entries = managed_fields.record_update(
        first, scaled, manager="hpa", api_version="apps/v1", now="t", kind="Deployment"
    )
    owners = {e["manager"]: e["fieldsV1"] for e in entries}
    assert owners["hpa"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in owners["a"]["f:spec"]
