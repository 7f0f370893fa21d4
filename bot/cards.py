"""The incident thread's messages as Block Kit: the parent message (current state), the step
messages (findings, diagnosis, attempts, verification) and the proposal cards.

Pure functions of the stored incident and proposal (and the telemetry read for a card): the
follower re-renders a card whole from its state whenever an event touches it, so a card looks
the same whether the change came from a click, the CLI or an automatic undo.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from slack_sdk.models.blocks import Block

from agents.incident import Incident
from agents.model import Candidate
from agents.telemetry import Telemetry
from bot import blocks as b
from bot import text
from bot.telemetry import telemetry_text
from proposals.model import Proposal, ProposalState

P = ProposalState
DIFF_LINES = 30
DIFF_CHARS = 1800

APPROVE = "stratus.approve"
ALWAYS = "stratus.always"
REJECT = "stratus.reject"
OTHER = "stratus.other"
UNDO = "stratus.undo"
DIFF = "stratus.diff"
REASON_MAX = 500  # the Reject modal's limit, enforced again when the submission arrives
REVOKE = "stratus.revoke"
REJECT_VIEW = "stratus.reject_reason"
# The clicks that answer a proposal (checked by the authorization middleware).
DECISIONS = frozenset({APPROVE, ALWAYS, REJECT, OTHER})


def option_id(candidate: Candidate) -> str:
    """A short, stable id for a candidate (its key can be longer than an option value)."""
    return hashlib.sha256(candidate.key().encode()).hexdigest()[:16]


# ---------------------------------------------------------------------- the parent message


def incident_parent(incident: Incident, now: datetime) -> list[Block]:
    end = incident.updated_at if not incident.is_open else now
    start = incident.health_at_start.get("total")
    health = text.health(
        incident.health_now.get("total", start), incident.health_now.get("healthy"), start
    )
    parts: list[Block] = [
        b.header(text.incident_title(incident.namespace)),
        b.section(
            "",
            fields=text.incident_fields(
                incident.state.value,
                incident.requester,
                text.duration(end - incident.created_at),
                health,
            ),
        ),
    ]
    if incident.diagnosis is not None:
        parts.append(
            b.section(
                text.diagnosis_line(
                    incident.diagnosis.summary, text.planner_source(incident.diagnosis.source)
                )
            )
        )
    parts.append(b.context(text.incident_context(incident.id, incident.question, incident.planner)))
    return parts


# ---------------------------------------------------------------------- step messages


def findings(data: dict[str, Any], message: str) -> list[Block]:
    found = data.get("findings") or []
    lines = [f"{f['resource']['kind']}/{f['resource']['name']}: {f['summary']}" for f in found]
    return b.sections(text.findings(len(found), lines[:10]))


def diagnosis(data: dict[str, Any]) -> list[Block]:
    diag = data.get("diagnosis") or {}
    resource = diag.get("resource") or {}
    head = text.diagnosis(
        f"{resource.get('kind', '?')}/{resource.get('name', '?')}",
        str(diag.get("category", "")),
        str(diag.get("summary", "")),
        text.planner_source(str(diag.get("source", "offline"))),
    )
    evidence = [
        text.evidence(e.get("source", ""), e.get("ref", ""), b.cut(str(e.get("text", "")), 300))
        for e in (diag.get("evidence") or [])[:8]
    ]
    parts = b.sections("\n".join([head, *evidence]))
    if diag.get("history"):
        parts += b.sections(text.history([str(h) for h in diag["history"][:5]]))
    return parts


# ---------------------------------------------------------------------- proposal cards


def diff_preview(diff: str) -> tuple[str, bool]:
    """The diff as a code block, and whether it was cut."""
    lines = diff.splitlines()
    if not lines:
        return text.DIFF_EMPTY, False
    shown = lines[:DIFF_LINES]
    cut = len(shown) < len(lines) or len("\n".join(shown)) > DIFF_CHARS
    block = b.code("\n".join(shown), DIFF_CHARS + 8)
    if cut:
        shown_count = min(len(shown), block.count("\n") - 1)
        block += "\n" + text.diff_cut(shown_count, len(lines))
    return block, cut


def verdict_for(proposal: Proposal, incident: Incident | None) -> tuple[str, Any, Any] | None:
    if incident is None:
        return None
    for attempt in incident.attempts:
        if proposal.id in attempt.proposals:
            if attempt.verdict is None:
                return ("", None, None)
            return (
                attempt.verdict,
                attempt.health_before.get("total"),
                attempt.health_after.get("total"),
            )
    return None


def proposal_card(
    proposal: Proposal,
    *,
    incident: Incident | None,
    telemetry: Telemetry | None,
    undo: Proposal | None = None,
) -> list[Block]:
    state = proposal.state
    shown_state = "tampered" if proposal.tampered else state.value
    parts: list[Block] = [
        b.header(proposal.intent),
        b.section(
            "",
            fields=text.card_fields(
                str(proposal.target), proposal.risk, proposal.reversible, shown_state
            ),
        ),
    ]
    if proposal.tampered:
        # No outcome and no buttons: nothing it says can be trusted, and nothing acts on it.
        parts.append(b.section(text.tampered(proposal.tampered)))
        parts.append(
            b.context(text.card_context(proposal.id, proposal.requester, proposal.expires_at))
        )
        return parts
    preview, cut = diff_preview(proposal.plan.diff)
    parts.append(
        b.section(
            f"{text.DIFF_TITLE}\n{preview}",
            accessory=b.button(text.SEE_DIFF, DIFF, proposal.id) if cut else None,
        )
    )
    if telemetry is not None:
        parts.append(b.section(telemetry_text(telemetry)))
    if proposal.warnings:
        parts.append(b.context(*[text.warning(w) for w in proposal.warnings]))
    decision = proposal.decision
    if decision.outcome == "ask":
        parts.append(
            b.section(
                text.why_asked(
                    decision.reason,
                    decision.approvers,
                    proposal.approvals(),
                    decision.min_approvals,
                )
            )
        )
    else:
        parts.append(b.section(text.why_allowed(decision.reason)))
    parts += _outcome(proposal, incident, undo)
    parts += _buttons(proposal, incident)
    parts.append(b.context(text.card_context(proposal.id, proposal.requester, proposal.expires_at)))
    return parts


def _outcome(proposal: Proposal, incident: Incident | None, undo: Proposal | None) -> list[Block]:
    state = proposal.state
    lines: list[str] = []
    if state in (P.APPROVED, P.EXECUTING, P.EXECUTED, P.UNDONE):
        approvals = proposal.approvals()
        last_vote = proposal.votes[-1].at if proposal.votes else None
        lines.append(
            text.approved_by(approvals, last_vote)
            if approvals
            else text.allowed_by_policy(proposal.decision.reason)
        )
    if state in (P.EXECUTED, P.UNDONE):
        lines.append(text.ran(_ran_at(proposal)))
        found = verdict_for(proposal, incident)
        if found is not None:
            verdict, before, after = found
            lines.append(text.verification(verdict, before, after) if verdict else text.VERIFYING)
    if state == P.UNDONE:
        lines.append(
            text.undone_line(
                undo.requester if undo else "someone",
                proposal.undone_by or "",
                undo.updated_at if undo else None,
            )
        )
    if state in (P.REJECTED, P.EXPIRED, P.SUPERSEDED, P.FAILED, P.CANCELLED, P.DENIED):
        lines.append(text.ended(state.value, proposal.reason))
    return [b.section("\n".join(lines))] if lines else []


def _ran_at(proposal: Proposal) -> datetime | None:
    return proposal.updated_at if proposal.state == P.EXECUTED else None


def untried(incident: Incident | None, proposal: Proposal) -> list[Candidate]:
    """The planner's alternatives not tried yet (Other options)."""
    if incident is None or not incident.is_open or proposal.undo_entry is not None:
        return []
    current = incident.current
    if current is None or proposal.id not in current.proposals:
        return []
    done = set(incident.tried) | {key for key, _ in incident.rejected}
    return [c for c in incident.candidates if c.key() not in done]


