"""The decisions behind what a fresh lab cluster holds, as pure functions and on an in-process
cluster without a server: aggregated roles, the API server's own endpoints, the default
StorageClass."""

from __future__ import annotations

from typing import Any

from lab.cluster_sim import Cluster
from lab.controllers.apiserver_endpoints import advertised_ip
from lab.controllers.default_storage_class import default_class
from lab.controllers.role_aggregation import aggregated_rules

_READ = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
_WRITE = {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}


def _role(name: str, labels: dict[str, str], rules: list[Any], **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "rules": rules, **extra}


def test_aggregation_takes_each_matching_rule_once_and_never_its_own() -> None:
    selector = {"clusterRoleSelectors": [{"matchLabels": {"to-view": "true"}}]}
    view = _role("view", {"to-view": "true"}, [_WRITE], aggregationRule=selector)
    roles = [
        view,
        _role("b-reads", {"to-view": "true"}, [_READ]),
        _role("a-reads-too", {"to-view": "true"}, [_READ, _WRITE]),
        _role("other", {}, [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
    ]
    # By role name (a-reads-too first), duplicates once, view's own rules not fed back.
    assert aggregated_rules(view, roles) == [_READ, _WRITE]
    expressions = {
        "clusterRoleSelectors": [
            {"matchExpressions": [{"key": "to-view", "operator": "In", "values": ["true"]}]}
        ]
    }
    # Another role selecting the same label takes view's rules as well.
    assert aggregated_rules(_role("x", {}, [], aggregationRule=expressions), roles) == [
        _READ,
        _WRITE,
    ]
    assert aggregated_rules(_role("none", {}, []), roles) == []


def test_a_fresh_cluster_has_transitive_builtin_roles() -> None:
    cluster = Cluster()
    roles = {
        r["metadata"]["name"]: r
        for r in cluster.store.list_objects("clusterroles.rbac.authorization.k8s.io")
    }
    view, edit, admin = (roles[n]["rules"] for n in ("view", "edit", "admin"))
    assert view and all(rule in edit for rule in view)
    assert all(rule in admin for rule in edit)
    assert "system:auth-delegator" in roles


def test_the_api_servers_endpoints_follow_where_it_serves() -> None:
    assert advertised_ip("127.0.0.1") == "127.0.0.1"
    assert advertised_ip("10.1.2.3") == "10.1.2.3"
    assert advertised_ip("0.0.0.0") == "127.0.0.1"
    assert advertised_ip("localhost") == "127.0.0.1"
    assert advertised_ip("::1") == "127.0.0.1"
    cluster = Cluster()
    placeholder = cluster.store.get("endpoints", "default", "kubernetes")
    assert placeholder is not None  # no server yet: the base manifest's address stays
    cluster.apiserver_endpoints.serve_at("127.0.0.1", 41234)
    endpoints = cluster.store.get("endpoints", "default", "kubernetes")
    assert endpoints is not None and endpoints["subsets"] == [
        {
            "addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"name": "https", "port": 41234, "protocol": "TCP"}],
        }
    ]
    cluster.reset()
    again = cluster.store.get("endpointslices.discovery.k8s.io", "default", "kubernetes")
    assert again is not None and again["ports"][0]["port"] == 41234


def test_the_default_class_is_the_newest_marked_one() -> None:
    def storage_class(name: str, created: str, default: bool) -> dict[str, Any]:
        annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
        return {
            "metadata": {"name": name, "creationTimestamp": created, "annotations": annotations}
        }

    assert default_class([]) is None
    assert default_class([storage_class("slow", "2026-01-01T00:00:00Z", False)]) is None
    assert (
        default_class(
            [
                storage_class("old", "2026-01-01T00:00:00Z", True),
                storage_class("new", "2026-02-01T00:00:00Z", True),
                storage_class("newest-not-default", "2026-03-01T00:00:00Z", False),
            ]
        )
        == "new"
    )
