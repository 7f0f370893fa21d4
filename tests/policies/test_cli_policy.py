"""The CLI write path goes through the policy: deny refuses, allow applies, ask asks.
In-process through click's runner; each run is a fresh command with its own environment."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_command
from policies import served
from store.db import Store
from tests.conftest import stratus as run_stratus
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


def stratus(*args: str, env: dict[str, str]) -> Result:
    """Run ``stratus`` in this process with ``env`` as its environment. An exception that
    escapes the command (a traceback for the user) fails the test instead of being caught."""
    return CliRunner().invoke(stratus_command, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The shared CLI environment, with a Slack-style actor and this file's policy."""
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "test.yaml").write_text(POLICY)
    return {
        **env,
        "STRATUS_ACTOR": "U0ALICE",
        "STRATUS_POLICY_DIR": str(policies),
        "STRATUS_HOME": str(tmp_path / "home"),
    }


def as_user(env: dict[str, str], name: str) -> dict[str, str]:
    """The same installation, another engineer at another terminal."""
    return {**env, "STRATUS_ACTOR": name}


def test_deny_refuses_and_writes_nothing(env: dict[str, str], kube: KubeClient) -> None:
    result = stratus("act", "scale", "user", "replicas=3", "-n", "hotel", "--yes", env=env)
    assert result.exit_code == 1
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
    assert result.exit_code == 0, result.stderr
    assert "policy: allowed: rule configmaps-are-fine" in result.stdout


def test_ask_needs_the_human_and_always_allow_creates_a_revocable_grant(
    env: dict[str, str],
) -> None:
    # The restart stamp has one-second resolution, and in-process runs come faster than
    # that: each restart names its own stamp, or a second restart would be "no change".
    stamps = (f"restarted-at=2026-11-22T10:00:{second:02d}Z" for second in itertools.count())

    def restart(target: str, *flags: str) -> Result:
        return stratus(
            "act", "rollout-restart", target, next(stamps), "-n", "hotel", *flags, env=env
        )

    asked = restart("geo")
    assert asked.exit_code == 1 and "without --yes" in asked.stderr
    always = restart("geo", "--yes", "--always")
    assert always.exit_code == 0, always.stderr
    grants = stratus("policy", "grants", env=env)
    assert "rollout-restart hotel/Deployment/geo  by cli:U0ALICE" in grants.stdout
    grant_id = grants.stdout.split()[0]
    allowed = restart("geo")
    assert allowed.exit_code == 0, allowed.stderr
    assert f"allowed: grant {grant_id} by cli:U0ALICE" in allowed.stdout
    elsewhere = restart("search")
    assert elsewhere.exit_code == 1 and "without --yes" in elsewhere.stderr  # geo only
    assert stratus("policy", "revoke", grant_id, env=env).exit_code == 0
    revoked = restart("geo")
    assert revoked.exit_code == 1 and "without --yes" in revoked.stderr
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
    service = ObjectRef("Service", "geo", "hotel")
    two = stratus(
        "act", "patch-service", "svc/geo", "target-port=9999", "-n", "hotel", "--yes", env=env
    )
    assert two.exit_code == 0, two.stderr  # one approval recorded; the proposal waits
    assert "requires 2 approvals" in two.stdout and "1 of 2 approvals" in two.stdout
    assert kube.get(service)["spec"]["ports"][0]["targetPort"] == 8083
    found = re.search(r"stratus proposals approve (prop-\w+)", two.stdout)
    assert found, two.stdout
    proposal_id = found[1]
    again = stratus("proposals", "approve", proposal_id, env=env)
    assert again.exit_code == 1 and "needs 2 different approvers" in again.stderr
    assert kube.get(service)["spec"]["ports"][0]["targetPort"] == 8083
    second = stratus("proposals", "approve", proposal_id, env=as_user(env, "U0BOB"))
    assert second.exit_code == 0, second.stderr
    assert kube.get(service)["spec"]["ports"][0]["targetPort"] == 9999

    own = stratus("act", "cordon", "node/node-1", "--yes", env=env)
    assert own.exit_code == 1 and "someone else must approve it" in own.stderr
    assert not kube.get(ObjectRef("Node", "node-1")).get("spec", {}).get("unschedulable")


def test_undo_goes_through_the_policy_too(env: dict[str, str], tmp_path: Path) -> None:
    assert (
        stratus("act", "scale", "geo", "replicas=2", "-n", "hotel", "--yes", env=env).exit_code == 0
    )
    (Path(env["STRATUS_POLICY_DIR"]) / "freeze.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: freeze}\nrules:\n"
        "  - name: freeze-hotel\n    match: {namespaces: [hotel]}\n    decision: deny\n"
    )
    undo = stratus("undo", "--last", "--yes", env=env)
    assert undo.exit_code == 1 and "freeze-hotel" in undo.stderr
    assert "Scale deployment/geo" in stratus("undo", "--list", env=env).stdout