def _buttons(proposal: Proposal, incident: Incident | None) -> list[Block]:
    if proposal.state == P.AWAITING_APPROVAL:
        decision = proposal.decision
        high = proposal.risk == "high"
        ask = (
            b.confirm(
                text.CONFIRM_TITLE,
                text.high_risk_confirm(proposal.intent, str(proposal.target)),
                text.CONFIRM_YES,
                text.CONFIRM_NO,
            )
            if high
            else None
        )
        elements: list[Any] = [
            b.button(text.APPROVE, APPROVE, proposal.id, style="primary", ask=ask)
        ]
        if decision.remember and decision.min_approvals <= 1:
            elements.append(
                b.button(
                    text.always(
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
        elements.append(b.button(text.REJECT, REJECT, proposal.id, style="danger"))
        options = untried(incident, proposal)
        if options:
            elements.append(
                b.select(
                    text.OTHER,
                    OTHER,
                    [
                        (text.option_label(c.intent), f"{proposal.id}:{option_id(c)}")
                        for c in options
                    ],
                )
            )
        return [b.actions(*elements, block_id=f"decide:{proposal.id}")]
    if proposal.state == P.EXECUTED and proposal.undo_id:
        return [
            b.actions(
                b.button(
                    text.UNDO,
                    UNDO,
                    proposal.id,
                    ask=b.confirm(
                        text.UNDO_CONFIRM_TITLE,
                        text.undo_confirm(proposal.intent),
                        text.UNDO_CONFIRM_YES,
                        text.CONFIRM_NO,
                    ),
                ),
                block_id=f"undo:{proposal.id}",
            )
        ]
    return []


def diff_view(proposal: Proposal) -> dict[str, Any]:
    """A modal with the whole diff, split into sections (a modal holds 100 blocks)."""
    pieces = b.chunks(proposal.plan.diff or "", b.SECTION_TEXT - 10)
    body = [b.section(b.code(piece)) for piece in pieces][: b.VIEW_BLOCKS]
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": b.cut(text.DIFF_MODAL_TITLE, 24)},
        "close": {"type": "plain_text", "text": text.CLOSE},
        "blocks": b.render(body, limit=b.VIEW_BLOCKS),
    }


def reject_view(proposal: Proposal, channel: str) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": REJECT_VIEW,
        "private_metadata": f"{proposal.id}|{channel}",
        "title": {"type": "plain_text", "text": b.cut(text.REJECT_TITLE, 24)},
        "submit": {"type": "plain_text", "text": text.REJECT_SUBMIT},
        "close": {"type": "plain_text", "text": text.CLOSE},
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": text.reject_intro(proposal.intent)},
            },
            {
                "type": "input",
                "block_id": "reason",
                "label": {"type": "plain_text", "text": text.REJECT_LABEL},
                "element": {
                    "type": "plain_text_input",
                    "action_id": "text",
                    "multiline": True,
                    "max_length": REASON_MAX,
                    "placeholder": {"type": "plain_text", "text": text.REJECT_PLACEHOLDER},
                },
            },
        ],
    }
