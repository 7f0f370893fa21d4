"""The lab behaves as a real cluster and real apps do: traffic honours egress NetworkPolicies
(DNS included), callers read their callee's address from the environment, and LimitRanges
default and refuse containers at admission."""

from __future__ import annotations

from typing import Any

from tests.conftest import Lab
from tools.k8s import KubeClient
from tools.objects import ObjectRef


def _traffic(lab: Lab, namespace: str) -> dict[str, Any]:
    report: dict[str, Any] = lab.control.get(f"/lab/v1/namespaces/{namespace}/traffic")
    return report


def _log_of(kube: KubeClient, namespace: str, app: str) -> str:
    pods = kube.list("v1", "Pod", namespace=namespace, label_selector=f"app={app}")
    return kube.read_log(namespace, pods[0]["metadata"]["name"], tail_lines=20)


def _policy(name: str, app: str, egress: list[dict[str, Any]] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": {"matchLabels": {"app": app}}, "policyTypes": ["Egress"]}
    if egress is not None:
        spec["egress"] = egress
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": spec,
    }


def _dns_rule() -> dict[str, Any]:
    return {
        "to": [
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                },
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
            }
        ],
        "ports": [{"port": 53, "protocol": "UDP"}],
    }


def test_an_egress_policy_without_dns_makes_every_lookup_time_out(
    lab: Lab, kube: KubeClient
) -> None:
    only_callees = [
        {"to": [{"podSelector": {"matchLabels": {"app": "cart"}}}], "ports": [{"port": 8082}]},
        {"to": [{"podSelector": {"matchLabels": {"app": "payment"}}}], "ports": [{"port": 8084}]},
    ]
    kube.create(_policy("checkout-egress", "checkout", only_callees))
    lab.settle()
    log = _log_of(kube, "shop", "checkout")
    assert "request to payment:8084 failed: dial tcp: lookup payment on 10.96.0.10:53" in log
    assert "i/o timeout" in log
    assert _traffic(lab, "shop")["payment"]["error_rate"] == 1.0

    # The same allow-list with DNS admitted lets checkout through: the callees were allowed.
    kube.replace(
        {
            **kube.get(ObjectRef("NetworkPolicy", "checkout-egress", "shop")),
            "spec": _policy("checkout-egress", "checkout", [*only_callees, _dns_rule()])["spec"],
        }
    )
    lab.settle()
    assert _traffic(lab, "shop")["payment"]["error_rate"] == 0.0
    assert "request to payment:8084 ok" in _log_of(kube, "shop", "checkout")


def test_egress_that_admits_dns_but_not_the_callee_drops_the_packets(
    lab: Lab, kube: KubeClient
) -> None:
    kube.create(_policy("checkout-egress", "checkout", [_dns_rule()]))
    lab.settle()
    log = _log_of(kube, "shop", "checkout")
    assert "request to cart:8082 failed: dial tcp" in log
    assert ":8082: i/o timeout" in log and "lookup" not in log.split("cart:8082 failed")[1]


def test_a_pod_no_egress_policy_selects_goes_anywhere(lab: Lab, kube: KubeClient) -> None:
    kube.create(_policy("cart-egress", "cart", []))  # locks cart down, nobody else
    lab.settle()
    assert "request to payment:8084 ok" in _log_of(kube, "shop", "checkout")


def test_a_caller_reads_its_callee_address_from_the_environment(lab: Lab, kube: KubeClient) -> None:
    lab.control.post(
        "/lab/v1/faults/set-env/inject",
        {
            "namespace": "shop",
            "params": {
                "deployment": "checkout",
                "container": "checkout",
                "env": "PAYMENT_ADDR",
                "value": "paymnet:8084",
            },
        },
    )
    lab.settle()
    log = _log_of(kube, "shop", "checkout")
    assert (
        "request to paymnet:8084 failed: dial tcp: lookup paymnet on 10.96.0.10:53: no such host"
        in log
    )
    # A fully qualified name in the variable is the same Service.
    lab.control.post(
        "/lab/v1/faults/set-env/inject",
        {
            "namespace": "shop",
            "params": {
                "deployment": "checkout",
                "container": "checkout",
                "env": "PAYMENT_ADDR",
                "value": "http://payment.shop.svc.cluster.local:8084/api",
            },
        },
    )
    lab.settle()
    assert "request to payment:8084 ok" in _log_of(kube, "shop", "checkout")


def test_a_limit_range_defaults_and_refuses_containers_as_the_limitranger_does(
    lab: Lab, kube: KubeClient
) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "defaults", "namespace": "shop"},
            "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]},
        }
    )
    lab.control.post(
        "/lab/v1/faults/s2-limitrange-max/inject",
        {
            "namespace": "shop",
            "params": {"name": "container-limits", "max": "128Mi", "deployment": "cart"},
        },
    )
    lab.settle()
    events = kube.list("v1", "Event", namespace="shop")
    refused = [e["message"] for e in events if e.get("reason") == "FailedCreate"]
    assert any(
        "is forbidden: maximum memory usage per Container is 128Mi, but limit is 256Mi" in m
        for m in refused
    ), refused
    # A pod that fits is admitted, with the default filled in where it stated nothing.
    pod = kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "fits", "namespace": "shop"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "redis:7.2",
                        "resources": {"limits": {"memory": "64Mi"}},
                    }
                ]
            },
        }
    )
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {
        "memory": "64Mi",
        "cpu": "500m",
    }


def test_a_headless_service_resolves_to_its_ready_pods_or_to_nothing(
    lab: Lab, kube: KubeClient
) -> None:
    def headless(selected: str) -> None:
        lab.control.post(
            "/lab/v1/faults/s2-headless-selector/inject",
            {
                "namespace": "shop",
                "params": {"service": "payment", "port": 8084, "value": selected},
            },
        )
        lab.settle()

    headless("payment-v2")  # selects no pod: the name resolves to nothing
    log = _log_of(kube, "shop", "checkout")
    assert (
        "request to payment:8084 failed: dial tcp: lookup payment on 10.96.0.10:53: no such host"
        in log
    )
    headless("payment")  # selects the pods: the caller reaches them on the port it dials
    assert "request to payment:8084 ok" in _log_of(kube, "shop", "checkout")
    assert _traffic(lab, "shop")["payment"]["error_rate"] == 0.0
