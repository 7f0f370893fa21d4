"""Invariants of policy evaluation, property-based."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.evaluate import CompiledPolicy, Grant, ProposalFacts, evaluate
from policies.loader import Policy, PolicyError, SourcedRule, load
from policies.model import Match, Rule, Window
from tools.actions import CATALOG

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)  # a Monday
ACTIONS = sorted(CATALOG)
NAMESPACES = ["prod-web", "prod-db", "staging", "dev"]

facts_strategy = st.builds(
    lambda action, namespace, name, requester: ProposalFacts(
        action=action,
        namespace=namespace,
        kind=CATALOG[action].kinds[0],
        name=name,
        risk=CATALOG[action].risk,
        reversible=CATALOG[action].reversible,
        requester=requester,
    ),
    st.sampled_from(ACTIONS),
    st.sampled_from(NAMESPACES),
    st.sampled_from(["web", "db", "x"]),
    st.sampled_from(["U1", "U2"]),
)

match_strategy = st.builds(
    # A key left out matches any value (an empty list is refused).
    lambda **given: Match(**{key: value for key, value in given.items() if value}),
    actions=st.lists(st.sampled_from(ACTIONS), max_size=3, unique=True),
    namespaces=st.lists(st.sampled_from(["prod-*", "staging", "*", "d?v"]), max_size=2),
    risk=st.lists(st.sampled_from(["low", "medium", "high"]), max_size=2, unique=True),
)


@st.composite
def rules(draw: st.DrawFn, index: int) -> Rule:
    decision = draw(st.sampled_from(["deny", "ask", "allow"]))
    remember = decision == "ask" and draw(st.booleans())
    return Rule(
        name=f"r{index}",
        match=draw(match_strategy),
        decision=decision,
        remember=remember,
        max_grant="1h" if remember else None,
        min_approvals=draw(st.integers(1, 3)) if decision == "ask" else None,
        allow_irreversible=decision == "allow" and draw(st.booleans()),
    )


@st.composite
def policies(draw: st.DrawFn) -> CompiledPolicy:
    count = draw(st.integers(0, 6))
    drawn = [draw(rules(i)) for i in range(count)]
    return CompiledPolicy.build(
        Policy(tuple(SourcedRule(r, f"test.yaml:{i}") for i, r in enumerate(drawn)))
    )


def grant_for(
    facts: ProposalFacts,
    *,
    expires: timedelta = timedelta(hours=1),
    revoked: bool = False,
    created: datetime = NOW,
) -> Grant:
    return Grant(
        id="g1",
        action=facts.action,
        namespace=facts.namespace,
        resource=facts.resource,
        created_by="U9",
        expires_at=NOW + expires,
        revoked_at=NOW if revoked else None,
        created_at=created,
    )


def matching(policy: CompiledPolicy, facts: ProposalFacts) -> list[Rule]:
    return policy.matching(facts, NOW)


@settings(max_examples=300)
@given(policy=policies(), facts=facts_strategy, with_grant=st.booleans())
def test_deny_always_wins(policy: CompiledPolicy, facts: ProposalFacts, with_grant: bool) -> None:
    grants = [grant_for(facts)] if with_grant else []
    decision = evaluate(facts, policy, grants, NOW)
    if any(r.decision == "deny" for r in matching(policy, facts)):
        assert decision.outcome == "deny" and decision.source == "rule"
    else:
        assert decision.outcome != "deny"


@settings(max_examples=300)
@given(policy=policies(), facts=facts_strategy)
def test_no_grant_overrides_deny_or_always_ask(
    policy: CompiledPolicy, facts: ProposalFacts
) -> None:
    decision = evaluate(facts, policy, [grant_for(facts)], NOW)
    matched = matching(policy, facts)
    if any(r.decision == "deny" for r in matched):
        assert decision.outcome == "deny"
    elif any(r.decision == "ask" and not r.remember for r in matched):
        assert decision.outcome == "ask" and not decision.remember and decision.grant is None
    elif not facts.reversible and any(r.decision == "ask" for r in matched):
        # No grant for what cannot be undone: a person answers each time (issue 16).
        assert decision.outcome == "ask" and decision.grant is None
    elif all((r.min_approvals or 1) == 1 for r in matched if r.decision == "ask") and any(
        r.decision == "ask" for r in matched
    ):
        assert decision.outcome == "allow" and decision.source == "grant"
    elif any(r.decision == "ask" for r in matched):  # a two-person rule: one grant is not two
        assert decision.outcome == "ask" and decision.grant is None
    else:  # no rule in force lets this be remembered: the grant counts for nothing
        assert decision.source != "grant" and decision.grant is None


@settings(max_examples=200)
@given(facts=facts_strategy)
def test_no_matching_rule_means_ask(facts: ProposalFacts) -> None:
    decision = evaluate(facts, CompiledPolicy.build(Policy()), [], NOW)
    assert decision.outcome == "ask" and decision.source == "default"
    assert decision.reason.startswith("asks: no rule matches")


@settings(max_examples=300)
@given(facts=facts_strategy, other=facts_strategy)
def test_a_grant_only_matches_its_own_scope(facts: ProposalFacts, other: ProposalFacts) -> None:
    grant = grant_for(facts)
    same_scope = (other.action, other.namespace, other.resource) == (
        facts.action,
        facts.namespace,
        facts.resource,
    )
    assert grant.matches(other, NOW) is same_scope


@settings(max_examples=200)
@given(facts=facts_strategy, minutes=st.integers(-600, 0), revoked=st.booleans())
def test_expired_or_revoked_grants_never_match(
    facts: ProposalFacts, minutes: int, revoked: bool
) -> None:
    expired = grant_for(facts, expires=timedelta(minutes=minutes))
    assert not expired.matches(facts, NOW)
    assert not grant_for(facts, revoked=True).matches(facts, NOW)
    decision = evaluate(facts, CompiledPolicy.build(Policy()), [expired], NOW)
    assert decision.outcome == "ask"


@settings(max_examples=200)
@given(policy=policies(), facts=facts_strategy)
def test_irreversible_actions_are_never_auto_allowed_without_saying_so(
    policy: CompiledPolicy, facts: ProposalFacts
) -> None:
    decision = evaluate(facts, policy, [], NOW)
    if decision.outcome == "allow" and not facts.reversible:
        # Every rule the decision names (rules in force together are joined) allowed it.
        names = set(decision.rule.split(", "))
        rules = [r.rule for r in policy.policy.rules if r.rule.name in names]
        assert rules and all(rule.allow_irreversible for rule in rules)


def test_precedence_in_order() -> None:
    facts = ProposalFacts(
        action="scale",
        namespace="prod-web",
        kind="Deployment",
        name="web",
        risk="medium",
        reversible=True,
        requester="U1",
    )

    def decide(*decisions: tuple[str, bool]) -> str:
        built = [
            Rule(name=f"r{i}", decision=d, remember=m, max_grant="1h" if m else None)
            for i, (d, m) in enumerate(decisions)
        ]
        policy = CompiledPolicy.build(Policy(tuple(SourcedRule(r, "x") for r in built)))
        decision = evaluate(facts, policy, [grant_for(facts)], NOW)
        return f"{decision.outcome}/{decision.source}/{decision.remember}"

    assert (
        decide(("allow", False), ("ask", True), ("ask", False), ("deny", False))
        == "deny/rule/False"
    )
    assert decide(("allow", False), ("ask", True), ("ask", False)) == "ask/rule/False"
    assert decide(("allow", False), ("ask", True)) == "allow/grant/False"
    # A grant only counts while an ask rule with remember: true matches.
    assert decide(("allow", False)) == "allow/rule/False"
    assert decide() == "ask/default/False"


def test_reasons_name_the_rule_and_the_approvers() -> None:
    rule = Rule(
        name="prod-scaling",
        decision="ask",
        approvers=["S0SREONCALL"],
        min_approvals=2,
        self_approval=False,
        match=Match(namespaces=["prod-*"]),
    )
    policy = CompiledPolicy.build(Policy((SourcedRule(rule, "p.yaml:3"),)))
    facts = ProposalFacts(
        action="scale",
        namespace="prod-web",
        kind="Deployment",
        name="web",
        risk="medium",
        reversible=True,
        requester="U1",
    )
    decision = evaluate(facts, policy, [], NOW)
    assert decision.reason == (
        "always asks: rule prod-scaling requires 2 approvals from S0SREONCALL (not the requester)"
    )
    assert decision.rule == "prod-scaling" and decision.min_approvals == 2


def test_time_windows_match_only_inside() -> None:
    freeze = Rule(
        name="freeze",
        decision="deny",
        match=Match(window=Window(days=["sat", "sun"], timezone="Europe/Paris")),
    )
    policy = CompiledPolicy.build(Policy((SourcedRule(freeze, "x"),)))
    facts = ProposalFacts(
        action="scale",
        namespace="prod",
        kind="Deployment",
        name="web",
        risk="medium",
        reversible=True,
        requester="U1",
    )
    saturday = datetime(2026, 11, 28, 10, 0, tzinfo=UTC)
    assert evaluate(facts, policy, [], saturday).outcome == "deny"
    assert evaluate(facts, policy, [], NOW).outcome == "ask"
    night = Window(start="22:00", end="06:00")
    assert night.contains(datetime(2026, 11, 23, 23, 0, tzinfo=UTC))
    assert not night.contains(datetime(2026, 11, 23, 12, 0, tzinfo=UTC))


def test_a_grant_lives_no_longer_than_the_current_rules_max_grant() -> None:
    facts = ProposalFacts(
        action="scale",
        namespace="prod-web",
        kind="Deployment",
        name="web",
        risk="medium",
        reversible=True,
        requester="U1",
    )

    def policy(max_grant: str) -> CompiledPolicy:
        rule = Rule(name="remember", decision="ask", remember=True, max_grant=max_grant)
        return CompiledPolicy.build(Policy((SourcedRule(rule, "x"),)))

    made_an_hour_ago = grant_for(
        facts, expires=timedelta(hours=3), created=NOW - timedelta(hours=1)
    )
    assert evaluate(facts, policy("2h"), [made_an_hour_ago], NOW).source == "grant"
    cut = evaluate(facts, policy("30m"), [made_an_hour_ago], NOW)  # max_grant cut since
    assert cut.outcome == "ask" and cut.grant is None


def test_the_part_of_a_window_after_midnight_belongs_to_the_day_it_opened() -> None:
    """``{days: [fri], start: 22:00, end: 06:00}`` is Friday night: Friday 22:00 to Saturday
    06:00, not Friday 00:00-06:00 (which is Thursday's night)."""
    friday_night = Window(days=["fri"], start="22:00", end="06:00")
    friday, saturday = datetime(2026, 11, 27, tzinfo=UTC), datetime(2026, 11, 28, tzinfo=UTC)
    assert friday.strftime("%a") == "Fri"
    covered = [friday.replace(hour=22), friday.replace(hour=23, minute=59)]
    covered += [saturday, saturday.replace(hour=3), saturday.replace(hour=5, minute=59)]
    outside = [friday, friday.replace(hour=3), friday.replace(hour=21, minute=59)]
    outside += [saturday.replace(hour=6), saturday.replace(hour=22), saturday.replace(hour=23)]
    assert [m for m in covered if not friday_night.contains(m)] == []
    assert [m for m in outside if friday_night.contains(m)] == []
    # Sunday night runs into Monday, the next week's first day.
    sunday_night = Window(days=["sun"], start="23:00", end="01:00")
    monday = datetime(2026, 11, 30, tzinfo=UTC)
    assert sunday_night.contains(monday.replace(hour=0, minute=30))
    assert not sunday_night.contains(datetime(2026, 11, 29, 0, 30, tzinfo=UTC))  # Sunday 00:30


def test_a_night_window_in_a_time_zone_counts_days_there() -> None:
    """Saturday 03:00 in Paris is Saturday 02:00 UTC; the window opened on Friday in Paris."""
    paris = Window(days=["fri"], start="22:00", end="06:00", timezone="Europe/Paris")
    assert paris.contains(datetime(2026, 11, 28, 2, 0, tzinfo=UTC))  # Sat 03:00 in Paris
    assert paris.contains(datetime(2026, 11, 27, 21, 30, tzinfo=UTC))  # Fri 22:30 in Paris
    assert not paris.contains(datetime(2026, 11, 27, 2, 0, tzinfo=UTC))  # Fri 03:00 in Paris


def test_a_deny_window_across_midnight_denies_the_morning_after(tmp_path: Path) -> None:
    text = (
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: t}\nrules:\n"
        "  - name: friday-night\n    decision: deny\n"
        "    match: {window: {days: [fri], start: '22:00', end: '06:00'}}\n"
    )
    (tmp_path / "p.yaml").write_text(text)
    policy = CompiledPolicy.build(load([tmp_path]))
    facts = ProposalFacts(
        action="scale",
        namespace="prod",
        kind="Deployment",
        name="web",
        risk="medium",
        reversible=True,
        requester="U1",
    )
    assert evaluate(facts, policy, [], datetime(2026, 11, 28, 1, 0, tzinfo=UTC)).outcome == "deny"
    assert evaluate(facts, policy, [], datetime(2026, 11, 27, 1, 0, tzinfo=UTC)).outcome == "ask"


