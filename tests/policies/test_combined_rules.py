"""Several rules matching one proposal: every constraint of every rule holds at once.

Property-based over generated policies (adding a rule never loosens a decision, the order of
the rules never matters); the issue's example through the CLI is in
``test_combined_rules_cli.py``.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.demo_commands import DEMO_POLICY
from policies.approvals import ApprovalRequest, refusal
from policies.approvers import conjunction, implies
from policies.evaluate import (
    CompiledPolicy,
    Grant,
    PolicyDecision,
    ProposalFacts,
    evaluate,
    grant_standing,
)
from policies.loader import Policy, SourcedRule, load
from policies.model import Defaults, Match, Rule
from proposals.model import Decision
from tests.conftest import REPO
from tools.actions import CATALOG

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


def may_answer(decision: PolicyDecision, facts: ProposalFacts, grant: Grant) -> bool:
    """Whether the creator of ``grant`` could give, under ``decision``, the one answer the
    grant stands for: approve this request (for the requester named in ``facts``) alone."""
    if decision.outcome != "ask" or decision.min_approvals > 1:
        return decision.outcome == "allow"
    request = ApprovalRequest(
        proposal_id="p", facts=facts, decision=decision, digest="d", created_at=NOW
    )
    if refusal(request, grant.created_by, grant.creator_groups, NOW) is not None:
        return False
    # Under a self-approval ban the creator may not have answered their own request either.
    return decision.self_approval or grant.requested_by not in (None, grant.created_by)


def loosened_only_by_remember(
    new: PolicyDecision, old: PolicyDecision, facts: ProposalFacts, held: list[Grant]
) -> bool:
    """``new`` may offer "Always allow" where ``old`` always asked, and a grant may then
    stand for an answer — but only for one its creator could have given under ``old``; who
    may approve, the quorum and the self-approval ban are at least as strict as ``old``'s."""
    if new.outcome == "allow" and new.source == "grant":
        grant = next(g for g in held if g.id == new.grant)
        return may_answer(old, facts, grant)
    if new.outcome == "ask":
        new = replace(new, remember=False, max_grant_seconds=0)
    return at_least_as_strict(new, old)


@settings(max_examples=600, deadline=None)
@given(data=st.data(), defaults=defaults_strategy, facts=facts_strategy)
def test_adding_a_rule_never_loosens_a_decision(
    data: st.DataObject, defaults: Defaults, facts: ProposalFacts
) -> None:
    """Unless the new rule is an allow that nothing stricter matches. The defaults are a
    floor, not a fallback: an ask rule added where only the defaults asked keeps their
    approvers, quorum and self-approval ban; it may only offer "Always allow" (remember)."""
    before = [data.draw(rules(f"r{i}")) for i in range(data.draw(st.integers(0, 4)))]
    added = data.draw(rules("added"))
    held = data.draw(grants(facts))
    old = evaluate(facts, build(defaults, before), held, NOW)
    new = evaluate(facts, build(defaults, [*before, added]), held, NOW)
    matched_before = build(defaults, before).matching(facts, NOW)
    fallback = not any(r.decision in ("deny", "ask") for r in matched_before)
    if fallback and added.decision == "allow":
        return
    if fallback and added.remember:
        assert loosened_only_by_remember(new, old, facts, held), (old, new)
    else:
        assert at_least_as_strict(new, old), (old, new)


@settings(max_examples=600, deadline=None)
@given(data=st.data(), defaults=defaults_strategy, facts=facts_strategy)
def test_the_defaults_are_a_floor_for_every_decision_a_human_answers(
    data: st.DataObject, defaults: Defaults, facts: ProposalFacts
) -> None:
    """Whatever the rules, a decision that asks (or a grant standing for an answer) keeps the
    defaults' approvers, quorum and self-approval ban; only an allow rule lets a write through
    without a human."""
    drawn = [data.draw(rules(f"r{i}")) for i in range(data.draw(st.integers(0, 5)))]
    held = data.draw(grants(facts))
    decision = evaluate(facts, build(defaults, drawn), held, NOW)
    floor = evaluate(facts, build(defaults, []), [], NOW)
    assert floor.source == "default" and not floor.remember
    if decision.outcome == "ask":
        assert decision.min_approvals >= defaults.min_approvals, decision
        assert defaults.self_approval or not decision.self_approval, decision
        assert loosened_only_by_remember(decision, floor, facts, held), decision
    elif decision.source == "grant":
        assert loosened_only_by_remember(decision, floor, facts, held), decision
        assert defaults.min_approvals == 1, decision


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


# The defaults the brief's example names: two SREs, never the requester.
SRE_FLOOR = Defaults(approvers=["S0SRE"], min_approvals=2, self_approval=False)
ANYONE_ALONE = Rule(
    name="anyone-alone", decision="ask", approvers=["*"], min_approvals=1, self_approval=True
)


def test_an_ask_rule_cannot_loosen_the_defaults() -> None:
    decision = evaluate(WEB, build(SRE_FLOOR, [ANYONE_ALONE]), [], NOW)
    assert decision.approvers == (("S0SRE",),)
    assert (decision.min_approvals, decision.self_approval, decision.remember) == (2, False, False)
    assert decision.rules == ("anyone-alone",)
    assert decision.reason == (
        "always asks: rule anyone-alone and the defaults require 2 approvals from S0SRE "
        "(not the requester)"
    )
    assert not may_approve(decision, "U0DEV", ())
    assert may_approve(decision, "U0BOB", ("S0SRE",))
    # The requester, an SRE, may not approve alone (nor at all).
    own = ApprovalRequest(proposal_id="p", facts=WEB, decision=decision, digest="d", created_at=NOW)
    assert refusal(own, "cli:sre", ("S0SRE",), NOW) is not None