def _write_with_a_broken_policy(env: dict[str, str]) -> Result:
    (Path(env["STRATUS_POLICY_DIR"]) / "broken.yaml").write_text("rules: [")
    return stratus(
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


def test_a_broken_policy_allows_nothing(env: dict[str, str], kube: KubeClient) -> None:
    result = _write_with_a_broken_policy(env)
    assert result.exit_code != 0
    config = kube.get(ObjectRef("ConfigMap", "hotel-config", "hotel"))
    assert "a" not in (config.get("data") or {})


def test_a_broken_policy_is_one_line_naming_the_problem(env: dict[str, str]) -> None:
    result = _write_with_a_broken_policy(env)
    assert result.exit_code == 1 and "the policy does not load" in result.stderr
    assert "broken.yaml:1:" in result.stderr


def test_a_broken_policy_points_at_policy_check_not_explain(env: dict[str, str]) -> None:
    result = _write_with_a_broken_policy(env)
    # The real file, not a placeholder (issue 18 §6).
    assert "broken.yaml` lists every problem" in result.stderr, result.stderr
    assert "stratus policy check DIR" not in result.stderr
    assert "policy explain" not in result.stderr


def test_a_database_a_bot_serves_runs_every_command_under_the_bots_policy(
    env: dict[str, str], kube: KubeClient, tmp_path: Path
) -> None:
    """``stratus serve`` recorded its policy in the database (``policies.served.record`` is
    what it calls at start): a terminal naming no policy runs under it, one naming another is
    refused with both named, and edited files are said."""
    bots = Path(env["STRATUS_POLICY_DIR"])
    store = Store(env["STRATUS_DB"])
    served.record(store, bots, served_by="cli:stratus-bot")
    store.close()
    terminal = {k: v for k, v in env.items() if k != "STRATUS_POLICY_DIR"}
    denied = stratus("act", "scale", "user", "replicas=3", "-n", "hotel", "--yes", env=terminal)
    assert denied.exit_code == 1 and "rule no-user-changes" in denied.stderr
    assert kube.get(ObjectRef("Deployment", "user", "hotel"))["spec"]["replicas"] == 1
    explained = stratus(
        "policy",
        "explain",
        "--action",
        "scale",
        "--namespace",
        "hotel",
        "--resource",
        "deployment/user",
        env=terminal,
    )
    assert explained.stdout.startswith("deny: "), explained.output

    lax = tmp_path / "lax"
    lax.mkdir()
    (lax / "lax.yaml").write_text(POLICY.replace("decision: deny", "decision: allow"))
    other = {**terminal, "STRATUS_POLICY_DIR": str(lax)}
    refused = stratus("act", "scale", "user", "replicas=3", "-n", "hotel", "--yes", env=other)
    assert refused.exit_code == 1
    first = refused.stderr.splitlines()[0]
    assert str(bots) in first and str(lax) in first, refused.stderr
    assert kube.get(ObjectRef("Deployment", "user", "hotel"))["spec"]["replicas"] == 1

    (bots / "test.yaml").write_text(POLICY.replace("user is frozen", "user is still frozen"))
    edited = stratus("act", "scale", "user", "replicas=3", "-n", "hotel", "--yes", env=terminal)
    assert "changed since this database's bot recorded them" in edited.stderr
    assert "user is still frozen" in edited.stderr


def test_a_bot_slack_does_not_accept_records_no_policy(env: dict[str, str], tmp_path: Path) -> None:
    """Found by an attacker: `stratus serve` with a made-up token re-pointed the database's
    recorded policy at a looser directory, and every terminal on that database followed it.
    The policy is recorded only once Slack accepted the bot (auth.test)."""
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "policy.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: loose}\n"
        "rules:\n  - name: anything-goes\n    decision: allow\n    allow_irreversible: true\n"
    )
    result = run_stratus(
        "serve",
        "--mode",
        "http",
        "--port",
        "0",
        env={
            **env,
            "STRATUS_POLICY_DIR": str(loose),
            "SLACK_BOT_TOKEN": "xoxb-made-up",
            "SLACK_SIGNING_SECRET": "x",
            "STRATUS_SLACK_API_URL": "http://127.0.0.1:9/api/",
        },
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Slack did not accept the bot" in result.stderr
    assert "Traceback" not in result.stderr
    store = Store(Path(env["STRATUS_DB"]))
    assert served.recorded(store) is None
