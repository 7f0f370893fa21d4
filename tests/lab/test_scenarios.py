"""Every bundled scenario: injected, its oracle fails; its known fix (with kubectl) passes it;
a wrong fix that harms a healthy neighbour trips the collateral-damage check."""

from __future__ import annotations

import pytest

from lab import scenarios
from lab.client import LabRequestFailed
from tests.conftest import Kubectl, Lab

ALL = scenarios.list_scenarios()


def _apply_fix(kubectl: Kubectl, scenario: scenarios.Scenario) -> None:
    for step in scenario.fix:
        kubectl.run(*step.kubectl, stdin=step.stdin, namespace=scenario.namespace)


def test_the_bundled_set_covers_the_required_faults() -> None:
    faults = {use.fault for s in ALL for use in s.faults}
    assert faults == {f.name for f in scenarios.list_faults()}
    assert any(len(s.faults) == 2 for s in ALL)
    assert sum(1 for s in ALL if s.is_noop) >= 2
    assert (
        len({s.name for s in ALL if s.faults and s.faults[0].fault == "service-target-port"}) >= 3
    )
    assert {s.app for s in ALL} == {"hotel", "shop"}


@pytest.mark.parametrize("scenario", ALL, ids=[s.name for s in ALL])
def test_inject_fails_the_oracle_and_the_known_fix_passes_it(
    lab: Lab, kubectl: Kubectl, scenario: scenarios.Scenario
) -> None:
    injected = lab.control.post(f"/lab/v1/scenarios/{scenario.name}/inject")
    assert len(injected["applied"]) >= len(scenario.faults)
    before = lab.control.get(f"/lab/v1/scenarios/{scenario.name}/check")
    if scenario.is_noop:
        assert before["passed"], before
        return
    assert not before["mitigated"], f"{scenario.name} injected but the oracle still passes"
    assert before["no_collateral_damage"], before["collateral_damage"]
    _apply_fix(kubectl, scenario)
    after = lab.control.get(f"/lab/v1/scenarios/{scenario.name}/check")
    assert after["passed"], after


WRONG_FIXES = [
    ("hotel-geo-target-port", ["scale", "deploy/profile", "--replicas=0"], "Deployment/profile"),
    ("hotel-rate-buggy-image", ["delete", "service", "user"], "Service/user"),
    (
        "shop-catalog-selector",
        ["set", "image", "deploy/cart", "cart=stratus/shop-cart:2.4"],
        "Deployment/cart",
    ),
]


@pytest.mark.parametrize(("name", "harm", "victim"), WRONG_FIXES, ids=[w[0] for w in WRONG_FIXES])
def test_a_fix_that_harms_a_neighbour_is_collateral_damage(
    lab: Lab, kubectl: Kubectl, name: str, harm: list[str], victim: str
) -> None:
    scenario = scenarios.load_scenario(name)
    lab.control.post(f"/lab/v1/scenarios/{name}/inject")
    _apply_fix(kubectl, scenario)
    kubectl.run(*harm, namespace=scenario.namespace)
    verdict = lab.control.get(f"/lab/v1/scenarios/{name}/check")
    assert not verdict["passed"]
    assert not verdict["no_collateral_damage"]
    assert any(d.startswith(victim) for d in verdict["collateral_damage"]), verdict


def test_check_before_inject_is_a_clear_error(lab: Lab) -> None:
    with pytest.raises(LabRequestFailed) as failure:
        lab.control.get("/lab/v1/scenarios/hotel-geo-target-port/check")
    assert failure.value.status == 409 and "was not injected" in str(failure.value)


def test_unknown_scenario_and_bad_fault_parameters(lab: Lab) -> None:
    with pytest.raises(LabRequestFailed) as unknown:
        lab.control.post("/lab/v1/scenarios/no-such-thing/inject")
    assert unknown.value.status == 400 and "unknown scenario" in str(unknown.value)
    with pytest.raises(LabRequestFailed) as missing:
        lab.control.post("/lab/v1/faults/scale-to-zero/inject", {"namespace": "hotel"})
    assert "needs parameter 'deployment'" in str(missing.value)
    with pytest.raises(LabRequestFailed) as gone:
        lab.control.post(
            "/lab/v1/faults/scale-to-zero/inject",
            {"namespace": "hotel", "params": {"deployment": "nope"}},
        )
    assert 'deployments.apps "nope" not found' in str(gone.value)


def test_a_single_fault_can_be_injected_with_parameters(lab: Lab, kubectl: Kubectl) -> None:
    lab.control.post(
        "/lab/v1/faults/memory-limit/inject",
        {
            "namespace": "hotel",
            "params": {"deployment": "user", "container": "user", "memory": "8Mi"},
        },
    )
    assert "OOMKilled" in kubectl.out(
        "get",
        "pods",
        "-l",
        "app=user",
        "-o",
        "jsonpath={.items[0].status.containerStatuses[0].lastState.terminated.reason}",
    )
