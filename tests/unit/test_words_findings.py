"""An outside attacker's wording findings on issue 18 (§4, §5, §6), as pure words: the high-risk
dialog of an undo says its effect (and that it puts the cause back), not the original intent;
the summary's Undos lines say the effect; ids are written as handles where the handle is
known; an undone card keeps the time its write ran."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from bot import blocks as b
from bot import cards
from bot.summary import summary_blocks
from bot.text import error_words, thread_words, undo_words
from incidents.model import Incident, IncidentState
from proposals.model import Decision, Facts, PlanSnapshot, Proposal, ProposalState, Target, Vote

P = ProposalState
NOW = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
INTENT = "Restore key payment-provider of configmap/payment-config from 'paypal-live' to 'mock'"


def configmap(provider: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "payment-config", "namespace": "shop"},
        "data": {"payment-provider": provider},
    }


def proposal(
    pid: str,
    *,
    undo: bool = False,
    state: ProposalState = P.AWAITING_APPROVAL,
    risk: str = "high",
    reason: str = "asks: rule high-risk requires 1 approval from S0SRE",
    votes: list[Vote] | None = None,
    puts_back: str = "",
) -> Proposal:
    facts = Facts(
        action="restore-configmap-key",
        namespace="shop",
        kind="ConfigMap",
        name="payment-config",
        risk=risk,
        reversible=True,
        requester="agent:stratus",
    )
    # The write set mock over paypal-live; its undo writes paypal-live over mock.
    before, after = (configmap("mock"), configmap("paypal-live"))
    if not undo:
        before, after = after, before
    return Proposal(
        id=pid,
        incident_id="inc-0123456789",
        action="restore-configmap-key",
        target=Target(kind="ConfigMap", name="payment-config", namespace="shop"),
        requester="agent:stratus",
        facts=facts,
        plan=PlanSnapshot(operation="replace", before=before, after=after, diff="", digest="d"),
        intent=("Undo: " if undo else "") + INTENT,
        risk=risk,
        reversible=True,
        decision=Decision(
            outcome="ask", reason=reason, source="rule", min_approvals=1, decided_at=NOW
        ),
        votes=votes or [],
        state=state,
        created_at=NOW,
        updated_at=NOW + timedelta(minutes=30),
        expires_at=NOW + timedelta(minutes=30),
        undo_entry="undo-1" if undo else None,
        puts_back=puts_back,
    )


def incident() -> Incident:
    return Incident(
        id="inc-0123456789",
        namespace="shop",
        requester="U0ALICE",
        state=IncidentState.RESOLVED,
        created_at=NOW,
        updated_at=NOW,
    )


def rendered(blocks: list[Any]) -> str:
    return json.dumps(b.render(blocks))


def confirm_text(card: list[Any]) -> str:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("confirm"), dict) and "title" in node["confirm"]:
                found.append(node["confirm"]["text"]["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(b.render(card))
    assert found, "a high-risk card asks to confirm"
    return found[0]


# ---------------------------------------------------------------------- F3: the effect


def test_the_high_risk_dialog_of_an_undo_says_what_undoing_does_and_what_it_puts_back() -> None:
    undo = proposal("prop-u", undo=True, puts_back="payment-provider set to paypal-live")
    said = confirm_text(cards.proposal_card(undo, incident=None, telemetry=None))
    assert "back to paypal-live" in said, said
    assert "Undo:" not in said and "to 'mock'" not in said, said
    assert "puts back the cause found" in said and "paypal-live" in said, said
    assert len(said) <= 300, "Slack's confirm dialog holds 300 characters"


def test_the_high_risk_dialog_of_a_write_still_says_its_intent() -> None:
    said = confirm_text(cards.proposal_card(proposal("prop-w"), incident=None, telemetry=None))
    assert "from 'paypal-live' to 'mock'" in said and "configmap/payment-config" in said, said


def test_the_summary_undos_lines_say_the_effect() -> None:
    write = proposal("prop-w", state=P.UNDONE)
    undo = proposal("prop-u", undo=True, state=P.EXECUTED)
    said = rendered(summary_blocks(incident(), [write, undo], []))
    undos = said[said.index("Undos") :]
    assert "back to paypal-live" in undos and "Undo:" not in undos, undos


# ---------------------------------------------------------------------- F6: names, not ids

HANDLES = {"S0SRE": "sre", "U0ALICE": "alice", "U0BOB": "bob", "U0CAROL": "carol"}


def test_the_summary_names_the_approvers_of_a_rejected_step_by_handle() -> None:
    rejected = proposal("prop-w", state=P.REJECTED)
    said = rendered(summary_blocks(incident(), [rejected], [], HANDLES))
    assert "requires 1 approval from @sre" in said and "S0SRE" not in said, said


def test_the_timeline_names_who_undid_and_who_asked_by_handle() -> None:
    from bot.summary import timeline
    from incidents.repository import IncidentEnvelope, IncidentEvent, IncidentEventType

    def note(message: str) -> IncidentEnvelope:
        event = IncidentEvent(
            type=IncidentEventType.STATE_CHANGED,
            incident_id="inc-0123456789",
            namespace="shop",
            state="resolved",
            actor="U0BOB",
            message=message,
        )
        return IncidentEnvelope(seq=1, at="2026-01-01T10:52:00+00:00", event=event)

    lines = timeline([note("fix undone by U0BOB at 10:52 UTC; incident re-opened")], HANDLES)
    assert "fix undone by @bob at 10:52 UTC" in lines[0], lines


def test_refusals_name_people_and_groups_by_handle_and_keep_unknown_ids() -> None:
    from bot import text
    from proposals.errors import AnswerRefused

    why = "only someone who is S0SRE and also U0CAROL may undo this (U0NEW is neither)"
    for said in (error_words.undo_refused(why, HANDLES), undo_words.force_refused(why, HANDLES)):
        assert "@sre and also @carol" in said and "U0NEW" in said, said
    refused = AnswerRefused(
        "U0ALICE may not approve step 2 (scale s2): requires S0SRE; approve once instead"
    )
    said = error_words.refused_error(refused, HANDLES)
    assert "@alice may not approve step 2" in said and "requires @sre" in said, said
    assert text.slack_ids(f"at 10:52 UTC {why}") == ["S0SRE", "U0CAROL", "U0NEW"]
    assert thread_words.state_note("U0DAVE asked to look again", {"U0DAVE": "dave"}).startswith(
        "`@dave asked"
    )


# ---------------------------------------------------------------------- F7: the terminal


def test_a_missing_choice_option_lists_its_choices_on_one_line_without_escapes() -> None:
    from click.testing import CliRunner

    from cli.main import stratus

    result = CliRunner().invoke(stratus, ["policy", "explain"])
    assert result.exit_code == 2, result.output
    said = result.output.strip().splitlines()[-1]
    assert "\\n" not in said and "\\t" not in said, said
    assert said.startswith("Error: Missing option '--action'. Choose from: cordon, "), said
    assert said.endswith(", undo"), said


def test_an_empty_incident_id_is_said_to_be_empty(memory_store: Any) -> None:
    import pytest

    from incidents.repository import IncidentNotFound, IncidentRepository

    for empty in ("", "  "):
        with pytest.raises(IncidentNotFound, match="the incident id is empty"):
            IncidentRepository(memory_store).get(empty)


def test_a_dry_run_names_the_approvers_by_the_handles_the_bot_kept(memory_store: Any) -> None:
    from cli.render import dry_run_line
    from store import handles

    ask = Decision(
        outcome="ask",
        reason="asks: rule r requires 1 approval from S0SRE",
        source="rule",
        rule="r",
        approvers=[["S0SRE", "U0NEW"]],
        min_approvals=1,
        decided_at=NOW,
    )
    assert "from S0SRE, U0NEW (r)" in dry_run_line(ask, handles=handles.known(memory_store))
    handles.remember(memory_store, {"S0SRE": "sre"})
    said = dry_run_line(ask, handles=handles.known(memory_store))
    assert "would ask for 1 approval from @sre, U0NEW (r)" in said, said
