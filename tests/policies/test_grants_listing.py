"""``stratus policy grants`` says whether each grant counts under today's rules, and why not,
with the same function evaluate uses; a grant edited outside Stratus is listed as tampered,
never hidden."""

from __future__ import annotations

import itertools
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_command
from policies.evaluate import CompiledPolicy, Grant, ProposalFacts, evaluate, grant_standing
from policies.loader import Policy, SourcedRule
from policies.model import Rule

HEADER = "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: test}\nrules:\n"
REMEMBER = HEADER + (
    "  - name: restarts\n"
    "    match: {actions: [rollout-restart]}\n"
    "    decision: ask\n"
    "    remember: true\n"
    "    max_grant: 1h\n"
)


def stratus(*args: str, env: dict[str, str]) -> Result:
    return CliRunner().invoke(stratus_command, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "test.yaml").write_text(REMEMBER)
    return {
        **env,
        "STRATUS_ACTOR": "U0ALICE",
        "STRATUS_POLICY_DIR": str(policies),
        "STRATUS_HOME": str(tmp_path / "home"),
    }


def policy_file(env: dict[str, str]) -> Path:
    return Path(env["STRATUS_POLICY_DIR"]) / "test.yaml"


@pytest.fixture
def grant_id(env: dict[str, str]) -> str:
    stamps = (f"restarted-at=2026-11-22T10:00:{s:02d}Z" for s in itertools.count())
    always = stratus(
        "act", "rollout-restart", "geo", next(stamps), "-n", "hotel", "--yes", "--always", env=env
    )
    assert always.exit_code == 0, always.output
    listed = stratus("policy", "grants", env=env)
    return listed.stdout.split()[0]


def line_of(env: dict[str, str], grant_id: str, *flags: str) -> str:
    result = stratus("policy", "grants", *flags, env=env)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.startswith(grant_id)]
    assert len(lines) == 1, result.stdout
    return lines[0]


def test_a_grant_that_counts_says_so(env: dict[str, str], grant_id: str) -> None:
    line = line_of(env, grant_id)
    assert f"{grant_id}  counts " in line, line
    assert "rollout-restart hotel/Deployment/geo  by cli:U0ALICE" in line


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("    min_approvals: 2\n", "need 2 approvals"),
        ("    approvers: [cli:sre]\n", "cli:U0ALICE is not an approver"),
        ("    self_approval: false\n", "do not let the requester approve"),
    ],
)
def test_a_grant_today_s_rules_do_not_let_count_is_listed_with_the_reason(
    env: dict[str, str], grant_id: str, change: str, why: str
) -> None:
    policy_file(env).write_text(REMEMBER + change)
    line = line_of(env, grant_id)
    assert f"{grant_id}  suspended " in line and why in line, line
    assert "counts " not in line


def test_a_deny_rule_or_a_removed_rule_suspends_it(env: dict[str, str], grant_id: str) -> None:
    policy_file(env).write_text(
        REMEMBER + "  - name: freeze\n    match: {namespaces: [hotel]}\n    decision: deny\n"
    )
    line = line_of(env, grant_id)
    assert "suspended" in line and "rule freeze denies it" in line, line
    policy_file(env).write_text(
        HEADER + "  - name: other\n    match: {actions: [scale]}\n    decision: deny\n"
    )
    line = line_of(env, grant_id)
    assert "suspended" in line and "no ask rule matches it" in line, line
    policy_file(env).write_text(REMEMBER)  # loosened again: it counts again
    assert f"{grant_id}  counts " in line_of(env, grant_id)


def test_a_policy_that_does_not_load_suspends_every_grant(
    env: dict[str, str], grant_id: str
) -> None:
    policy_file(env).write_text(REMEMBER + "    bogus: 1\n")
    result = stratus("policy", "grants", env=env)
    assert result.exit_code == 0, result.output
    assert "the policy does not load" in result.stderr
    assert f"{grant_id}  suspended " in result.stdout and "does not load" in result.stdout


