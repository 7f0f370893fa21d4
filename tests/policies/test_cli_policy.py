"""The CLI write path goes through the policy: deny refuses, allow applies, ask asks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import stratus
from tools.k8s import KubeClient
from tools.objects import ObjectRef

POLICY = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: test}
rules:
  - name: no-user-changes
    match: {names: [user]}
    decision: deny
    description: user is frozen
  - name: configmaps-are-fine
    match: {actions: [patch-configmap-key]}
    decision: allow
  - name: restarts-can-be-remembered
    match: {actions: [rollout-restart]}
    decision: ask
    remember: true
    max_grant: 1h
  - name: services-need-two
    match: {kinds: [Service]}
    decision: ask
    min_approvals: 2
  - name: nodes-need-someone-else
    match: {kinds: [Node]}
    decision: ask
    self_approval: false
"""


@pytest.fixture
def env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The shared CLI environment, with a Slack-style actor and this file's policy."""
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "test.yaml").write_text(POLICY)
    return {**env, "STRATUS_ACTOR": "U0ALICE", "STRATUS_POLICY_DIR": str(policies)}


def test_deny_refuses_and_writes_nothing(env: dict[str, str], kube: KubeClient) -> None:
    result = stratus("act", "scale", "user", "replicas=3", "-n", "hotel", "--yes", env=env)
    assert result.returncode == 1
    assert "denied: rule no-user-changes: user is frozen" in result.stderr
    assert kube.get(ObjectRef("Deployment", "user", "hotel"))["spec"]["replicas"] == 1


def test_allow_applies_without_asking_and_says_which_rule(env: dict[str, str]) -> None:
    result = stratus(
        "act",
        "patch-configmap-key",
        "cm/hotel-config",
        "key=log-level",
        "value=debug",
        "-n",
        "hotel",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "policy: allowed: rule configmaps-are-fine" in result.stdout


def test_ask_needs_the_human_and_always_allow_creates_a_revocable_grant(
    env: dict[str, str],
) -> None:
    asked = stratus("act", "rollout-restart", "geo", "-n", "hotel", env=env)
    assert asked.returncode == 1 and "without --yes" in asked.stderr
    always = stratus("act", "rollout-restart", "geo", "-n", "hotel", "--yes", "--always", env=env)
    assert always.returncode == 0, always.stderr
    grants = stratus("policy", "grants", env=env)
    assert "rollout-restart hotel/Deployment/geo  by U0ALICE" in grants.stdout
    grant_id = grants.stdout.split()[0]
    allowed = stratus("act", "rollout-restart", "geo", "-n", "hotel", env=env)
    assert allowed.returncode == 0 and f"allowed: grant {grant_id} by U0ALICE" in allowed.stdout
    elsewhere = stratus("act", "rollout-restart", "search", "-n", "hotel", env=env)
    assert elsewhere.returncode == 1  # the grant covers geo only
    assert stratus("policy", "revoke", grant_id, env=env).returncode == 0
    revoked = stratus("act", "rollout-restart", "geo", "-n", "hotel", env=env)
    assert revoked.returncode == 1 and "without --yes" in revoked.stderr
    explained = stratus(
        "policy",
        "explain",
        "--action",
        "rollout-restart",
        "--namespace",
        "hotel",
        "--resource",
        "deployment/geo",
        env=env,
    )
    assert explained.stdout.startswith("ask: asks: rule restarts-can-be-remembered")


def test_quorum_and_self_approval_cannot_be_met_from_one_terminal(
    env: dict[str, str], kube: KubeClient
) -> None:
    two = stratus(
        "act", "patch-service", "svc/geo", "target-port=9999", "-n", "hotel", "--yes", env=env
    )
    assert two.returncode == 1 and "requires 2 approvals" in two.stderr
    own = stratus("act", "cordon", "node/node-1", "--yes", env=env)
    assert own.returncode == 1 and "someone else must approve it" in own.stderr
    assert not kube.get(ObjectRef("Node", "node-1")).get("spec", {}).get("unschedulable")


def test_undo_goes_through_the_policy_too(env: dict[str, str], tmp_path: Path) -> None:
    assert (
        stratus("act", "scale", "geo", "replicas=2", "-n", "hotel", "--yes", env=env).returncode
        == 0
    )
    (Path(env["STRATUS_POLICY_DIR"]) / "freeze.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: freeze}\nrules:\n"
        "  - name: freeze-hotel\n    match: {namespaces: [hotel]}\n    decision: deny\n"
    )
    undo = stratus("undo", "--last", "--yes", env=env)
    assert undo.returncode == 1 and "freeze-hotel" in undo.stderr
    assert "Scale deployment/geo" in stratus("undo", "--list", env=env).stdout


def test_a_broken_policy_allows_nothing(env: dict[str, str]) -> None:
    (Path(env["STRATUS_POLICY_DIR"]) / "broken.yaml").write_text("rules: [")
    result = stratus(
        "act",
        "patch-configmap-key",
        "cm/hotel-config",
        "key=a",
        "value=b",
        "-n",
        "hotel",
        "--yes",
        env=env,
    )
    assert result.returncode == 1 and "the policy does not load" in result.stderr
    assert "broken.yaml:1:" in result.stderr
