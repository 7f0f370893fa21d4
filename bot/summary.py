"""The thread summary: timeline, root cause, actions with their approvers and outcomes, undos,
health before and after, time to detect and to mitigate — computed from the stored incident,
its proposals and its events, never from what the bot happened to see."""

from __future__ import annotations

from slack_sdk.models.blocks import Block

from agents.alerts import outcome as alert_outcome
from agents.incident import Incident
from agents.incident_store import IncidentEnvelope, IncidentEventType
from bot import blocks as b
from bot import text
from proposals.model import Proposal, ProposalState

P = ProposalState
TIMELINE_LINES = 25


TIMELINE_ENTRY = 300  # one long reason must not fill the summary


def _approved(proposal: Proposal) -> str:
    approvals = proposal.approvals()
    if approvals:
        return "approved by " + ", ".join(text.who(u) for u in approvals)
    if proposal.decision.outcome == "allow":
        return f"allowed by policy ({proposal.decision.reason})"
    return proposal.decision.reason


def _verdict(incident: Incident, proposal: Proposal) -> str:
    for attempt in incident.attempts:
        if proposal.id in attempt.proposals and attempt.verdict:
            return attempt.verdict
    return ""


def summary_blocks(
    incident: Incident, proposals: list[Proposal], events: list[IncidentEnvelope]
) -> list[Block]:
    detect = incident.detected_at - incident.created_at if incident.detected_at else None
    mitigate = incident.mitigated_at - incident.created_at if incident.mitigated_at else None
    before = incident.health_at_start.get("total", "—")
    after = incident.health_now.get("total", "—")
    parts: list[Block] = [
        b.header(text.SUMMARY_TITLE),
        b.section(text.summary_head(incident.namespace, incident.state.value, incident.reason)),
        b.section(
            text.root_cause(
                incident.diagnosis.summary if incident.diagnosis else None,
                text.planner_source(incident.diagnosis.source if incident.diagnosis else ""),
            )
            + "\n"
            + text.summary_times(text.duration(detect), text.duration(mitigate), before, after)
        ),
    ]
    alerted = alert_outcome(events)
    if alerted is not None:
        parts.append(
            b.section(text.alerts_outcome(list(alerted.fired), alerted.cleared, alerted.cleared_at))
        )
    writes = [p for p in proposals if p.undo_entry is None]
    undos = [p for p in proposals if p.undo_entry is not None]
    lines = [
        text.action_line(
            p.intent,
            _approved(p),
            text.CARD_STATE.get(p.state.value, p.state.value),
            _verdict(incident, p),
        )
        for p in writes
    ]
    parts += b.sections(text.ACTIONS + "\n" + ("\n".join(lines) if lines else text.NO_ACTIONS))
    if undos:
        undo_lines = [
            text.action_line(p.intent, _approved(p), text.CARD_STATE.get(p.state.value, ""), "")
            for p in undos
        ]
        parts += b.sections(text.UNDOS + "\n" + "\n".join(undo_lines))
    steps = [
        text.timeline_line(e.at[11:19], b.cut(e.event.message, TIMELINE_ENTRY))
        for e in events
        if e.event.message
        and e.event.type
        in (
            IncidentEventType.OPENED,
            IncidentEventType.STATE_CHANGED,
            IncidentEventType.VERIFIED,
            IncidentEventType.ATTEMPT,
            IncidentEventType.ALERT_FIRED,
            IncidentEventType.ALERT_RESOLVED,
        )
    ]
    if len(steps) > TIMELINE_LINES:
        steps = [*steps[: TIMELINE_LINES // 2], b.ELLIPSIS, *steps[-TIMELINE_LINES // 2 :]]
    parts += b.sections(text.TIMELINE + "\n" + "\n".join(steps))
    parts.append(b.context(f"`{incident.id}`"))
    return parts
