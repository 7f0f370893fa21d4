"""Issue 18 F1(a): no grant ever covers a proposal that puts the diagnosed cause back.

Seen: the undo of a restored ConfigMap key was flagged "puts back the cause" and high, yet its
card offered "Always allow undo on ConfigMap/hotel-config"; bob clicked it, and TNR's undo of
the fix later ran under that grant with no human. The policy sees the fact and asks every time.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from policies.evaluate import CompiledPolicy, Grant, ProposalFacts, evaluate
from policies.loader import Policy, SourcedRule
from policies.model import Rule
from proposals.model import Facts

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
UNDO = ProposalFacts(
    action="undo",
    namespace="hotel",
    kind="ConfigMap",
    name="hotel-config",
    risk="high",
    reversible=True,
    requester="agent:stratus",
)
RULE = Rule(name="remember", decision="ask", remember=True, max_grant="8h")
REMEMBER = CompiledPolicy.build(Policy((SourcedRule(RULE, "x"),)))
GRANT = Grant(
    id="g1",
    action="undo",
    namespace="hotel",
    resource="ConfigMap/hotel-config",
    created_by="U0BOB",
    expires_at=NOW + timedelta(hours=1),
    created_at=NOW - timedelta(minutes=5),
)


def test_a_grant_covers_an_ordinary_undo_of_the_object() -> None:
    assert evaluate(UNDO, REMEMBER, [GRANT], NOW).source == "grant"  # the control


def test_no_grant_covers_an_undo_that_puts_the_cause_back() -> None:
    puts_back = dataclasses.replace(UNDO, puts_back=True)
    decided = evaluate(puts_back, REMEMBER, [GRANT], NOW)
    assert decided.outcome == "ask" and decided.grant is None, decided
    assert not decided.remember  # so its card offers no "Always allow"
    assert "puts back the cause found" in decided.reason


def test_the_fact_is_stored_with_the_proposal_and_read_back() -> None:
    stored = Facts.of(dataclasses.replace(UNDO, puts_back=True))
    assert stored.policy_facts().puts_back
    # A proposal stored before the fact existed dumps (and so seals) as it did.
    assert "puts_back" not in Facts.of(UNDO).model_dump()
