"""The pure decisions behind the s2 scenarios, on hand-built snapshots: a variable that names a
host no Service has, an egress policy that leaves out DNS, a LimitRange that refuses a
workload's pods — and, for each, the look-alike that is no fault (no finding, no action)."""

from __future__ import annotations

from typing import Any

import pytest

from agents.analyzers import _net as n
from agents.analyzers.dns import closest_service, distance, host_of, unknown_hosts
from agents.analyzers.limits import refused_by_limit_range
from agents.analyzers.netpol import dns_blocked
from agents.analyzers.services import selectors
from agents.planner.offline import plan_findings, renumbered_rollbacks
from agents.snapshot import Snapshot

Obj = dict[str, Any]


def _meta(name: str, **extra: Any) -> Obj:
    return {"name": name, "namespace": "shop", "uid": f"uid-{name}", **extra}


def _deployment(name: str, container: Obj, *, ready: int = 1, updated: int = 1) -> Obj:
    return {
        "kind": "Deployment",
        "metadata": _meta(name, labels={"app": name}),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [container]},
            },
        },
        "status": {"availableReplicas": ready, "updatedReplicas": updated, "readyReplicas": ready},
    }


def _pod(name: str, app: str, owner: str) -> Obj:
    return {
        "kind": "Pod",
        "metadata": _meta(
            name,
            labels={"app": app},
            ownerReferences=[{"kind": "ReplicaSet", "name": owner, "controller": True}],
        ),
        "spec": {"containers": [{"name": app}]},
        "status": {"phase": "Running", "podIP": "10.244.1.9"},
    }


def _replica_set(name: str, deployment: str) -> Obj:
    return {
        "kind": "ReplicaSet",
        "metadata": _meta(
            name,
            ownerReferences=[{"kind": "Deployment", "name": deployment, "controller": True}],
        ),
        "spec": {"replicas": 1},
    }


def _service(name: str) -> Obj:
    return {
        "kind": "Service",
        "metadata": _meta(name),
        "spec": {"selector": {"app": name}, "ports": [{"port": 8084, "targetPort": 8084}]},
    }


