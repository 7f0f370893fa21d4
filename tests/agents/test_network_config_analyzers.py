"""The service, network-policy, node, quota, storage, config and credential analyzers on
snapshots read from the lab: faults on other services, ports and values than the bundled
scenarios use, and the look-alikes a healthy namespace has (a policy that lets its callers
through, a quota with room, a drifted key the app accepts, a cordoned node nobody waits for)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agents import snapshot as snapshots
from agents.analyzers import analyze
from agents.model import Finding
from agents.remedies import remedies_for
from tests.conftest import Lab
from tools.k8s import KubeClient
from tools.objects import ObjectRef

MINE = {"services", "network-policies", "nodes", "quota", "storage", "config", "credentials"}


def fault(lab: Lab, name: str, namespace: str, **params: Any) -> None:
    lab.control.post(f"/lab/v1/faults/{name}/inject", {"namespace": namespace, "params": params})
    lab.settle()


def findings(kube: KubeClient, namespace: str) -> list[Finding]:
    taken = snapshots.take(kube, namespace)
    return [f for f in analyze(taken) if f.analyzer in MINE]


def only(kube: KubeClient, namespace: str, mechanism: str) -> tuple[Finding, list[str]]:
    """The one finding of ``mechanism`` and the step keys of its remedies."""
    taken = snapshots.take(kube, namespace)
    found = [f for f in analyze(taken) if f.mechanism == mechanism]
    assert len(found) == 1, [f.summary for f in analyze(taken)]
    return found[0], [c.key() for c in remedies_for(found[0], taken)]


@pytest.mark.parametrize("namespace", ["hotel", "shop"])
def test_healthy_namespaces_have_no_findings(lab: Lab, kube: KubeClient, namespace: str) -> None:
    assert findings(kube, namespace) == []


# ------------------------------------------------------------------ Services


def test_target_port_on_another_service_and_port(lab: Lab, kube: KubeClient) -> None:
    fault(lab, "service-target-port", "hotel", service="rate", port=7070)
    finding, remedies = only(kube, "hotel", "service-target-port")
    assert str(finding.resource) == "Service/rate"
    assert finding.facts["suggested"] == 8084 and finding.facts["target_port"] == 7070
    assert any("7070" in e.text for e in finding.evidence)
    assert remedies == ["patch-service Service/rate [('port_index', 0), ('target_port', 8084)]"]


def test_target_port_without_last_applied_uses_what_the_pods_serve(
    lab: Lab, kube: KubeClient
) -> None:
    ref = ObjectRef("Service", "cart", "shop")
    service = kube.get(ref)
    service["metadata"]["annotations"] = {}
    service["spec"]["ports"][0]["targetPort"] = 9000
    kube.replace(service)
    lab.settle()
    finding, remedies = only(kube, "shop", "service-target-port")
    assert finding.facts["suggested"] == 8082
    assert remedies == ["patch-service Service/cart [('port_index', 0), ('target_port', 8082)]"]


def test_selector_typo_on_another_service(lab: Lab, kube: KubeClient) -> None:
    fault(lab, "service-selector", "hotel", service="profile", value="profiles")
    finding, remedies = only(kube, "hotel", "service-selector")
    assert str(finding.resource) == "Service/profile"
    assert finding.facts["suggested"] == {"app": "profile"}
    assert remedies == ["patch-service Service/profile [('selector', {'app': 'profile'})]"]


def test_a_service_for_a_workload_at_zero_replicas_is_not_a_selector_fault(
    lab: Lab, kube: KubeClient
) -> None:
    fault(lab, "scale-to-zero", "shop", deployment="cart")
    assert [f for f in findings(kube, "shop") if f.mechanism == "service-selector"] == []


def test_deleted_service_is_created_again_from_the_workload(lab: Lab, kube: KubeClient) -> None:
    fault(lab, "delete-service", "shop", service="cart")
    finding, remedies = only(kube, "shop", "service-missing")
    assert str(finding.resource) == "Service/cart"
    assert finding.facts["selector"] == {"app": "cart"}
    assert finding.facts["ports"] == [{"name": "main", "port": 8082, "target_port": 8082}]
    assert len(remedies) == 1 and remedies[0].startswith("create-service Service/cart")


def test_a_deleted_service_nobody_calls_is_not_a_finding(lab: Lab, kube: KubeClient) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "cart-debug", "namespace": "shop"},
            "spec": {"selector": {"app": "cart"}, "ports": [{"port": 9999}]},
        }
    )
    lab.settle()
    kube.delete(ObjectRef("Service", "cart-debug", "shop"))
    lab.settle()
    assert findings(kube, "shop") == []


# ------------------------------------------------------------------ NetworkPolicies


def test_a_policy_blocking_callers_of_another_service(lab: Lab, kube: KubeClient) -> None:
    fault(lab, "deny-ingress", "hotel", app="geo")
    finding, remedies = only(kube, "hotel", "network-policy-blocks-callers")
    assert str(finding.resource) == "NetworkPolicy/deny-geo"
    assert finding.facts["callers"] == ["deployment/search"]
    assert remedies == ["delete-networkpolicy NetworkPolicy/deny-geo []"]


def test_a_policy_that_lets_its_callers_through_is_healthy(lab: Lab, kube: KubeClient) -> None:
    kube.create(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "profile-from-frontend", "namespace": "hotel"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "profile"}},
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        "from": [{"podSelector": {"matchLabels": {"app": "frontend"}}}],
                        "ports": [{"port": 8081}],
                    }
                ],
            },
        }
    )
    lab.settle()
    assert findings(kube, "hotel") == []


def test_a_policy_that_blocks_one_caller_of_two_is_named(lab: Lab, kube: KubeClient) -> None:
    kube.create(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "cart-from-frontend-only", "namespace": "shop"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "cart"}},
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "frontend"}}}]}],
            },
        }
    )
    lab.settle()
    finding, _ = only(kube, "shop", "network-policy-blocks-callers")
    assert finding.facts["callers"] == ["deployment/checkout"]


# ------------------------------------------------------------------ nodes


def test_a_cordoned_node_nobody_waits_for_is_healthy(lab: Lab, kube: KubeClient) -> None:
    node = kube.get(ObjectRef("Node", "node-2"))
    node["spec"]["unschedulable"] = True
    kube.replace(node)
    lab.settle()
    assert findings(kube, "hotel") == []


def test_all_nodes_cordoned_with_another_workload_waiting(lab: Lab, kube: KubeClient) -> None:
    fault(lab, "cordon-all-nodes", "shop", deployment="cart")
    finding, remedies = only(kube, "shop", "nodes-cordoned")
    assert finding.facts["nodes"] == ["node-1", "node-2", "node-3"]
    assert "Deployment/cart" in {str(s) for s in finding.symptoms}
    assert remedies == [
        "uncordon Node/node-1 [] + uncordon Node/node-2 [] + uncordon Node/node-3 []"
    ]


def test_a_taint_on_every_node_keeps_pods_pending(lab: Lab, kube: KubeClient) -> None:
    for name in ("node-1", "node-2", "node-3"):
        node = kube.get(ObjectRef("Node", name))
        node["spec"]["taints"] = [{"key": "maintenance", "value": "yes", "effect": "NoSchedule"}]
        kube.replace(node)
    geo = kube.list("v1", "Pod", namespace="hotel", label_selector="app=geo")[0]
    kube.delete(ObjectRef("Pod", geo["metadata"]["name"], "hotel"))  # its replacement waits
    lab.settle()
    finding, remedies = only(kube, "hotel", "node-tainted")
    assert finding.confidence < 0.6  # a taint may be deliberate: never a sure cause
    assert remedies[0].startswith("remove-taint Node/node-1 [('effect', 'NoSchedule')")


# ------------------------------------------------------------------ quota


def test_a_rollout_that_fits_under_the_quota_is_healthy(lab: Lab, kube: KubeClient) -> None:
    pods = len(kube.list("v1", "Pod", namespace="hotel"))
    # hotel's rollouts replace a pod before starting its successor: a full quota is no block
    fault(lab, "resource-quota", "hotel", pods=str(pods), deployment="profile")
    assert findings(kube, "hotel") == []


def test_quota_with_room_is_healthy(lab: Lab, kube: KubeClient) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "roomy", "namespace": "hotel"},
            "spec": {"hard": {"pods": "100"}},
        }
    )
    lab.control.post("/lab/v1/faults/set-env/inject", {
        "namespace": "hotel",
        "params": {"deployment": "geo", "container": "geo", "env": "LOG_LEVEL", "value": "debug"},
    })  # fmt: skip
    lab.settle()
    assert findings(kube, "hotel") == []


def test_quota_blocking_another_rollout(lab: Lab, kube: KubeClient) -> None:
    pods = len(kube.list("v1", "Pod", namespace="shop"))
    fault(lab, "resource-quota", "shop", pods=str(pods), deployment="cart")
    finding, remedies = only(kube, "shop", "quota-exceeded")
    assert finding.facts["suggested"] == str(pods + 1)
    assert finding.facts["workloads"] == ["Deployment/cart"]
    assert remedies == [
        f"set-quota ResourceQuota/pod-limit [('resource', 'pods'), ('value', '{pods + 1}')]",
        "delete-resourcequota ResourceQuota/pod-limit []",
    ]


# ------------------------------------------------------------------ storage


def test_claim_with_another_missing_class(lab: Lab, kube: KubeClient) -> None:
    fault(
        lab,
        "pvc-storage-class",
        "shop",
        pod="postgres-0",
        claim="data-postgres-0",
        storage_class="slow-hdd",
    )
    finding, remedies = only(kube, "shop", "pvc-unbound")
    assert finding.facts["storage_class"] == "slow-hdd"
    assert finding.facts["template_class"] == "standard"
    assert remedies == [
        "delete-pvc PersistentVolumeClaim/data-postgres-0 [] + "
        "rollout-restart StatefulSet/postgres []"
    ]


# ------------------------------------------------------------------ config and credentials


def test_a_drifted_key_the_app_accepts_is_healthy(lab: Lab, kube: KubeClient) -> None:
    fault(
        lab,
        "configmap-value",
        "hotel",
        configmap="hotel-config",
        key="log-level",
        value="debug",
        deployment="frontend",
    )
    assert findings(kube, "hotel") == []


def test_a_drifted_key_the_app_rejects(lab: Lab, kube: KubeClient) -> None:
    fault(
        lab,
        "configmap-value",
        "hotel",
        configmap="hotel-config",
        key="log-level",
        value="chatty",
        deployment="search",
    )
    finding, remedies = only(kube, "hotel", "configmap-rejected-value")
    assert finding.facts["applied"] == "info" and finding.facts["value"] == "chatty"
    assert finding.facts["readers"][0] == "Deployment/search"
    assert remedies[0].startswith(
        "restore-configmap-key ConfigMap/hotel-config [('key', 'log-level')] + "
        "rollout-restart Deployment/search []"
    )


def test_credentials_revoked_on_another_database(lab: Lab, kube: KubeClient) -> None:
    fault(
        lab,
        "revoke-db-credentials",
        "hotel",
        database="mongodb-profile",
        secret="mongodb-profile-auth",
        password="another-1",
    )
    finding, remedies = only(kube, "hotel", "secret-drift-auth")
    assert str(finding.resource) == "Secret/mongodb-profile-auth"
    assert finding.facts["keys"] == ["password"] and finding.facts["side"] == "server"
    assert remedies == [
        "restore-secret-key Secret/mongodb-profile-auth [('key', 'password')] + "
        "rollout-restart Deployment/mongodb-profile []"
    ]
    shown = finding.model_dump_json()
    for value in ("profile-s3cret", "another-1"):
        assert value not in shown and base64.b64encode(value.encode()).decode() not in shown


def test_a_drifted_secret_nobody_fails_on_is_healthy(lab: Lab, kube: KubeClient) -> None:
    ref = ObjectRef("Secret", "mongodb-rate-auth", "hotel")
    secret = kube.get(ref)
    secret["data"]["password"] = base64.b64encode(b"rotated-but-unused").decode()
    kube.replace(secret)  # the database is not restarted: it still accepts the old one
    lab.settle()
    assert findings(kube, "hotel") == []
