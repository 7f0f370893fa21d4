"""The thread summary: timeline, root cause, actions with their approvers and outcomes, undos,
health before and after, time to detect and to mitigate — computed from the stored incident,
its proposals and its events, never from what the bot happened to see."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from slack_sdk.models.blocks import Block

from bot import blocks as b
from bot import text
from bot.effects import title
from bot.text import card_words, command_words, thread_words
from incidents.alerts import outcome as alert_outcome
from incidents.model import Incident
from incidents.repository import IncidentEnvelope, IncidentEventType
from proposals.model import Proposal, ProposalState

P = ProposalState
TIMELINE_LINES = 25


TIMELINE_ENTRY = 300  # one long reason must not fill the summary
# The same line again within this many seconds of its last time is a repeat (an alert group
# sent twice, a state noted twice), counted on the first line; later it is news of its own.
REPEAT_WINDOW = 60.0
TIMELINE_EVENTS = (
    IncidentEventType.OPENED,
    IncidentEventType.STATE_CHANGED,
    IncidentEventType.VERIFIED,
    IncidentEventType.ATTEMPT,
    IncidentEventType.ALERT_FIRED,
    IncidentEventType.ALERT_RESOLVED,
)


@dataclass
class _Step:
    at: str
    key: str
    message: str
    last: str
    count: int = 1


def _key(envelope: IncidentEnvelope) -> str:
    """What makes two lines the same news: for an alert firing, which alerts (a second group
    carrying the same alert words it differently); for anything else, its words."""
    event = envelope.event
    if event.type == IncidentEventType.ALERT_FIRED:
        names = sorted({str(a.get("alertname", "")) for a in event.data.get("alerts") or []})
        if names:
            return f"{event.type.value}:{','.join(names)}"
    return f"{event.type.value}:{event.message}"


def _seconds(at: str) -> float:
    try:
        return datetime.fromisoformat(at).timestamp()
    except ValueError:
        return 0.0


def timeline(events: list[IncidentEnvelope], handles: dict[str, str] | None = None) -> list[str]:
    """The summary's timeline, one line per step, repeats folded into a count; ``handles``:
    the ids its notes name ("fix undone by U0BOB") written as handles."""
    steps: list[_Step] = []
    for envelope in events:
        event = envelope.event
        if not event.message or event.type not in TIMELINE_EVENTS:
            continue
        key = _key(envelope)
        same = next(
            (
                s
                for s in reversed(steps)
                if s.key == key and _seconds(envelope.at) - _seconds(s.last) <= REPEAT_WINDOW
            ),
            None,
        )
        if same is not None:
            same.count += 1
            same.last = envelope.at
            continue
        steps.append(_Step(envelope.at, key, event.message, envelope.at))
    return [
        thread_words.timeline_line(s.at[11:19], b.cut(s.message, TIMELINE_ENTRY), handles)
        + (thread_words.timeline_repeats(s.count, s.last[11:19]) if s.count > 1 else "")
        for s in steps
    ]


def _approved(proposal: Proposal, handles: dict[str, str] | None = None) -> str:
    approvals = proposal.approvals()
    if approvals and any(vote.with_plan for vote in proposal.votes):
        return "approved with the plan by " + ", ".join(text.who(u) for u in approvals)
    if approvals:
        return "approved by " + ", ".join(text.who(u) for u in approvals)
    if proposal.decision.outcome == "allow":
        return f"allowed by policy ({text.named(proposal.decision.reason, handles)})"
    # A rejected or unanswered step: the policy's reason ("requires 1 approval from @sre").
    return text.named(proposal.decision.reason, handles)


def _verdict(incident: Incident, proposal: Proposal) -> tuple[str, list[str], list[str]]:
    """The verdict on the attempt that ran ``proposal``, and whose its new failures were."""
    for attempt in incident.attempts:
        if proposal.id in attempt.proposals and attempt.verdict:
            return attempt.verdict, attempt.revealed, attempt.caused
    return "", [], []


def summary_blocks(
    incident: Incident,
    proposals: list[Proposal],
    events: list[IncidentEnvelope],
    handles: dict[str, str] | None = None,
) -> list[Block]:
    """``handles``: Slack id → handle, for the ids the summary's words name (``bot.names``)."""
    detect = incident.detected_at - incident.created_at if incident.detected_at else None
    mitigate = incident.mitigated_at - incident.created_at if incident.mitigated_at else None
    before = incident.health_at_start.get("total", "—")
    after = incident.health_now.get("total", "—")
    parts: list[Block] = [
        b.header(thread_words.SUMMARY_TITLE),
        *([b.context(command_words.cluster_line(incident.cluster))] if incident.cluster else []),
        b.section(
            thread_words.summary_head(incident.namespace, incident.state.value, incident.reason)
        ),
        b.section(
            thread_words.root_cause(
                incident.diagnosis.summary if incident.diagnosis else None,
                text.planner_source(incident.diagnosis.source if incident.diagnosis else ""),
            )
            + "\n"
            + thread_words.summary_times(
                text.duration(detect), text.duration(mitigate), before, after
            )
        ),
    ]
    note = incident.fix_undone
    if note is not None:  # the same line as the parent message's (``cards.fix_undone``)
        parts.append(
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
        )
    alerted = alert_outcome(events)
    if alerted is not None:
        parts.append(
            b.section(
                thread_words.alerts_outcome(
                    list(alerted.fired), alerted.cleared, alerted.cleared_at
                )
            )
        )
    writes = [p for p in proposals if p.undo_entry is None]
    undos = [p for p in proposals if p.undo_entry is not None]
    lines = [
        thread_words.action_line(
            p.intent,
            _approved(p, handles),
            card_words.CARD_STATE.get(p.state.value, p.state.value),
            *_verdict(incident, p),
        )
        for p in writes
    ]
    parts += b.sections(
        thread_words.ACTIONS + "\n" + ("\n".join(lines) if lines else thread_words.NO_ACTIONS)
    )
    if undos:
        undo_lines = [
            # What the undo did (as its card's header says), not the intent it reversed.
            thread_words.action_line(
                title(p), _approved(p, handles), card_words.CARD_STATE.get(p.state.value, ""), ""
            )
            for p in undos
        ]
        parts += b.sections(thread_words.UNDOS + "\n" + "\n".join(undo_lines))
    steps = timeline(events, handles)
    if len(steps) > TIMELINE_LINES:
        steps = [*steps[: TIMELINE_LINES // 2], b.ELLIPSIS, *steps[-TIMELINE_LINES // 2 :]]
    parts += b.sections(thread_words.TIMELINE + "\n" + "\n".join(steps))
    parts.append(b.context(f"`{incident.id}`"))
    return parts
