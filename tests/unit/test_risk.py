"""Risk with its reason (issue 18 §3): a pure assessment of what a plan does and what depends
on its target. The catalog's level is the floor; the assessment may only raise it."""

from __future__ import annotations

from typing import Any

import pytest

from proposals.risk import LEVELS, RiskFacts, assess, routed_by
from tools.actions import CATALOG, UNDO, Risk


def deployment(name: str, replicas: int, **labels: str) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": labels or {"app": name}},
                "spec": {"containers": [{"name": name, "image": f"{name}:1"}]},
            },
        },
    }


def service(name: str, **selector: str) -> dict[str, Any]:
    return {"kind": "Service", "metadata": {"name": name}, "spec": {"selector": selector}}


def test_scaling_to_zero_a_routed_deployment_names_the_service() -> None:
    seen = assess(
        RiskFacts(
            action="scale",
            floor="medium",
            kind="Deployment",
            name="recommendation",
            before=deployment("recommendation", 1),
            after=deployment("recommendation", 0),
            routed_by=("recommendation",),
        )
    )
    assert seen.line() == ("medium: scales to 0 a Deployment that service/recommendation routes to")


def test_scaling_to_zero_raises_a_low_floor_when_a_service_routes_there() -> None:
    facts = RiskFacts(
        action="scale",
        floor="low",
        kind="Deployment",
        name="web",
        before=deployment("web", 2),
        after=deployment("web", 0),
        routed_by=("web", "web-canary"),
    )
    seen = assess(facts)
    assert seen.level == "medium"
    assert "service/web, service/web-canary route to" in seen.reason


def test_an_undo_that_puts_back_the_diagnosed_cause_is_high_and_says_so() -> None:
    before = {"kind": "ConfigMap", "data": {"payment-provider": "mock"}}
    after = {"kind": "ConfigMap", "data": {"payment-provider": "paypal-live"}}
    seen = assess(
        RiskFacts(
            action=UNDO,
            floor="low",
            kind="ConfigMap",
            name="shop-config",
            before=before,
            after=after,
            puts_back="ConfigMap/shop-config: payment-provider is 'paypal-live'",
        )
    )
    assert seen.level == "high"
    assert seen.reason == (
        "puts back the cause found: ConfigMap/shop-config: payment-provider is 'paypal-live'"
    )


def test_an_undo_without_a_cause_names_the_fields_it_puts_back() -> None:
    before = {"kind": "ConfigMap", "data": {"payment-provider": "mock"}}
    after = {"kind": "ConfigMap", "data": {"payment-provider": "paypal-live"}}
    seen = assess(
        RiskFacts(action=UNDO, floor="low", kind="ConfigMap", name="c", before=before, after=after)
    )
    assert seen.line() == (
        "low: puts data.payment-provider of configmap/c back as before Stratus changed it"
    )


def test_a_change_names_the_container_field_and_an_irreversible_one_says_so() -> None:
    old, new = deployment("web", 1), deployment("web", 1)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "web:2"
    seen = assess(
        RiskFacts(
            action="set-image",
            floor="medium",
            kind="Deployment",
            name="web",
            before=old,
            after=new,
            reversible=False,
        )
    )
    assert seen.reason == (
        "changes spec.template.spec.containers[web].image of deployment/web, and cannot be undone"
    )


@pytest.mark.parametrize("action", sorted(CATALOG))
@pytest.mark.parametrize("floor", LEVELS)
def test_the_catalog_level_is_a_floor_never_lowered(action: str, floor: Risk) -> None:
    for before, after in [
        (deployment("a", 1), deployment("a", 0)),
        (deployment("a", 1), None),
        (None, deployment("a", 1)),
        (deployment("a", 3), deployment("a", 5)),
    ]:
        seen = assess(
            RiskFacts(
                action=action, floor=floor, kind="Deployment", name="a", before=before, after=after
            )
        )
        assert LEVELS.index(seen.level) >= LEVELS.index(floor)
        assert seen.reason


def test_services_route_to_a_workload_by_its_pod_labels() -> None:
    web = deployment("web", 1, app="web", tier="front")
    services = [
        service("web", app="web"),
        service("db", app="db"),
        service("all"),
        service("front", tier="front", app="web"),
    ]
    assert routed_by(services, web) == ("front", "web")
    assert routed_by(services, {"kind": "ConfigMap"}) == ()
    assert routed_by(services, None) == ()
