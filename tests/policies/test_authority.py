"""Who may undo and who may cancel (``policies.authority``): pure rules, facts in, refusal out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from policies.approvals import ApprovalRequest
from policies.authority import (
    Asker,
    CancelFacts,
    cancel_refusal,
    is_admin,
    may_revoke,
    undo_refusal,
)
from policies.evaluate import PolicyDecision, ProposalFacts

NOW = datetime(2025, 1, 1, 12, tzinfo=UTC)
ADMINS = ("U0CAROL",)
SRE_ASK = PolicyDecision(
    outcome="ask", reason="rule sre", source="rule", approvers=(("S0SRE",),), self_approval=False
)
ALLOWED = PolicyDecision(outcome="allow", reason="rule fine", source="rule")


def request(
    decision: PolicyDecision = SRE_ASK, *, age: float = 0, requester: str = "agent:x"
) -> ApprovalRequest:
    facts = ProposalFacts(
        action="scale",
        namespace="hotel",
        kind="Deployment",
        name="geo",
        risk="low",
        reversible=True,
        requester=requester,
    )
    return ApprovalRequest(
        proposal_id="prop-1",
        facts=facts,
        decision=decision,
        digest="d",
        created_at=NOW - timedelta(seconds=age),
    )


def test_undo_needs_an_approver_of_the_original_or_an_admin_when_nobody_was_asked() -> None:
    alice = Asker(user="U0ALICE", groups=("S0SRE",))
    dave = Asker(user="U0DAVE")
    carol = Asker(user="U0CAROL")
    assert undo_refusal(alice, original=SRE_ASK, admins=ADMINS) is None
    assert undo_refusal(dave, original=SRE_ASK, admins=ADMINS) is not None
    # An admin who is not among the approvers a human was asked from may not.
    assert undo_refusal(carol, original=SRE_ASK, admins=ADMINS) is not None
    assert undo_refusal(carol, original=ALLOWED, admins=ADMINS) is None
    assert undo_refusal(alice, original=ALLOWED, admins=ADMINS) is not None
    assert undo_refusal(carol, original=None, admins=ADMINS) is None
    assert undo_refusal(Asker(user="agent:planner"), original=None, admins=("*",)) is not None
    assert undo_refusal(Asker(user="stratus"), original=None, admins=("*",)) is not None


def test_cancel_is_an_answer_asked_from_the_incident_s_channel() -> None:
    facts = CancelFacts(
        incident_id="inc-1", requester="U0DAVE", channel="C0INC", waiting=(request(),)
    )
    alice = Asker(user="U0ALICE", groups=("S0SRE",))

    def why(asker: Asker, where: str | None = "C0INC", on: CancelFacts = facts) -> str | None:
        return cancel_refusal(asker, on, admins=ADMINS, asked_from=where, now=NOW)

    assert why(alice) is None
    assert why(alice, "C0ELSEWHERE") is not None
    assert why(Asker(user="U0DAVE")) is not None  # started it, but may not reject
    assert why(Asker(user="U0CAROL"), "C0ELSEWHERE") is None  # an admin, from anywhere
    # The requester of the waiting proposal may withdraw it, even where self-approval is off.
    own = CancelFacts(
        incident_id="inc-1",
        requester="U0ALICE",
        channel="C0INC",
        waiting=(request(requester="U0ALICE"),),
    )
    assert why(alice, on=own) is None
    # Nothing waiting: whoever started it may cancel it; nobody else (but an admin).
    idle = CancelFacts(incident_id="inc-1", requester="U0DAVE", channel="C0INC")
    assert why(Asker(user="U0DAVE"), on=idle) is None
    assert why(alice, on=idle) is not None
    # An incident with no thread (started in a terminal) is not cancelled from Slack...
    headless = CancelFacts(incident_id="inc-1", requester="U0DAVE", channel=None)
    assert why(Asker(user="U0DAVE"), on=headless) is not None
    # ...and machines never cancel through this door.
    assert why(Asker(user="agent:x"), on=idle) is not None
    # A request nobody can answer any more (expired) does not stand in the way.
    stale = CancelFacts(
        incident_id="inc-1", requester="U0DAVE", channel="C0INC", waiting=(request(age=10**6),)
    )
    assert why(Asker(user="U0DAVE"), on=stale) is None


def test_a_grant_is_revoked_by_its_creator_or_an_admin() -> None:
    assert may_revoke(Asker(user="U0ALICE"), created_by="U0ALICE", admins=ADMINS)
    assert may_revoke(Asker(user="U0CAROL"), created_by="U0ALICE", admins=ADMINS)
    assert not may_revoke(Asker(user="U0DAVE"), created_by="U0ALICE", admins=ADMINS)
    assert not may_revoke(Asker(user="agent:x"), created_by="agent:x", admins=("*",))


NOT_PEOPLE = ("S0SRE", "*", "@sre", "agent:stratus", "stratus", "", "cli:stratus-bot", "U0al")


def test_an_identity_that_is_not_a_person_is_refused_whatever_the_lists_say() -> None:
    from policies.approvals import refusal

    anyone = PolicyDecision(outcome="ask", reason="rule open", source="rule", approvers=(("*",),))
    for who in NOT_PEOPLE:
        # Named directly in every list (a group's id, '*', a handle): still not a person.
        named = PolicyDecision(
            outcome="ask", reason="rule sre", source="rule", approvers=((who or "*",),)
        )
        asker = Asker(user=who, groups=(who,))
        for decision in (anyone, named):
            assert refusal(request(decision), who, (who,), NOW) is not None, who
            assert undo_refusal(asker, original=decision, admins=(who, "*")) is not None, who
        assert not is_admin(asker, (who, "*")), who
        assert not may_revoke(asker, created_by=who, admins=(who, "*")), who
        idle = CancelFacts(incident_id="inc-1", requester=who, channel="C0INCIDENT")
        assert (
            cancel_refusal(asker, idle, admins=(who, "*"), asked_from="C0INCIDENT", now=NOW)
            is not None
        ), who


def test_slack_users_and_terminal_users_are_people() -> None:
    from policies.approvals import refusal

    for who in ("U0ALICE", "W0123ABC", "cli:alice", "cli:sre-alice"):
        asker = Asker(user=who)
        assert refusal(request(ALLOWED_ASK), who, (), NOW) is None, who
        assert is_admin(asker, ("*",)), who
        assert undo_refusal(asker, original=None, admins=(who,)) is None, who


ALLOWED_ASK = PolicyDecision(outcome="ask", reason="rule open", source="rule", approvers=(("*",),))


def test_the_requester_may_always_withdraw_their_own_request() -> None:
    from policies.approvals import refusal

    own = request(SRE_ASK, requester="U0DAVE")  # Dave is no approver; self-approval is banned
    assert refusal(own, "U0DAVE", (), NOW, choice="reject") is None
    approving = refusal(own, "U0DAVE", (), NOW, choice="approve")
    assert approving is not None and "not an approver" in approving
    alice = request(SRE_ASK, requester="U0ALICE")
    mine = refusal(alice, "U0ALICE", ("S0SRE",), NOW)
    assert mine is not None and "someone else must approve" in mine
    assert refusal(alice, "U0ALICE", ("S0SRE",), NOW, choice="reject") is None
    stranger = refusal(alice, "U0EVE", (), NOW, choice="reject")
    assert stranger is not None and "may reject" in stranger
    # Cancelling is withdrawing too: the requester of the one waiting request may cancel.
    facts = CancelFacts(
        incident_id="inc-1", requester="U0DAVE", channel="C0INCIDENT", waiting=(own,)
    )
    asker = Asker(user="U0DAVE")
    assert cancel_refusal(asker, facts, admins=ADMINS, asked_from="C0INCIDENT", now=NOW) is None


def test_a_refused_revoke_says_who_may() -> None:
    from policies.authority import revoke_refusal

    assert revoke_refusal(Asker(user="U0ALICE"), created_by="U0ALICE", admins=ADMINS) is None
    assert revoke_refusal(Asker(user="U0CAROL"), created_by="U0ALICE", admins=ADMINS) is None
    why = revoke_refusal(Asker(user="U0DAVE"), created_by="U0ALICE", admins=ADMINS)
    assert why is not None and "U0ALICE" in why and "admin" in why
    assert revoke_refusal(Asker(user="agent:x"), created_by="agent:x", admins=("*",))
    # A terminal user is a person like any other: creator or admin, nothing else.
    assert revoke_refusal(Asker(user="cli:bob"), created_by="cli:bob", admins=ADMINS) is None
    assert revoke_refusal(Asker(user="cli:eve"), created_by="cli:bob", admins=ADMINS)


def test_only_an_admin_pauses_or_resumes() -> None:
    from policies.authority import pause_refusal

    assert pause_refusal(Asker(user="U0CAROL"), admins=ADMINS) is None
    assert pause_refusal(Asker(user="U0ALICE", groups=("S0SRE",)), admins=("S0SRE",)) is None
    why = pause_refusal(Asker(user="U0DAVE"), admins=ADMINS)
    assert why is not None and "admin" in why
    assert pause_refusal(Asker(user="stratus"), admins=("*",)) is not None
    assert pause_refusal(Asker(user="cli:bob"), admins=("*",)) is None


def test_the_admins_are_the_policy_s_default_approvers() -> None:
    from policies.authority import admins
    from policies.evaluate import CompiledPolicy
    from policies.loader import Policy
    from policies.model import Defaults

    assert admins(CompiledPolicy.build(Policy())) == ("*",)
    named = CompiledPolicy.build(Policy(defaults=Defaults(approvers=["U0CAROL", "S0SRE"])))
    assert admins(named) == ("U0CAROL", "S0SRE")