def _snapshot(objects: list[Obj], logs: dict[str, str] | None = None) -> Snapshot:
    by_kind: dict[str, list[Obj]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    return Snapshot(namespace="shop", objects=by_kind, cluster={}, logs=logs or {})


# ------------------------------------------------------------------ a host no Service has


@pytest.mark.parametrize(
    ("value", "host"),
    [
        ("paymnet:8084", "paymnet"),
        ("http://payment.shop.svc.cluster.local:8084/api", "payment"),
        ("PAYMENT", "payment"),
    ],
)
def test_the_host_a_variable_addresses(value: str, host: str) -> None:
    assert host_of(value) == host


def test_a_typo_is_close_and_another_name_is_not() -> None:
    assert distance("paymnet", "payment") == 1  # two letters swapped
    assert distance("paymetn", "payment") == 1
    assert distance("payments-v2", "payment") > 2
    services = _snapshot([_service("payment"), _service("cart")])
    assert closest_service(services, "paymnet") == "payment"
    assert closest_service(services, "billing") is None


def _checkout(value: str, *, failing: bool = True) -> Snapshot:
    line = (
        f"ERROR request to {host_of(value)}:8084 failed: dial tcp: lookup {host_of(value)} on "
        "10.96.0.10:53: no such host"
        if failing
        else "INFO request to payment:8084 ok"
    )
    container = {"name": "checkout", "env": [{"name": "PAYMENT_ADDR", "value": value}]}
    return _snapshot(
        [
            _deployment("checkout", container),
            _replica_set("checkout-1", "checkout"),
            _pod("checkout-1-a", "checkout", "checkout-1"),
            _service("payment"),
            _service("checkout"),
            _deployment("payment", {"name": "payment"}),
        ],
        {"pod/checkout-1-a/checkout": line},
    )


def test_a_variable_naming_an_unknown_host_is_the_callers_fault_with_the_close_service() -> None:
    findings = unknown_hosts(_checkout("paymnet:8084"))
    assert [(f.mechanism, str(f.resource)) for f in findings] == [
        ("env-names-unknown-host", "Deployment/checkout")
    ]
    facts = findings[0].facts
    assert (facts["variable"], facts["host"], facts["suggested"]) == (
        "PAYMENT_ADDR",
        "paymnet",
        "payment:8084",
    )
    plan = plan_findings(_checkout("paymnet:8084"), findings)
    assert plan.candidates[0].steps[0].action == "set-env"
    assert plan.candidates[0].steps[0].params["value"] == "payment:8084"


def test_a_name_far_from_every_service_is_diagnosed_without_a_guess() -> None:
    snapshot = _checkout("billing-gateway:8084")
    findings = unknown_hosts(snapshot)
    assert findings and "suggested" not in findings[0].facts
    plan = plan_findings(snapshot, findings)
    assert plan.candidates == []  # no revision had it right, no Service is close: no guess
    assert any("set PAYMENT_ADDR of container checkout" in note for note in plan.notes)


def test_a_caller_whose_lookups_succeed_has_no_finding() -> None:
    assert unknown_hosts(_checkout("payment:8084", failing=False)) == []


# ------------------------------------------------------------------ egress without DNS


def _egress(rules: list[Obj]) -> Obj:
    return {
        "kind": "NetworkPolicy",
        "metadata": _meta("checkout-egress"),
        "spec": {
            "podSelector": {"matchLabels": {"app": "checkout"}},
            "policyTypes": ["Egress"],
            "egress": rules,
        },
    }


DNS_RULE = {
    "to": [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ],
    "ports": [{"port": 53, "protocol": "UDP"}],
}
TO_PAYMENT = {
    "to": [{"podSelector": {"matchLabels": {"app": "payment"}}}],
    "ports": [{"port": 8084}],
}


def test_which_egress_rules_let_a_pod_ask_the_cluster_dns() -> None:
    assert not n.allows_dns(_egress([TO_PAYMENT]))
    assert n.allows_dns(_egress([TO_PAYMENT, DNS_RULE]))
    assert n.allows_dns(_egress([{"ports": [{"port": 53, "protocol": "UDP"}]}]))  # anywhere
    assert n.allows_dns(_egress([{"to": [{"ipBlock": {"cidr": "10.96.0.10/32"}}]}]))
    other_ns = {**DNS_RULE, "to": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}
    assert not n.allows_dns(_egress([other_ns]))


def _locked_checkout(policy: Obj) -> Snapshot:
    line = (
        "ERROR request to payment:8084 failed: dial tcp: lookup payment on 10.96.0.10:53: "
        "read udp 10.244.1.9:53211->10.96.0.10:53: i/o timeout"
    )
    return _snapshot(
        [
            _deployment("checkout", {"name": "checkout"}),
            _replica_set("checkout-1", "checkout"),
            _pod("checkout-1-a", "checkout", "checkout-1"),
            _service("payment"),
            policy,
        ],
        {"pod/checkout-1-a/checkout": line},
    )


def test_an_egress_policy_without_dns_is_found_and_one_with_it_is_not() -> None:
    findings = dns_blocked(_locked_checkout(_egress([TO_PAYMENT])))
    assert [(f.mechanism, str(f.resource)) for f in findings] == [
        ("network-policy-blocks-dns", "NetworkPolicy/checkout-egress")
    ]
    assert [str(s) for s in findings[0].symptoms] == ["Deployment/checkout"]
    assert dns_blocked(_locked_checkout(_egress([TO_PAYMENT, DNS_RULE]))) == []


# ------------------------------------------------------------------ LimitRange


def _limited(limit: str, request: str, *, short: bool = True) -> Snapshot:
    container = {
        "name": "cart",
        "resources": {"limits": {"memory": limit}, "requests": {"memory": request}},
    }
    event = {
        "kind": "Event",
        "metadata": _meta("cart-2.e1"),
        "reason": "FailedCreate",
        "type": "Warning",
        "involvedObject": {"kind": "ReplicaSet", "name": "cart-2"},
        "message": 'Error creating: pods "cart-2-x" is forbidden: maximum memory usage per '
        f"Container is 128Mi, but limit is {limit}",
    }
    limit_range = {
        "kind": "LimitRange",
        "metadata": _meta("container-limits"),
        "spec": {"limits": [{"type": "Container", "max": {"memory": "128Mi"}}]},
    }
    return _snapshot(
        [
            _deployment("cart", container, updated=0 if short else 1),
            _replica_set("cart-2", "cart"),
            event,
            limit_range,
        ]
    )


def test_a_limit_range_refusing_a_workload_is_fitted_by_the_workload() -> None:
    snapshot = _limited("256Mi", "64Mi")
    findings = refused_by_limit_range(snapshot)
    assert [(f.mechanism, str(f.resource)) for f in findings] == [
        ("limitrange-forbids-pods", "LimitRange/container-limits")
    ]
    plan = plan_findings(snapshot, findings)
    step = plan.candidates[0].steps[0]
    assert (step.action, step.kind, step.name) == ("set-resources", "Deployment", "cart")
    assert step.params == {"limits": {"memory": "128Mi"}, "container": "cart"}
    # Fitted, and undone (the app needs more than the max): what is left is a person's call.
    after = plan_findings(snapshot, findings, tried=[plan.candidates[0].key()])
    assert after.candidates == []
    assert any("change the max in limitrange/container-limits" in n for n in after.notes)


def test_a_container_that_cannot_fit_escalates_with_what_a_person_should_do() -> None:
    snapshot = _limited("256Mi", "200Mi")  # a limit of 128Mi would sit below its request
    findings = refused_by_limit_range(snapshot)
    plan = plan_findings(snapshot, findings)
    assert plan.diagnosis is not None and plan.candidates == []
    assert any(
        "no catalog action" in note and "limitrange/container-limits" in note for note in plan.notes
    ), plan.notes


def test_a_refusal_that_no_longer_holds_is_history() -> None:
    assert refused_by_limit_range(_limited("256Mi", "64Mi", short=False)) == []
    assert refused_by_limit_range(_limited("128Mi", "64Mi")) == []  # it fits now


# ------------------------------------------------------------------ a Service selecting nothing


def _headless_geo(selector_value: str, *, failing: bool = True) -> Snapshot:
    service = {
        "kind": "Service",
        "metadata": _meta("geo"),
        "spec": {
            "clusterIP": "None",
            "selector": {"app": selector_value},
            "ports": [{"name": "main", "port": 8083, "targetPort": 8083}],
        },
    }
    geo = _deployment("geo", {"name": "geo", "ports": [{"name": "main", "containerPort": 8083}]})
    line = (
        "ERROR request to geo:8083 failed: dial tcp: lookup geo on 10.96.0.10:53: no such host"
        if failing
        else "INFO request to geo:8083 ok"
    )
    return _snapshot(
        [
            service,
            geo,
            _deployment("search", {"name": "search"}),
            _replica_set("search-1", "search"),
            _pod("search-1-a", "search", "search-1"),
        ],
        {"pod/search-1-a/search": line},
    )


def test_a_headless_name_that_resolves_to_nothing_points_at_the_workload_named_like_it() -> None:
    findings = [
        f for f in selectors(_headless_geo("geo-canary")) if f.mechanism == "service-selector"
    ]
    assert [str(f.resource) for f in findings] == ["Service/geo"]
    assert findings[0].facts["suggested"] == {"app": "geo"}
    # Nobody failing and no drift from a last-applied selector: an odd Service, not a fault.
    assert selectors(_headless_geo("geo-canary", failing=False)) == []


# ------------------------------------------------------------------ after an attempt


def _rolled_back_and_undone() -> Snapshot:
    """rate rolled back to revision 1 (its ReplicaSet became revision 3), then that rollback
    undone (the bad ReplicaSet became revision 4): revisions 3 and 4, current 4."""
    rate = _deployment("rate", {"name": "rate"})
    rate["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "4"}

    def revision(name: str, number: int) -> Obj:
        rs = _replica_set(name, "rate")
        rs["metadata"]["ownerReferences"][0]["uid"] = rate["metadata"]["uid"]
        rs["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": str(number)}
        rs["spec"]["template"] = rate["spec"]["template"]
        return rs

    return _snapshot([rate, revision("rate-good", 3), revision("rate-bad", 4)])


def test_a_rollback_renumbered_by_its_own_undo_is_known_as_the_same_template() -> None:
    snapshot = _rolled_back_and_undone()
    tried = ["rollout-undo Deployment/rate [('to_revision', 1)]"]
    assert renumbered_rollbacks(snapshot, tried) == {
        "rollout-undo Deployment/rate [('to_revision', 3)]"
    }
    # A tried revision that still exists was not renumbered: another revision is another idea.
    assert (
        renumbered_rollbacks(snapshot, ["rollout-undo Deployment/rate [('to_revision', 3)]"])
        == set()
    )
    assert renumbered_rollbacks(snapshot, ["rollout-undo Deployment/rate []"]) == set()
