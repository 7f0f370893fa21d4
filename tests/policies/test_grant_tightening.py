"""A grant counts only while the rules matching today would have let its creator create it
today: each way of tightening the policy ends an "Always allow" at once, through the CLI
against the lab, and the pure check covers what needs a chosen instant."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_command
from policies.evaluate import CompiledPolicy, Grant, ProposalFacts, evaluate, grant_standing
from policies.loader import Policy, SourcedRule
from policies.model import Rule

HEADER = "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: grants}\nrules:\n"
REMEMBER = """  - name: restarts
    match: {actions: [rollout-restart]}
    decision: ask
    remember: true
    max_grant: 1h
"""
LOOSE = REMEMBER + '    approvers: ["*"]\n    min_approvals: 1\n    self_approval: true\n'
TIGHTENED = {
    "two approvals": REMEMBER + "    min_approvals: 2\n",
    "other approvers": REMEMBER + '    approvers: ["cli:bob"]\n',
    "not the requester": REMEMBER + "    self_approval: false\n",
    "a new remembering two-person rule": REMEMBER
    + """  - name: hotel-needs-two
    match: {namespaces: [hotel]}
    decision: ask
    remember: true
    max_grant: 8h
    min_approvals: 2
""",
    "a new rule that always asks": REMEMBER
    + "  - name: geo-always\n    match: {names: [geo]}\n    decision: ask\n",
    "a new rule for other approvers": REMEMBER
    + """  - name: geo-for-bob
    match: {names: [geo]}
    decision: ask
    remember: true
    max_grant: 1h
    approvers: ["cli:bob"]
