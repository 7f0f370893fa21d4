"""Several rules matching one proposal: every constraint of every rule holds at once.

Property-based over generated policies (adding a rule never loosens a decision, the order of
the rules never matters), plus the issue's example end to end through the CLI.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.main import stratus as stratus_command
from policies.approvals import ApprovalRequest, refusal
from policies.evaluate import (
    CompiledPolicy,
    Grant,
    PolicyDecision,
    ProposalFacts,
    evaluate,
)
from policies.loader import Policy, SourcedRule
from policies.model import Defaults, Match, Rule
from proposals.model import Decision
from tools.actions import CATALOG
from tools.k8s import KubeClient
from tools.objects import ObjectRef

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
ACTIONS = ["scale", "rollout-restart", "delete-pod", "cordon"]
USERS = ["U01", "U02", "U03"]
GROUPS = ["S0A", "S0B"]
# Everyone the approver checks can meet: each user, in each combination of groups.
PEOPLE = [
    (user, groups)
    for user in USERS
    for size in range(len(GROUPS) + 1)
    for groups in itertools.combinations(GROUPS, size)
]

facts_strategy = st.builds(
    lambda action, namespace, requester: ProposalFacts(
        action=action,
        namespace=namespace,
        kind=CATALOG[action].kinds[0],
        name="web",
        risk=CATALOG[action].risk,
        reversible=CATALOG[action].reversible,
        requester=requester,
    ),
    st.sampled_from(ACTIONS),
    st.sampled_from(["prod", "dev"]),
    st.sampled_from(USERS),
)
approver_lists = st.lists(st.sampled_from(["*", *USERS, *GROUPS]), min_size=1, max_size=3)


@st.composite
def rules(draw: st.DrawFn, name: str) -> Rule:
    decision = draw(st.sampled_from(["deny", "ask", "ask", "ask", "allow"]))
    asking = decision == "ask"
    remember = asking and draw(st.booleans())
    match: dict[str, list[str]] = {}  # a key left out matches any value
    if draw(st.booleans()):
        match["actions"] = draw(st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=2))
    if draw(st.booleans()):
        match["namespaces"] = [draw(st.sampled_from(["prod", "d*"]))]
    return Rule(
        name=name,
        match=Match(**match),  # type: ignore[arg-type]
        decision=decision,
        remember=remember,
        max_grant=draw(st.sampled_from(["30m", "2h", "8h"])) if remember else None,
        approvers=draw(st.none() | approver_lists) if asking else None,
        min_approvals=draw(st.none() | st.integers(1, 3)) if asking else None,
        self_approval=draw(st.none() | st.booleans()) if asking else None,
        allow_irreversible=decision == "allow" and draw(st.booleans()),
    )


defaults_strategy = st.builds(
    Defaults,
    approvers=approver_lists,
    min_approvals=st.integers(1, 2),
    self_approval=st.booleans(),
)


def build(defaults: Defaults, drawn: list[Rule]) -> CompiledPolicy:
    sourced = tuple(SourcedRule(r, f"p.yaml:{i}") for i, r in enumerate(drawn))
    return CompiledPolicy.build(Policy(sourced, defaults))


@st.composite
def grants(draw: st.DrawFn, facts: ProposalFacts) -> list[Grant]:
    return [
        Grant(
            id=f"g{index}",
            action=facts.action,
            namespace=facts.namespace,
            resource=facts.resource,
            created_by=draw(st.sampled_from(USERS)),
            creator_groups=tuple(draw(st.lists(st.sampled_from(GROUPS), unique=True))),
            requested_by=draw(st.sampled_from([*USERS, None])),
            created_at=NOW - timedelta(minutes=draw(st.integers(0, 600))),
            expires_at=NOW + timedelta(hours=8),
        )
        for index in range(draw(st.integers(0, 2)))
    ]


def may_approve(decision: PolicyDecision, user: str, groups: tuple[str, ...]) -> bool:
    request = ApprovalRequest(
        proposal_id="p",
        facts=ProposalFacts(
            action="scale",
            namespace="prod",
            kind="Deployment",
            name="web",
            risk="medium",
            reversible=True,
            requester="nobody-else",
        ),
        decision=decision,
        digest="d",
        created_at=NOW,
    )
    return refusal(request, user, groups, NOW) is None


def _rank(decision: PolicyDecision) -> int:
    if decision.outcome == "ask":
        return 2 if decision.remember else 3
    return {"allow": 1, "deny": 4}[decision.outcome]


def at_least_as_strict(new: PolicyDecision, old: PolicyDecision) -> bool:
    """``new`` lets nothing through that ``old`` did not: checked against every person."""
    if _rank(new) != _rank(old):
        return _rank(new) > _rank(old)
    if new.outcome != "ask":
        return True
    approvers_ok = all(
        may_approve(old, user, groups) for user, groups in PEOPLE if may_approve(new, user, groups)
    )
    grant_ok = not new.remember or new.max_grant_seconds <= old.max_grant_seconds
    return (
        approvers_ok
        and grant_ok
        and new.min_approvals >= old.min_approvals
        and (old.self_approval or not new.self_approval)
    )


@settings(max_examples=600, deadline=None)
@given(data=st.data(), defaults=defaults_strategy, facts=facts_strategy)
def test_adding_a_rule_never_loosens_a_decision(
    data: st.DataObject, defaults: Defaults, facts: ProposalFacts
) -> None:
    """Unless the new rule is an allow that nothing stricter matches, or replaces the
    defaults (nothing but allow rules matched before: the defaults are only the fallback)."""
    before = [data.draw(rules(f"r{i}")) for i in range(data.draw(st.integers(0, 4)))]
    added = data.draw(rules("added"))
    held = data.draw(grants(facts))
    old = evaluate(facts, build(defaults, before), held, NOW)
    new = evaluate(facts, build(defaults, [*before, added]), held, NOW)
    matched_before = build(defaults, before).matching(facts, NOW)
    fallback = not any(r.decision in ("deny", "ask") for r in matched_before)
    if fallback and added.decision in ("allow", "ask"):
        return
    assert at_least_as_strict(new, old), (old, new)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), defaults=defaults_strategy, facts=facts_strategy)
def test_the_order_of_the_rules_never_changes_a_decision(
    data: st.DataObject, defaults: Defaults, facts: ProposalFacts
) -> None:
    drawn = [data.draw(rules(f"r{i}")) for i in range(data.draw(st.integers(2, 5)))]
    held = data.draw(grants(facts))
    shuffled = data.draw(st.permutations(drawn))
    assert evaluate(facts, build(defaults, drawn), held, NOW) == evaluate(
        facts, build(defaults, shuffled), list(reversed(held)), NOW
    )


@settings(max_examples=300, deadline=None)
@given(data=st.data(), defaults=defaults_strategy, facts=facts_strategy)
def test_every_matching_rule_holds_at_once(
    data: st.DataObject, defaults: Defaults, facts: ProposalFacts
) -> None:
    drawn = [data.draw(rules(f"r{i}")) for i in range(data.draw(st.integers(1, 5)))]
    policy = build(defaults, drawn)
    decision = evaluate(facts, policy, [], NOW)
    asks = [r for r in policy.matching(facts, NOW) if r.decision == "ask"]
    if decision.outcome != "ask" or not asks:
        return
    assert decision.rules == tuple(sorted(r.name for r in asks))
    for rule in asks:
        alone = evaluate(facts, build(defaults, [rule]), [], NOW)
        assert at_least_as_strict(decision, alone), (rule, decision)


def example_policy(*drawn: Rule) -> CompiledPolicy:
    return build(Defaults(), list(drawn))


WEB = ProposalFacts(
    action="scale",
    namespace="prod",
    kind="Deployment",
    name="web",
    risk="medium",
    reversible=True,
    requester="cli:sre",
)
ASK_ANYONE = Rule(name="ask-anyone", match=Match(namespaces=["prod"]), decision="ask")
WEB_NEEDS_SRE = Rule(
    name="web-needs-sre",
    match=Match(names=["web"]),
    decision="ask",
    approvers=["cli:sre", "S0SRE"],
    self_approval=False,
)


def test_the_issues_example_keeps_the_approvers_and_the_self_approval_ban() -> None:
    for order in ((ASK_ANYONE, WEB_NEEDS_SRE), (WEB_NEEDS_SRE, ASK_ANYONE)):
        decision = evaluate(WEB, example_policy(*order), [], NOW)
        assert decision.approvers == (("S0SRE", "cli:sre"),)
        assert not decision.self_approval
        assert decision.rules == ("ask-anyone", "web-needs-sre")
        assert decision.reason == (
            "always asks: rules ask-anyone, web-needs-sre require 1 approval from "
            "S0SRE, cli:sre (not the requester)"
        )


def test_approver_lists_are_a_conjunction_checked_with_groups() -> None:
    leads = Rule(name="leads", decision="ask", approvers=["U0LEAD", "S0OPS"])
    decision = evaluate(WEB, example_policy(WEB_NEEDS_SRE, leads), [], NOW)
    assert decision.approvers == (("S0OPS", "U0LEAD"), ("S0SRE", "cli:sre"))
    assert "someone who is one of S0OPS, U0LEAD and also one of S0SRE, cli:sre" in (decision.reason)
    assert not may_approve(decision, "U0LEAD", ())  # a lead, but not an SRE
    assert not may_approve(decision, "U0BOB", ("S0SRE",))  # an SRE, but not ops
    assert may_approve(decision, "U0BOB", ("S0SRE", "S0OPS"))
    assert may_approve(decision, "U0LEAD", ("S0SRE",))


def test_quorum_expiry_and_remember_combine_to_the_strictest() -> None:
    short = Rule(name="short", decision="ask", remember=True, max_grant="1h", min_approvals=2)
    long = Rule(name="long", decision="ask", remember=True, max_grant="8h", min_approvals=1)
    both = evaluate(WEB, example_policy(long, short), [], NOW)
    assert (both.min_approvals, both.remember) == (2, False)  # a grant is one person's answer
    one = short.model_copy(update={"min_approvals": None})
    shortest = evaluate(WEB, example_policy(long, one), [], NOW)
    assert (shortest.min_approvals, shortest.max_grant_seconds, shortest.remember) == (
        1,
        3600,
        True,
    )
    never = Rule(name="never", decision="ask")
    with_never = evaluate(WEB, example_policy(long, never), [], NOW)
    assert not with_never.remember and with_never.reason.startswith("always asks: rules")


def test_deny_names_every_deny_rule_whatever_their_order() -> None:
    a = Rule(name="a-freeze", decision="deny", description="freeze")
    b = Rule(name="b-freeze", decision="deny")
    assert (
        evaluate(WEB, example_policy(b, a), [], NOW)
        == evaluate(WEB, example_policy(a, b), [], NOW)
        == replace(
            evaluate(WEB, example_policy(a, b), [], NOW),
            reason="denied: rules a-freeze, b-freeze (a-freeze: freeze)",
        )
    )


def test_an_irreversible_action_is_allowed_by_whichever_allow_rule_says_so() -> None:
    pod = replace(WEB, action="delete-pod", kind="Pod", reversible=False, risk="medium")
    broad = Rule(name="a-broad", decision="allow")
    pods = Rule(name="b-pods", decision="allow", allow_irreversible=True)
    for order in ((broad, pods), (pods, broad)):
        decision = evaluate(pod, example_policy(*order), [], NOW)
        assert decision.outcome == "allow" and decision.rules == ("b-pods",)
    only_broad = evaluate(pod, example_policy(broad), [], NOW)
    assert only_broad.outcome == "ask" and only_broad.source == "default"


# ---------------------------------------------------------------- the issue's example, CLI

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


def test_a_decision_stored_before_the_conjunction_reads_as_one_list() -> None:
    stored = {"outcome": "ask", "reason": "r", "source": "rule", "decided_at": NOW.isoformat()}
    old = Decision.model_validate({**stored, "approvers": ["S0SRE", "U0LEAD"]})
    assert old.policy_decision().approvers == (("S0SRE", "U0LEAD"),)
    assert not may_approve(old.policy_decision(), "U0BOB", ())
    assert may_approve(old.policy_decision(), "U0BOB", ("S0SRE",))
    decided = evaluate(WEB, example_policy(WEB_NEEDS_SRE), [], NOW)
    assert Decision.of(decided, NOW).policy_decision() == decided
