"""What a person can click: the action id of every button and menu Stratus posts (the app
routes clicks by them), and a proposal's answer and undo buttons.

Kept apart from the card's words and layout (``bot.cards``) because the ids are a contract
with the listeners (``bot.app``, ``bot.actions``, the authorization middleware), and the
buttons are drawn in three places: the card, the App Home and ``/stratus status``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from slack_sdk.models.blocks import Block

from agents.model import Candidate
from bot import blocks as b
from bot import text
from bot.effects import title, undo_effect
from bot.text import card_words
from incidents import plans
from incidents.model import Incident
from proposals.model import Proposal, ProposalState

P = ProposalState

APPROVE = "stratus.approve"
ALWAYS = "stratus.always"
REJECT = "stratus.reject"
OTHER = "stratus.other"
UNDO = "stratus.undo"
FORCE_UNDO = "stratus.force_undo"
DIFF = "stratus.diff"
LOGS = "stratus.logs"
REVOKE = "stratus.revoke"
PLAN = "stratus.plan"
LOOK_AGAIN = "stratus.look_again"  # an escalated incident: diagnose it again, same thread
# The clicks that answer a proposal (checked by the authorization middleware).
DECISIONS = frozenset({APPROVE, ALWAYS, REJECT, OTHER, PLAN})


def option_id(candidate: Candidate) -> str:
    """A short, stable id for a candidate (its key can be longer than an option value)."""
    return hashlib.sha256(candidate.key().encode()).hexdigest()[:16]


def untried(incident: Incident | None, proposal: Proposal) -> list[Candidate]:
    """The planner's alternatives not tried yet (Other options)."""
    if incident is None or not incident.is_open or proposal.undo_entry is not None:
        return []
    current = incident.current
    if current is None or proposal.id not in current.proposals:
        return []
    done = set(incident.tried) | {key for key, _ in incident.rejected}
    return [c for c in incident.candidates if c.key() not in done]


def answer_row(proposal: Proposal) -> list[Block]:
    """The answer buttons of a proposal that has no card (one made at a terminal), for the
    App Home and ``/stratus status``, which list it: the same buttons a card has."""
    return card_buttons(proposal, None) if proposal.state == P.AWAITING_APPROVAL else []


def card_buttons(proposal: Proposal, incident: Incident | None) -> list[Block]:
    """A card's buttons for its state: the answers while it waits, Undo once it ran."""
    if proposal.state == P.AWAITING_APPROVAL:
        decision = proposal.decision
        high = proposal.risk == "high"
        ask = (
            b.confirm(
                card_words.CONFIRM_TITLE,
                card_words.high_risk_confirm(
                    title(proposal), str(proposal.target), puts_back=proposal.puts_back
                ),
                card_words.CONFIRM_YES,
                card_words.CONFIRM_NO,
            )
            if high
            else None
        )
        elements: list[Any] = [
            b.button(card_words.APPROVE, APPROVE, proposal.id, style="primary", ask=ask)
        ]
        if plans.plan_offered(incident, proposal):
            total = len(incident.current.candidate.steps) if incident and incident.current else 0
            elements.append(
                b.button(
                    card_words.APPROVE_PLAN,
                    PLAN,
                    proposal.id,
                    ask=b.confirm(
                        card_words.PLAN_CONFIRM_TITLE,
                        card_words.plan_confirm(total),
                        card_words.PLAN_CONFIRM_YES,
                        card_words.CONFIRM_NO,
                    ),
                )
            )
        if decision.remember and decision.min_approvals <= 1:
            elements.append(
                b.button(
                    card_words.always(
                        proposal.facts.action,
                        f"{proposal.target.kind}/{proposal.target.name}",
                        proposal.target.namespace or "the cluster",
                        text.duration(decision.max_grant_seconds),
                    ),
                    ALWAYS,
                    proposal.id,
                    ask=ask,
                )
            )
        elements.append(b.button(card_words.REJECT, REJECT, proposal.id, style="danger"))
        options = untried(incident, proposal)
        if options:
            elements.append(
                b.select(
                    card_words.OTHER,
                    OTHER,
                    [
                        (card_words.option_label(c.intent), f"{proposal.id}:{option_id(c)}")
                        for c in options
                    ],
                )
            )
        return [b.actions(*elements, block_id=f"decide:{proposal.id}")]
    if proposal.state == P.EXECUTED and proposal.undo_id:
        return [
            b.actions(
                b.button(
                    card_words.UNDO,
                    UNDO,
                    proposal.id,
                    ask=b.confirm(
                        card_words.UNDO_CONFIRM_TITLE,
                        card_words.undo_confirm(undo_effect(proposal)),
                        card_words.UNDO_CONFIRM_YES,
                        card_words.CONFIRM_NO,
                    ),
                ),
                block_id=f"undo:{proposal.id}",
            )
        ]
    return []
