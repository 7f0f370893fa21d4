"""Several rules matching one proposal, through the CLI: the issue's example and the
defaults' floor, explained and enforced on a terminal against the lab."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_command
from tools.k8s import KubeClient
from tools.objects import ObjectRef

EXAMPLE = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: example}
rules:
  - name: ask-anyone
    match: {namespaces: [hotel]}
    decision: ask
  - name: geo-needs-sre
    match: {names: [geo]}
    decision: ask
    approvers: ["cli:sre"]
    self_approval: false
"""


def stratus(*args: str, env: dict[str, str]) -> Result:
    return CliRunner().invoke(stratus_command, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def example_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "example.yaml").write_text(EXAMPLE)
    return {**env, "STRATUS_ACTOR": "sre", "STRATUS_POLICY_DIR": str(policies)}


def test_the_issues_example_through_the_cli(example_env: dict[str, str], kube: KubeClient) -> None:
    explained = stratus(
        "policy",
        "explain",
        "--action",
        "scale",
        "--namespace",
        "hotel",
        "--resource",
        "deployment/geo",
        env=example_env,
    )
    assert explained.exit_code == 0, explained.stderr
    assert "approvers: cli:sre;" in explained.stdout
    assert "requester may approve: no" in explained.stdout
    assert "rules ask-anyone, geo-needs-sre" in explained.stdout

    own = stratus("act", "scale", "geo", "replicas=3", "-n", "hotel", "--yes", env=example_env)
    assert own.exit_code == 1 and "someone else must approve it" in own.stderr
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 1


FLOOR = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: floor}
defaults:
  approvers: ["cli:sre", "cli:ops"]
  min_approvals: 2
  self_approval: false
rules:
  - name: geo-anyone-alone
    match: {names: [geo]}
    decision: ask
    approvers: ["*"]
    min_approvals: 1
    self_approval: true
"""


def test_the_defaults_floor_through_the_cli(
    env: dict[str, str], tmp_path: Path, kube: KubeClient
) -> None:
    policies = tmp_path / "floor"
    policies.mkdir()
    (policies / "floor.yaml").write_text(FLOOR)
    floor_env = {**env, "STRATUS_ACTOR": "sre", "STRATUS_POLICY_DIR": str(policies)}
    explained = stratus(
        "policy",
        "explain",
        "--action",
        "scale",
        "--namespace",
        "hotel",
        "--resource",
        "deployment/geo",
        env=floor_env,
    )
    assert explained.exit_code == 0, explained.stderr
    assert explained.stdout.startswith(
        "ask: always asks: rule geo-anyone-alone and the defaults require 2 approvals from "
        "cli:ops, cli:sre (not the requester)\n"
    ), explained.stdout
    assert (
        "approvers: cli:ops, cli:sre; min approvals: 2; requester may approve: no; "
        "'Always allow': no" in explained.stdout
    )
    own = stratus("act", "scale", "geo", "replicas=3", "-n", "hotel", "--yes", env=floor_env)
    assert own.exit_code == 1 and "someone else must approve it" in own.stderr, own.stdout
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 1
    stranger = stratus(
        "act",
        "scale",
        "geo",
        "replicas=3",
        "-n",
        "hotel",
        "--yes",
        env={**floor_env, "STRATUS_ACTOR": "dev"},
    )
    assert stranger.exit_code == 1 and "not an approver" in stranger.stderr, stranger.stdout
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 1
