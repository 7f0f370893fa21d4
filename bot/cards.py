"""The incident thread's messages as Block Kit: the parent message (current state), the step
messages (findings, diagnosis, attempts, verification) and the proposal cards.

Pure functions of the stored incident and proposal (and the telemetry read for a card): the
follower re-renders a card whole from its state whenever an event touches it, so a card looks
the same whether the change came from a click, the CLI or an automatic undo.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from slack_sdk.models.blocks import Block

from agents.health import breakdown
from agents.telemetry import Telemetry
from agents.telemetry_links import FigureLinks
from bot import blocks as b
from bot import buttons, text

# Re-exported: ``cards.title`` and ``cards.undo_effect`` are what the surfaces call.
from bot.effects import title as title  # noqa: PLC0414
from bot.effects import undo_effect as undo_effect  # noqa: PLC0414
from bot.telemetry import CardChart, chart_blocks, error_lines_cut, links_blocks, telemetry_text
from bot.text import card_words, command_words, thread_words, undo_words
from incidents import plans
from incidents.model import Incident
from proposals.model import Proposal, ProposalState
from undo.conflicts import UndoConflict

P = ProposalState
DIFF_LINES = 30
DIFF_CHARS = 1800


# ---------------------------------------------------------------------- the parent message


def health_line(start: dict[str, Any] | None, now: dict[str, Any] | None) -> str:
    """A health score and the parts it is made of (those of ``now``, or of ``start`` when
    nothing is wrong any more), in words."""
    current = now or start or {}
    total = current.get("total")
    if total is None:
        return thread_words.health(None, None)
    shown, was = breakdown(current), False
    if not shown and start:
        shown, was = breakdown(start), True
    return thread_words.health_explained(
        total,
        current.get("healthy"),
        (start or {}).get("total"),
        [thread_words.health_part(p.name, p.count, p.points) for p in shown],
        was=was,
    )


def cluster_blocks(cluster: str) -> list[Block]:
    """The cluster a card is about, when Stratus serves a fleet (none for the one unnamed
    cluster, so a single-cluster card is what it always was)."""
    return [b.context(command_words.cluster_line(cluster))] if cluster else []


def incident_parent(incident: Incident, now: datetime) -> list[Block]:
    end = incident.updated_at if not incident.is_open else now
    health = health_line(incident.health_at_start, incident.health_now)
    if incident.health_now or incident.health_at_start:
        health += "\n" + thread_words.HEALTH_SCALE
    parts: list[Block] = [
        b.header(thread_words.incident_title(incident.namespace)),
        *cluster_blocks(incident.cluster),
        b.section(
            "",
            fields=thread_words.incident_fields(
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
                thread_words.diagnosis_line(
                    incident.diagnosis.summary, text.planner_source(incident.diagnosis.source)
                )
            )
        )
    parts += fix_undone(incident)
    parts += look_again(incident)
    parts.append(
        b.context(thread_words.incident_context(incident.id, incident.question, incident.planner))
    )
    return parts


def fix_undone(incident: Incident) -> list[Block]:
    """The line saying a fix of the incident was undone after it ended, if one was (the
    parent message and the summary both show it)."""
    note = incident.fix_undone
    if note is None:
        return []
    return [
        b.section(
            thread_words.fix_undone_line(
                note.by,
                note.at,
                reopened=note.reopened,
                why=note.why,
                namespace=incident.namespace,
                state=incident.state.value,
            )
        )
    ]


def look_again(incident: Incident) -> list[Block]:
    """An escalated incident says why it stopped and offers a fresh look (issue 18 §2): the
    fault may have shown its cause since, or the policy changed."""
    if incident.state.value != "escalated":
        return []
    return [
        b.section(
            thread_words.escalated_why(incident.reason),
            accessory=b.button(
                thread_words.LOOK_AGAIN, buttons.LOOK_AGAIN, incident.id, style="primary"
            ),
        )
    ]


# ---------------------------------------------------------------------- step messages


def findings(data: dict[str, Any], message: str) -> list[Block]:
    found = data.get("findings") or []
    lines = [f"{f['resource']['kind']}/{f['resource']['name']}: {f['summary']}" for f in found]
    return b.sections(thread_words.findings(len(found), lines[:10]))


def diagnosis(data: dict[str, Any]) -> list[Block]:
    diag = data.get("diagnosis") or {}
    resource = diag.get("resource") or {}
    head = thread_words.diagnosis(
        f"{resource.get('kind', '?')}/{resource.get('name', '?')}",
        str(diag.get("category", "")),
        str(diag.get("summary", "")),
        text.planner_source(str(diag.get("source", "offline"))),
    )
    evidence = [
        thread_words.evidence(
            e.get("source", ""), e.get("ref", ""), b.cut(str(e.get("text", "")), 300)
        )
        for e in (diag.get("evidence") or [])[:8]
    ]
    parts = b.sections("\n".join([head, *evidence]))
    if diag.get("history"):
        parts += b.sections(thread_words.history([str(h) for h in diag["history"][:5]]))
    return parts


def attempt(data: dict[str, Any], message: str, source: str) -> list[Block]:
    """An attempt starting, in whose words (``source``: the model's or the rules'); a plan of
    several steps is shown whole, once, here."""
    number = data.get("attempt", "?")
    intent = (data.get("candidate") or {}).get("intent", message)
    body: list[Block] = [b.section(thread_words.attempt_started(int(number), str(intent), source))]
    steps = data.get("plan") or []
    if len(steps) > 1:
        body.append(
            b.section(
                card_words.plan_lines(
                    [
                        (int(s.get("number", 0)), str(s.get("intent", "")), str(s.get("note", "")))
                        for s in steps
                    ]
                )
            )
        )
    return body


def verified(data: dict[str, Any]) -> list[Block]:
    """An attempt verified: its verdict, the health before and after, and what it revealed or
    caused."""
    return [
        b.section(
            thread_words.verified_health(
                int(data.get("attempt", 0)),
                str(data.get("verdict", "")),
                health_line(data.get("before"), data.get("after")),
                [str(r) for r in data.get("revealed") or []],
                [str(c) for c in data.get("caused") or []],
            )
        )
    ]


# ---------------------------------------------------------------------- proposal cards


def diff_preview(diff: str) -> tuple[str, bool]:
    """The diff as a code block, and whether it was cut."""
    lines = diff.splitlines()
    if not lines:
        return card_words.DIFF_EMPTY, False
    shown = lines[:DIFF_LINES]
    cut = len(shown) < len(lines) or len("\n".join(shown)) > DIFF_CHARS
    block = b.code("\n".join(shown), DIFF_CHARS + 8)
    if cut:
        shown_count = min(len(shown), block.count("\n") - 1)
        block += "\n" + card_words.diff_cut(shown_count, len(lines))
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


def verified_at(proposal: Proposal, incident: Incident | None) -> datetime | None:
    """When the attempt that ran ``proposal`` was judged settled (its pods ready): its figures
    settle a rate window after that."""
    if incident is None:
        return None
    for attempt in incident.attempts:
        if proposal.id in attempt.proposals and attempt.verdict is not None:
            return attempt.finished_at
    return None


def batch_card(first: Proposal, parts: list[list[Block]]) -> list[Block]:
    """Several proposals of one MCP client for the same approvers on one card, each with its
    own diff and buttons, saying why they were gathered (approval fatigue)."""
    body: list[Block] = [b.context(card_words.batched(first.requester, len(parts)))]
    for number, part in enumerate(parts):
        if number:
            body.append(b.divider())
        body.extend(part)
    return body


def proposal_card(
    proposal: Proposal,
    *,
    incident: Incident | None,
    telemetry: Telemetry | None,
    undo: Proposal | None = None,
    handles: dict[str, str] | None = None,
    ran_at: datetime | None = None,
    chart: CardChart | None = None,
    links: FigureLinks | None = None,
) -> list[Block]:
    """``handles``: Slack id → handle, for the ids the card's words name (``bot.names``).
    ``ran_at``: when its write was applied (its undo entry's time), which an undone proposal's
    own times no longer say. ``chart``: the before/after image uploaded for it (or why there
    is none); ``links``: its figures' PromQL and dashboard links (``bot.uploads``)."""
    state = proposal.state
    shown_state = "tampered" if proposal.tampered else state.value
    parts: list[Block] = [b.header(title(proposal)), *cluster_blocks(proposal.cluster)]
    step = plans.position(incident, proposal.id)
    if step is not None:
        parts.append(b.context(card_words.step_of(*step)))
    parts.append(
        b.section(
            "",
            fields=card_words.card_fields(
                str(proposal.target),
                proposal.risk,
                proposal.reversible,
                shown_state,
                undo_note=_undo_note(proposal),
            ),
        )
    )
    if proposal.tampered:
        # No outcome and no buttons: nothing it says can be trusted, and nothing acts on it.
        parts.append(b.section(card_words.tampered(proposal.tampered)))
        parts.append(
            b.context(card_words.card_context(proposal.id, proposal.requester, proposal.expires_at))
        )
        return parts
    parts += _risk_blocks(proposal)
    preview, cut = diff_preview(proposal.plan.diff)
    parts.append(
        b.section(
            f"{card_words.DIFF_TITLE}\n{preview}",
            accessory=b.button(card_words.SEE_DIFF, buttons.DIFF, proposal.id) if cut else None,
        )
    )
    if telemetry is not None:
        parts += telemetry_blocks(telemetry, proposal.id)
        parts += links_blocks(links) + chart_blocks(chart)
    if proposal.agent_intent:
        parts.append(b.context(card_words.agent_intent(proposal.requester, proposal.agent_intent)))
    if proposal.warnings:
        parts.append(b.context(*[card_words.warning(w) for w in proposal.warnings]))
    decision = proposal.decision
    if decision.outcome == "ask":
        parts.append(
            b.section(
                card_words.why_asked(
                    decision.reason,
                    decision.approvers,
                    proposal.approvals(),
                    decision.min_approvals,
                    handles=handles,
                )
            )
        )
    else:
        parts.append(b.section(card_words.why_allowed(decision.reason)))
    parts += _outcome(proposal, incident, undo, ran_at)
    parts += buttons.card_buttons(proposal, incident)
    parts.append(
        b.context(card_words.card_context(proposal.id, proposal.requester, proposal.expires_at))
    )
    return parts


def _risk_blocks(proposal: Proposal) -> list[Block]:
    """The risk's reason, and the flag of an undo that puts the diagnosed cause back — both
    decided below (``proposals.risk``); a proposal stored before them shows neither."""
    parts: list[Block] = []
    if proposal.puts_back:
        parts.append(b.section(card_words.puts_back_cause(proposal.puts_back)))
    if proposal.risk_reason:
        parts.append(b.context(card_words.risk_reason(proposal.risk, proposal.risk_reason)))
    return parts


def _undo_note(proposal: Proposal) -> str | None:
    """The card's Undo field where its default ("exact undo available") would not be true: an
    undo has no Undo button of its own, and an undone write has none any more."""
    namespace = proposal.target.namespace
    if proposal.undo_entry is not None:
        return card_words.undo_field_of_undo(namespace)
    if proposal.state == P.UNDONE:
        return card_words.undo_field_undone(namespace)
    return None


def _outcome(
    proposal: Proposal,
    incident: Incident | None,
    undo: Proposal | None,
    ran_at: datetime | None = None,
) -> list[Block]:
    state = proposal.state
    lines: list[str] = []
    if state in (P.APPROVED, P.EXECUTING, P.EXECUTED, P.UNDONE):
        approvals = proposal.approvals()
        last_vote = proposal.votes[-1].at if proposal.votes else None
        lines.append(_approved_line(proposal, approvals, last_vote))
    if state in (P.EXECUTED, P.UNDONE):
        lines.append(card_words.ran(ran_at or _ran_at(proposal)))
        found = verdict_for(proposal, incident)
        if found is not None:
            verdict = found[0]
            lines.append(
                thread_words.verification_health(
                    verdict,
                    health_line(*_attempt_health(proposal, incident)),
                    *_blame(proposal, incident),
                )
                if verdict
                else card_words.VERIFYING
            )
    if state == P.UNDONE:
        lines.append(
            card_words.undone_line(
                undo.requester if undo else "someone",
                proposal.undone_by or "",
                undo.updated_at if undo else None,
            )
        )
    if state in (P.REJECTED, P.EXPIRED, P.SUPERSEDED, P.FAILED, P.CANCELLED, P.DENIED):
        lines.append(
            _impersonation_line(proposal) or card_words.ended(state.value, proposal.reason)
        )
    return [b.section("\n".join(lines))] if lines else []


def _impersonation_line(proposal: Proposal) -> str | None:
    """A write made as its approver that failed for that reason: the cluster refused it for
    them, or they have no Kubernetes identity (``policies.impersonation``)."""
    error = proposal.error if proposal.state == P.FAILED else None
    details = (error or {}).get("details") or {}
    if not isinstance(details, dict):
        return None
    code = (error or {}).get("code")
    if code == "cluster_refused":
        return card_words.cluster_refused(
            str(details.get("person") or ""), str(details.get("cluster"))
        )
    if code == "not_mapped":
        return card_words.not_mapped(
            str(details.get("person") or ""), str(details.get("file") or "")
        )
    return None


def _approved_line(proposal: Proposal, approvals: list[str], at: datetime | None) -> str:
    """Who approved: people, a plan approval (given on this card, or on the plan's first
    step for this one), or the policy."""
    if not approvals:
        return card_words.allowed_by_policy(proposal.decision.reason)
    carried = next((v for v in proposal.votes if v.with_plan), None)
    if carried is not None and len(approvals) == 1:
        return card_words.approved_with_plan(carried.user, carried.at)
    planned = next((v for v in proposal.votes if v.choice == "plan"), None)
    if planned is not None and len(approvals) == 1:
        return card_words.plan_approved(planned.user, planned.at, len(planned.plan))
    return card_words.approved_by(approvals, at)


def _attempt_health(
    proposal: Proposal, incident: Incident | None
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    for attempt in incident.attempts if incident else []:
        if proposal.id in attempt.proposals:
            return attempt.health_before, attempt.health_after
    return None, None


def _blame(proposal: Proposal, incident: Incident | None) -> tuple[list[str], list[str]]:
    """(revealed, caused) of the attempt that ran ``proposal`` (``Attempt.revealed``)."""
    for attempt in incident.attempts if incident else []:
        if proposal.id in attempt.proposals:
            return attempt.revealed, attempt.caused
    return [], []


def _ran_at(proposal: Proposal) -> datetime | None:
    # An undone proposal was saved again when undone: its updated_at is the undo's time.
    return proposal.updated_at if proposal.state == P.EXECUTED else None


def telemetry_blocks(telemetry: Telemetry, proposal_id: str) -> list[Block]:
    """The card's telemetry section, with a button that shows the error lines whole when the
    card shows them cut or not all of them."""
    more = error_lines_cut(telemetry.errors)
    return [
        b.section(
            telemetry_text(telemetry),
            accessory=b.button(card_words.SEE_ERROR_LINES, buttons.LOGS, proposal_id)
            if more
            else None,
        )
    ]


def force_offer(entry_id: str, conflict: UndoConflict) -> list[Block]:
    """An undo that met a later change, offered forced (to someone who may undo it, in a
    message only they see): what moved, the diff, and Force — its dialog shows the diff again.
    The button's value binds the click to this conflict (``UndoConflict.digest``)."""
    preview, _ = diff_preview(conflict.diff)
    return [
        b.section(undo_words.force_offer(conflict.message, preview)),
        b.actions(
            b.button(
                undo_words.FORCE,
                buttons.FORCE_UNDO,
                f"{entry_id}:{conflict.digest}",
                style="danger",
                ask=b.confirm(
                    undo_words.FORCE_TITLE,
                    undo_words.force_confirm(conflict.diff),
                    undo_words.FORCE_YES,
                    card_words.CONFIRM_NO,
                ),
            ),
            block_id=f"force:{entry_id}",
        ),
    ]