def test_no_grant_answers_an_outside_agent_and_none_is_offered_from_its_card() -> None:
    """A grant is scoped to an action and an object, not to values nor to who asks: made on
    an MCP client's card it let every client write any value there with no human."""
    rule = Rule(name="remember", decision="ask", remember=True, max_grant="2h")
    policy = CompiledPolicy.build(Policy((SourcedRule(rule, "x"),)))
    person = ProposalFacts(
        action="patch-configmap-key",
        namespace="shop",
        kind="ConfigMap",
        name="shop-config",
        risk="medium",
        reversible=True,
        requester="U1",
    )
    grant = grant_for(person)
    assert evaluate(person, policy, [grant], NOW).source == "grant"  # a person's ask: it stands
    for requester in ("mcp:claude", "mcp:other"):
        agent = dataclasses.replace(person, requester=requester)
        decided = evaluate(agent, policy, [grant], NOW)
        assert decided.outcome == "ask" and decided.grant is None
        assert not decided.remember and decided.max_grant_seconds == 0  # no "Always allow"
        assert "outside agent" in decided.reason


def test_unless_says_everything_else_from_agents_is_denied(tmp_path: Path) -> None:
    """docs/mcp.md's example, loaded from YAML: agents may only propose restarts and scales in
    staging; everything else from them — another action, another namespace, a node (which
    has no namespace) — is denied, and people are not touched by the rule."""
    (tmp_path / "agents.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: agents}\nrules:\n"
        "  - name: agents-only-restart-and-scale-in-staging\n"
        "    match: {requesters: ['mcp:*']}\n"
        "    unless: {actions: [rollout-restart, scale], namespaces: [staging]}\n"
        "    decision: deny\n"
    )
    policy = CompiledPolicy.build(load([tmp_path]))

    def decided(action: str, namespace: str, requester: str) -> str:
        kind = CATALOG[action].kinds[0]
        facts = ProposalFacts(
            action=action,
            namespace="" if kind == "Node" else namespace,
            kind=kind,
            name="x",
            risk=CATALOG[action].risk,
            reversible=CATALOG[action].reversible,
            requester=requester,
        )
        return evaluate(facts, policy, [], NOW).outcome

    assert decided("scale", "staging", "mcp:claude") == "ask"
    assert decided("rollout-restart", "staging", "mcp:claude") == "ask"
    assert decided("scale", "shop", "mcp:claude") == "deny"
    assert decided("set-image", "staging", "mcp:claude") == "deny"
    assert decided("cordon", "staging", "mcp:claude") == "deny"  # a node is in no namespace
    assert decided("set-image", "shop", "U1") == "ask"  # a person: the rule is not theirs


def test_an_empty_unless_is_refused_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: p}\nrules:\n"
        "  - name: never\n    match: {requesters: ['mcp:*']}\n    unless: {}\n"
        "    decision: deny\n"
    )
    with pytest.raises(PolicyError, match=r"p.yaml:5:.*unless: \{\} matches anything"):
        load([tmp_path])