def test_a_tampered_grant_is_listed_as_tampered(env: dict[str, str], grant_id: str) -> None:
    with sqlite3.connect(env["STRATUS_DB"]) as db:
        db.execute(
            "UPDATE grants SET expires_at = ? WHERE id = ?",
            ("2999-01-01T00:00:00+00:00", grant_id),
        )
    line = line_of(env, grant_id)
    assert f"{grant_id}  TAMPERED " in line and "edited outside Stratus" in line, line


def test_a_revoked_grant_edited_back_to_life_is_listed_as_tampered(
    env: dict[str, str], grant_id: str
) -> None:
    assert stratus("policy", "revoke", grant_id, env=env).exit_code == 0
    with sqlite3.connect(env["STRATUS_DB"]) as db:
        db.execute(
            "UPDATE grants SET revoked_at = NULL, revoked_by = NULL WHERE id = ?", [grant_id]
        )
    line = line_of(env, grant_id)
    assert "TAMPERED" in line and "revoked" in line, line


def test_revoked_and_expired_grants_show_with_all(env: dict[str, str], grant_id: str) -> None:
    assert stratus("policy", "revoke", grant_id, env=env).exit_code == 0
    assert grant_id not in stratus("policy", "grants", env=env).stdout
    assert f"{grant_id}  revoked " in line_of(env, grant_id, "--all")


NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "rule",
    [
        Rule(name="r", decision="ask", remember=True, max_grant="8h"),
        Rule(name="r", decision="ask", remember=True, max_grant="1h"),
        Rule(name="r", decision="ask", remember=True, max_grant="8h", min_approvals=2),
        Rule(name="r", decision="ask", remember=True, max_grant="8h", approvers=["U0BOB"]),
        Rule(name="r", decision="ask", remember=True, max_grant="8h", self_approval=False),
        Rule(name="r", decision="ask"),
        Rule(name="r", decision="deny"),
        Rule(name="r", decision="allow"),
    ],
)
def test_standing_agrees_with_evaluate(rule: Rule) -> None:
    """The listing's answer is the decision's: a grant counts exactly when evaluate lets it
    allow the request."""
    grant = Grant(
        id="grant-1",
        action="scale",
        namespace="prod",
        resource="Deployment/web",
        created_by="U0ALICE",
        expires_at=NOW + timedelta(hours=8),
        created_at=NOW - timedelta(hours=2),
        requested_by="U0CAROL",
    )
    facts = ProposalFacts(
        action="scale",
        namespace="prod",
        kind="Deployment",
        name="web",
        risk="medium",
        reversible=True,
        requester="",
    )
    policy = CompiledPolicy.build(Policy((SourcedRule(rule, "x"),)))
    decided = evaluate(facts, policy, [grant], NOW)
    standing = grant_standing(grant, policy, facts, NOW)
    assert (decided.grant == grant.id) == (standing is None), (decided, standing)


def root_admin(env: dict[str, str]) -> None:
    text = policy_file(env).read_text()
    policy_file(env).write_text(
        text.replace("rules:\n", "defaults: {approvers: [cli:root]}\nrules:\n")
    )


def test_a_grant_is_revoked_from_the_terminal_only_by_its_creator_or_an_admin(
    env: dict[str, str], grant_id: str
) -> None:
    """The rule the bot's Revoke button obeys (``policies.authority``), at the terminal too."""
    root_admin(env)
    eve = stratus("policy", "revoke", grant_id, env={**env, "STRATUS_ACTOR": "eve"})
    assert eve.exit_code == 1 and "internal error" not in eve.stderr
    assert "only the grant's creator (cli:U0ALICE) or an admin may revoke it" in eve.stderr
    assert f"{grant_id}  revoked" not in line_of(env, grant_id, "--all")
    root = stratus("policy", "revoke", grant_id, env={**env, "STRATUS_ACTOR": "root"})
    assert root.exit_code == 0, root.output
    assert f"{grant_id}  revoked " in line_of(env, grant_id, "--all")


def test_the_creator_revokes_their_own_grant(env: dict[str, str], grant_id: str) -> None:
    root_admin(env)
    mine = stratus("policy", "revoke", grant_id, env=env)
    assert mine.exit_code == 0, mine.output