""",
    # The defaults are a floor under every ask rule, even one that says anyone, alone, the
    # requester included: tightening the defaults tightens the grant.
    "the defaults need two approvals": LOOSE + "defaults: {min_approvals: 2}\n",
    "the defaults name other approvers": LOOSE + 'defaults: {approvers: ["cli:bob"]}\n',
    "the defaults ban self-approval": LOOSE + "defaults: {self_approval: false}\n",
}


def stratus(*args: str, env: dict[str, str]) -> Result:
    return CliRunner().invoke(stratus_command, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def grant_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "grants.yaml").write_text(HEADER + REMEMBER)
    return {**env, "STRATUS_ACTOR": "alice", "STRATUS_POLICY_DIR": str(policies)}


@pytest.mark.parametrize("tightening", sorted(TIGHTENED))
def test_a_tightened_policy_ends_the_grant_at_once(
    grant_env: dict[str, str], tightening: str
) -> None:
    stamps = (f"restarted-at=2026-11-22T10:00:{second:02d}Z" for second in itertools.count())

    def restart(*flags: str) -> Result:
        return stratus(
            "act", "rollout-restart", "geo", next(stamps), "-n", "hotel", *flags, env=grant_env
        )

    created = restart("--yes", "--always")
    assert created.exit_code == 0, created.stderr
    remembered = restart()
    assert remembered.exit_code == 0 and "allowed: grant" in remembered.stdout
    policy_file = Path(grant_env["STRATUS_POLICY_DIR"]) / "grants.yaml"
    policy_file.write_text(HEADER + TIGHTENED[tightening])
    asked = restart()
    assert asked.exit_code == 1 and "without --yes" in asked.stderr, asked.stdout
    assert "allowed: grant" not in asked.stdout
    # The check is of today's rules, not a revocation: loosened again, the grant counts again.
    policy_file.write_text(HEADER + REMEMBER)
    again = restart()
    assert again.exit_code == 0 and "allowed: grant" in again.stdout


NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
FACTS = ProposalFacts(
    action="rollout-restart",
    namespace="hotel",
    kind="Deployment",
    name="geo",
    risk="low",
    reversible=True,
    requester="U0CAROL",
)


def grant(**overrides: object) -> Grant:
    values: dict[str, object] = {
        "id": "g1",
        "action": FACTS.action,
        "namespace": FACTS.namespace,
        "resource": FACTS.resource,
        "created_by": "U0ALICE",
        "creator_groups": ("S0SRE",),
        "requested_by": "U0BOB",
        "created_at": NOW - timedelta(hours=1),
        "expires_at": NOW + timedelta(hours=7),
    }
    values.update(overrides)
    return Grant(**values)  # type: ignore[arg-type]


def decide(*rules: Rule, held: Grant | None = None) -> str:
    policy = CompiledPolicy.build(Policy(tuple(SourcedRule(r, "x") for r in rules)))
    return evaluate(FACTS, policy, [held or grant()], NOW).source


def remembering(name: str, **values: object) -> Rule:
    return Rule(name=name, decision="ask", remember=True, **values)  # type: ignore[arg-type]


def test_the_creators_groups_from_the_answer_still_count() -> None:
    assert decide(remembering("sre", max_grant="8h", approvers=["S0SRE"])) == "grant"
    assert decide(remembering("ops", max_grant="8h", approvers=["S0OPS"])) == "rule"
    both = [remembering("sre", max_grant="8h", approvers=["S0SRE"])]
    both.append(remembering("lead", max_grant="8h", approvers=["U0LEAD"]))
    assert decide(*both) == "rule"  # the creator must satisfy every rule's approvers


def test_the_shortest_max_grant_of_the_rules_today_counts() -> None:
    long = remembering("long", max_grant="8h")
    assert decide(long) == "grant"
    assert decide(long, remembering("short", max_grant="30m")) == "rule"


def test_a_ban_on_self_approval_today_ends_a_grant_its_creator_asked_for() -> None:
    own = grant(requested_by="U0ALICE")
    assert decide(remembering("r", max_grant="8h"), held=own) == "grant"
    banned = remembering("r", max_grant="8h", self_approval=False)
    assert decide(banned, held=own) == "rule"
    assert decide(banned) == "grant"  # Alice answered Bob's request: still someone else's
    unknown = grant(requested_by=None)  # an older grant: who asked was not recorded
    assert decide(banned, held=unknown) == "rule"


def test_a_grant_never_lets_its_creator_approve_their_own_request_under_a_ban() -> None:
    banned = remembering("r", max_grant="8h", self_approval=False)
    policy = CompiledPolicy.build(Policy((SourcedRule(banned, "x"),)))
    mine = ProposalFacts(**{**FACTS.__dict__, "requester": "U0ALICE"})
    assert evaluate(mine, policy, [grant()], NOW).source == "rule"


def test_no_grant_auto_allows_an_action_that_cannot_be_undone() -> None:
    """Only an allow rule saying allow_irreversible auto-allows delete-pod: "Always allow" is
    never offered for it, and a grant for it (made before this rule, or forged past it) never
    counts — it would also cover every later pod re-created under the same name."""
    facts = ProposalFacts(
        **{
            **FACTS.__dict__,
            "action": "delete-pod",
            "kind": "Pod",
            "name": "postgres-0",
            "risk": "medium",
            "reversible": False,
        }
    )
    rule = Rule(
        name="pods",
        decision="ask",
        remember=True,
        max_grant="1h",
        match={"actions": ["delete-pod"]},
    )  # type: ignore[arg-type]
    policy = CompiledPolicy.build(Policy((SourcedRule(rule, "x"),)))
    held = grant(action="delete-pod", resource="Pod/postgres-0")
    decision = evaluate(facts, policy, [held], NOW)
    assert decision.outcome == "ask" and decision.source == "rule"
    assert not decision.remember  # no "Always allow" on its card
    assert grant_standing(held, policy, facts, NOW) == (
        "the rules in force do not allow 'Always allow'"
    )


def test_always_allow_on_an_irreversible_action_is_refused_through_the_cli(
    env: dict[str, str], tmp_path: Path
) -> None:
    policies = tmp_path / "irreversible"
    policies.mkdir()
    (policies / "pods.yaml").write_text(
        HEADER + "  - name: pods\n    match: {actions: [delete-pod]}\n    decision: ask\n"
        "    remember: true\n    max_grant: 1h\n"
    )
    run_env = {**env, "STRATUS_ACTOR": "alice", "STRATUS_POLICY_DIR": str(policies)}
    always = stratus(
        "act", "delete-pod", "pod/postgres-0", "-n", "shop", "--yes", "--always", env=run_env
    )
    assert always.exit_code != 0, always.stdout
    assert "Always allow" in always.stderr or "always" in always.stderr.lower(), always.stderr
    listed = stratus("policy", "grants", env=run_env)
    assert "grant-" not in listed.stdout, listed.stdout
