"""Users' own scenario packs (``--scenarios DIR``, faults in ``DIR/faults/``) and the
``settle`` step that lets a fault roll something out before its next step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab import scenarios
from tests.conftest import Lab, kubectl_for, stratus

_FAULT = """
name: rollout-then-pause
description: A bad image starts rolling out, then the rollout is paused half way.
category: bad-deploy
params:
  deployment: {description: the Deployment}
  container: {description: the container}
  image: {description: the bad image}
targets:
- {kind: Deployment, name: '{deployment}'}
steps:
- patch:
    kind: Deployment
    name: '{deployment}'
    body: {spec: {template: {spec: {containers: [{name: '{container}', image: '{image}'}]}}}}
- settle: true
- patch:
    kind: Deployment
    name: '{deployment}'
    type: merge
    body: {spec: {paused: true}}
"""

_SCENARIO = """
name: geo-paused-bad-rollout
app: hotel
namespace: hotel
description: geo's rollout of a missing tag was paused half way.
faults:
- fault: rollout-then-pause
  params: {deployment: geo, container: geo, image: 'stratus/hotel-geo:9.9'}
- fault: scale-to-zero
  params: {deployment: recommendation}
root_cause:
  category: bad-deploy
  resources: [{kind: Deployment, name: geo}, {kind: Deployment, name: recommendation}]
"""


@pytest.fixture
def env(env: dict[str, str], lab: Lab) -> dict[str, str]:
    return {**env, "STRATUS_LAB_KUBECONFIG": str(lab.kubeconfig)}


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    root = tmp_path / "pack"
    (root / "faults").mkdir(parents=True)
    (root / "faults" / "rollout-then-pause.yaml").write_text(_FAULT)
    (root / "geo-paused-bad-rollout.yaml").write_text(_SCENARIO)
    return root


def test_pack_loads_from_any_directory(pack: Path) -> None:
    (scenario,) = scenarios.list_scenarios(pack)
    assert scenario.name == "geo-paused-bad-rollout"
    names = {f.name for f in scenarios.list_faults(scenarios.fault_dirs(pack))}
    assert {"rollout-then-pause", "scale-to-zero"} <= names
    request = scenarios.scenario_request("geo-paused-bad-rollout", pack)
    assert set(request["faults"]) == {"rollout-then-pause", "scale-to-zero"}
    with pytest.raises(scenarios.ScenarioError, match="unknown fault"):
        scenarios.load_fault("rollout-then-pause")  # not in the bundled library


def test_settle_step_rolls_out_before_pausing(
    lab: Lab, pack: Path, env: dict[str, str], tmp_path: Path
) -> None:
    listed = stratus("lab", "scenarios", "--scenarios", str(pack), env=env)
    assert listed.returncode == 0, listed.stderr
    assert "geo-paused-bad-rollout" in listed.stdout
    faults = stratus("lab", "faults", "--scenarios", str(pack), env=env)
    assert "rollout-then-pause" in faults.stdout and "image-tag" in faults.stdout
    injected = stratus("lab", "inject", "geo-paused-bad-rollout", "--scenarios", str(pack), env=env)
    assert injected.returncode == 0, injected.stderr
    assert "settled" in injected.stdout
    kubectl = kubectl_for("system", lab, tmp_path)
    deployment = json.loads(kubectl.out("get", "deployment", "geo", "-o", "json"))
    assert deployment["spec"]["paused"] is True
    images = kubectl.out(
        "get",
        "rs",
        "-l",
        "app=geo",
        "-o",
        "jsonpath={.items[*].spec.template.spec.containers[0].image}",
    ).split()
    assert "stratus/hotel-geo:9.9" in images, "the rollout had not started before the pause"
    failing = stratus("lab", "check", "geo-paused-bad-rollout", "--scenarios", str(pack), env=env)
    assert failing.returncode != 0 and "FAIL" in failing.stdout
    kubectl.run("rollout", "resume", "deployment/geo")
    kubectl.run("rollout", "undo", "deployment/geo")
    kubectl.run("scale", "deployment/recommendation", "--replicas=1")
    passing = stratus("lab", "check", "geo-paused-bad-rollout", env=env)
    assert passing.returncode == 0, passing.stdout + passing.stderr


def test_single_fault_from_a_pack(
    lab: Lab, pack: Path, env: dict[str, str], tmp_path: Path
) -> None:
    result = stratus(
        "lab",
        "inject",
        "rollout-then-pause",
        "--scenarios",
        str(pack),
        "-n",
        "hotel",
        "--param",
        "deployment=rate",
        "--param",
        "container=rate",
        "--param",
        "image=stratus/hotel-rate:9.9",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    kubectl = kubectl_for("system", lab, tmp_path)
    assert kubectl.out("get", "deployment", "rate", "-o", "jsonpath={.spec.paused}") == "true"