def test_a_rule_tightens_the_defaults_and_names_them_only_when_they_add_something() -> None:
    leads = Rule(name="leads", decision="ask", approvers=["U0LEAD"], min_approvals=3)
    decision = evaluate(WEB, build(SRE_FLOOR, [leads]), [], NOW)
    assert decision.approvers == (("S0SRE",), ("U0LEAD",))  # a lead who is also an SRE
    assert (decision.min_approvals, decision.self_approval) == (3, False)
    assert decision.reason.startswith("always asks: rule leads and the defaults require 3")
    # A rule at least as strict as the defaults in every respect owes them nothing.
    strict = Rule(
        name="strict", decision="ask", approvers=["S0SRE"], min_approvals=2, self_approval=False
    )
    alone = evaluate(WEB, build(SRE_FLOOR, [strict]), [], NOW)
    assert alone.reason == (
        "always asks: rule strict requires 2 approvals from S0SRE (not the requester)"
    )
    # With nothing matching, the defaults decide, as before.
    default = evaluate(WEB, build(SRE_FLOOR, []), [], NOW)
    assert default.source == "default" and default.reason == (
        "asks: no rule matches; the default requires 2 approvals from S0SRE (not the requester)"
    )


def test_remember_is_the_one_thing_an_ask_rule_opens() -> None:
    sre = Defaults(approvers=["S0SRE"], self_approval=False)
    remembering = Rule(
        name="remember", decision="ask", remember=True, max_grant="8h", approvers=["*"]
    )
    decision = evaluate(WEB, build(sre, [remembering]), [], NOW)
    assert decision.remember and decision.max_grant_seconds == 8 * 3600
    assert decision.approvers == (("S0SRE",),) and not decision.self_approval
    assert not evaluate(WEB, build(sre, []), [], NOW).remember  # the defaults never offer it
    # A quorum in the defaults rules "Always allow" out: one person's answer is not two.
    assert not evaluate(WEB, build(SRE_FLOOR, [remembering]), [], NOW).remember


def held_grant(**values: object) -> Grant:
    fields: dict[str, object] = {
        "id": "g1",
        "action": WEB.action,
        "namespace": WEB.namespace,
        "resource": WEB.resource,
        "created_by": "U0BOB",
        "creator_groups": ("S0SRE",),
        "requested_by": "U0CAROL",
        "created_at": NOW - timedelta(hours=1),
        "expires_at": NOW + timedelta(hours=7),
    }
    fields.update(values)
    return Grant(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("defaults", "grant", "why"),
    [
        (Defaults(), held_grant(), None),
        (Defaults(approvers=["S0SRE"]), held_grant(), None),
        (
            Defaults(approvers=["S0SRE"]),
            held_grant(created_by="U0DEV", creator_groups=()),
            "U0DEV is not an approver under the rules in force",
        ),
        (Defaults(min_approvals=2), held_grant(), "the rules in force need 2 approvals"),
        (
            Defaults(self_approval=False),
            held_grant(requested_by="U0BOB"),
            "the rules in force do not let the requester approve",
        ),
        (Defaults(self_approval=False), held_grant(), None),
    ],
)
def test_a_grant_meets_the_defaults_floor_too(
    defaults: Defaults, grant: Grant, why: str | None
) -> None:
    """An ask rule that says anyone, alone, even the requester: the grant still stands only
    for an answer its creator could give under the defaults."""
    loose = Rule(
        name="loose",
        decision="ask",
        remember=True,
        max_grant="8h",
        approvers=["*"],
        min_approvals=1,
        self_approval=True,
    )
    policy = build(defaults, [loose])
    assert grant_standing(grant, policy, WEB, NOW) == why
    decision = evaluate(WEB, policy, [grant], NOW)
    assert (decision.source == "grant") == (why is None), decision


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


def test_no_shipped_policy_relied_on_an_ask_rule_replacing_the_defaults(tmp_path: Path) -> None:
    """The default policy, the examples and the demo's policy mean what they meant: no ask rule
    in them names approvers, a quorum or a self-approval looser than their defaults, so the
    floor changes none of their decisions."""
    demo, named = tmp_path / "demo", tmp_path / "default"
    demo.mkdir()
    named.mkdir()
    (demo / "demo.yaml").write_text(DEMO_POLICY)
    default = (REPO / "manifests" / "policies" / "default" / "default.yaml").read_text()
    (named / "default.yaml").write_text(default.replace("SET-ME-approver-group", "S0SRE"))
    for directory in [named, REPO / "manifests" / "policies" / "examples", demo]:
        loaded = load([directory])
        defaults = loaded.defaults
        asks = [s.rule for s in loaded.rules if s.rule.decision == "ask"]
        assert asks, directory
        for rule in asks:
            assert rule.approvers is None or implies(
                conjunction([rule.approvers]), conjunction([defaults.approvers])
            ), (directory, rule.name)
            assert (rule.min_approvals or 1) >= defaults.min_approvals, (directory, rule.name)
            assert defaults.self_approval or rule.self_approval is not True, (directory, rule)


def test_a_decision_stored_before_the_conjunction_reads_as_one_list() -> None:
    stored = {"outcome": "ask", "reason": "r", "source": "rule", "decided_at": NOW.isoformat()}
    old = Decision.model_validate({**stored, "approvers": ["S0SRE", "U0LEAD"]})
    assert old.policy_decision().approvers == (("S0SRE", "U0LEAD"),)
    assert not may_approve(old.policy_decision(), "U0BOB", ())
    assert may_approve(old.policy_decision(), "U0BOB", ("S0SRE",))
    decided = evaluate(WEB, example_policy(WEB_NEEDS_SRE), [], NOW)
    assert Decision.of(decided, NOW).policy_decision() == decided
