"""A postmortem draft of one incident, decided from its stored events and nothing else.

Pure: the incident's events and its proposals' events in, ``Draft`` out — sections of
``Entry``s, each naming the events it comes from (``refs``: their ``seq`` in the stream), so
every line of the document can be checked against the store, and nothing in it is invented.
The words are ``incidents.postmortem_text``'s; with a model configured, the narrative parts
(summary, what went well, follow-ups) are worded by it from these entries as data
(``agents.llm.postmortem``), each of its lines checked to cite only events given to it.

Why here and not in a surface: the same document is posted in Slack (``/stratus
postmortem``) and printed by ``stratus incidents postmortem ID``; computing it twice would let
the two disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from incidents.repository import IncidentEnvelope, IncidentEventType, IncidentRepository
from proposals.events import Envelope as ProposalEnvelope
from proposals.events import EventType
from proposals.service import ProposalService

I = IncidentEventType  # noqa: E741 (a short alias, as ``P`` is for proposal states elsewhere)
TERMINAL = ("resolved", "escalated", "cancelled")
MAX_EVENTS = 5000  # per stream read: an incident's whole story, bounded
# Proposal states a timeline names (executing and proposed are the steps in between).
TOLD_STATES = (
    "awaiting_approval",
    "approved",
    "executed",
    "rejected",
    "denied",
    "undone",
    "failed",
    "expired",
    "superseded",
    "cancelled",
)


@dataclass(frozen=True)
class Entry:
    """One line of the draft: what kind of fact it is, its fields (quoted from the events),
    and the events it comes from."""

    kind: str
    refs: tuple[int, ...]
    at: str = ""  # the (first) event's time, ISO
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Draft:
    incident_id: str
    namespace: str
    summary: tuple[Entry, ...]
    impact: tuple[Entry, ...]
    timeline: tuple[Entry, ...]
    root_cause: tuple[Entry, ...]
    went_well: tuple[Entry, ...]
    follow_ups: tuple[Entry, ...]

    def entries(self) -> list[Entry]:
        return [
            *self.summary,
            *self.impact,
            *self.timeline,
            *self.root_cause,
            *self.went_well,
            *self.follow_ups,
        ]


# ---------------------------------------------------------------------- the timeline


def _incident_entry(envelope: IncidentEnvelope) -> Entry | None:
    event = envelope.event
    base: dict[str, Any] = {"actor": event.actor, "message": event.message}
    kind = {
        I.OPENED: "opened",
        I.ALERT_FIRED: "alert_fired",
        I.ALERT_RESOLVED: "alert_resolved",
        I.FINDINGS: "findings",
        I.DIAGNOSED: "diagnosed",
        I.PLANNED: "planned",
        I.ATTEMPT: "attempt",
        I.VERIFIED: "verified",
        I.NOTE: "note",
    }.get(event.type)
    if event.type == I.STATE_CHANGED:
        if event.state == event.previous_state:
            return None
        kind = "state"
        base |= {"state": event.state, "previous": event.previous_state}
    if kind is None:
        return None
    if kind == "opened":
        base["state"] = event.state
    if kind == "verified":
        base["verdict"] = event.data.get("verdict", "")
    return Entry(kind, (envelope.seq,), envelope.at, base)


def _proposal_entry(envelope: ProposalEnvelope, intents: dict[str, str]) -> Entry | None:
    event = envelope.event
    base: dict[str, Any] = {
        "actor": event.actor,
        "message": event.message,
        "proposal": event.proposal_id,
        "action": event.action,
        "target": event.target,
        "intent": intents.get(event.proposal_id, ""),
    }
    if event.type == EventType.PROPOSED:
        return Entry("proposed", (envelope.seq,), envelope.at, base)
    if event.type == EventType.VOTED:
        base["choice"] = str(event.data.get("choice", ""))
        return Entry("voted", (envelope.seq,), envelope.at, base)
    if event.type == EventType.STATE_CHANGED and event.state in TOLD_STATES:
        base |= {"state": event.state, "previous": event.previous_state}
        base["message"] = _reason(event.message, event.state, event.actor, base["intent"])
        return Entry("proposal_state", (envelope.seq,), envelope.at, base)
    return None


def _reason(message: str, state: str, actor: str, intent: str) -> str:
    """What a state change's message adds to the line that already says the state, who and
    what: "rejected by U0ALICE: no restarts at peak hours" → "no restarts at peak hours"."""
    said = message.strip()
    prefix = f"{state} by {actor}"
    if said.startswith(prefix):
        said = said[len(prefix) :].lstrip(" :")
    if said in (f"applied: {intent}", "applied"):
        return ""
    return said


def timeline(
    incident_events: list[IncidentEnvelope],
    proposal_events: list[ProposalEnvelope],
    intents: dict[str, str],
) -> list[Entry]:
    """Every event a postmortem tells, in the order they were stored (one stream, one order)."""
    merged: list[tuple[int, Entry | None]] = [
        (e.seq, _incident_entry(e)) for e in incident_events
    ] + [(e.seq, _proposal_entry(e, intents)) for e in proposal_events]
    return [entry for _, entry in sorted(merged, key=lambda pair: pair[0]) if entry is not None]


# ---------------------------------------------------------------------- the other sections


def _first(entries: list[Entry], kind: str, **match: Any) -> Entry | None:
    return next(
        (
            e
            for e in entries
            if e.kind == kind and all(e.fields.get(k) == v for k, v in match.items())
        ),
        None,
    )


def _last(entries: list[Entry], kind: str, **match: Any) -> Entry | None:
    found = [
        e for e in entries if e.kind == kind and all(e.fields.get(k) == v for k, v in match.items())
    ]
    return found[-1] if found else None


def _diagnosis(incident_events: list[IncidentEnvelope]) -> tuple[int, dict[str, Any]] | None:
    for envelope in reversed(incident_events):
        if envelope.event.type == I.DIAGNOSED:
            return envelope.seq, dict(envelope.event.data.get("diagnosis") or {})
    return None


def _verified(incident_events: list[IncidentEnvelope]) -> list[tuple[int, str, dict[str, Any]]]:
    return [
        (e.seq, e.at, dict(e.event.data)) for e in incident_events if e.event.type == I.VERIFIED
    ]


def draft(
    *,
    incident_id: str,
    namespace: str,
    incident_events: list[IncidentEnvelope],
    proposal_events: list[ProposalEnvelope],
    intents: dict[str, str],
) -> Draft:
    """The draft of incident ``incident_id`` from its events and its proposals' events
    (``intents``: proposal id → the intent stored with it, quoted on its lines)."""
    told = timeline(incident_events, proposal_events, intents)
    opened = _first(told, "opened")
    ended = _last(told, "state")
    diagnosed = _diagnosis(incident_events)
    verified = _verified(incident_events)

    summary: list[Entry] = []
    if opened is not None:
        summary.append(Entry("summary_opened", opened.refs, opened.at, dict(opened.fields)))
    if diagnosed is not None:
        seq, diagnosis = diagnosed
        summary.append(
            Entry(
                "summary_cause",
                (seq,),
                fields={
                    "resource": _resource(diagnosis.get("resource")),
                    "summary": diagnosis.get("summary", ""),
                },
            )
        )
    ended_at = [e for e in told if e.kind == "state" and e.fields.get("state") in TERMINAL]
    final = ended_at[-1] if ended_at else None
    if final is not None:
        refs = (opened.refs[0], final.refs[0]) if opened is not None else final.refs
        summary.append(
            Entry(
                "summary_outcome",
                refs,
                final.at,
                {
                    "state": final.fields["state"],
                    "message": final.fields["message"],
                    "opened_at": opened.at if opened else "",
                    "ended_at": final.at,
                },
            )
        )
    if ended is not None and ended is not final:
        # It moved on after it ended (a fix undone re-opens it), or has not ended yet.
        summary.append(Entry("summary_now", ended.refs, ended.at, dict(ended.fields)))

    impact: list[Entry] = []
    for entry in told:
        if entry.kind == "alert_fired":
            impact.append(Entry("impact_alert", entry.refs, entry.at, dict(entry.fields)))
    for envelope in incident_events:
        if envelope.event.type == I.FINDINGS:
            for finding in (envelope.event.data.get("findings") or [])[:5]:
                impact.append(
                    Entry(
                        "impact_finding",
                        (envelope.seq,),
                        envelope.at,
                        {
                            "resource": _resource(finding.get("resource")),
                            "summary": finding.get("summary", ""),
                            "symptoms": [_resource(s) for s in finding.get("symptoms") or []],
                        },
                    )
                )
            break  # the first look: what it was like when Stratus was called
    if verified:
        seq, at, data = verified[0]
        first_before = (data.get("before") or {}).get("total")
        last_seq, _, last = verified[-1]
        impact.append(
            Entry(
                "impact_health",
                (seq, last_seq) if last_seq != seq else (seq,),
                at,
                {
                    "before": first_before,
                    "before_parts": (data.get("before") or {}).get("parts") or {},
                    "after": (last.get("after") or {}).get("total"),
                    "verdict": last.get("verdict", ""),
                },
            )
        )

    root: list[Entry] = []
    if diagnosed is not None:
        seq, diagnosis = diagnosed
        root.append(
            Entry(
                "cause",
                (seq,),
                fields={
                    "resource": _resource(diagnosis.get("resource")),
                    "category": diagnosis.get("category", ""),
                    "mechanism": diagnosis.get("mechanism", ""),
                    "summary": diagnosis.get("summary", ""),
                    "source": diagnosis.get("source", ""),
                },
            )
        )
        for evidence in (diagnosis.get("evidence") or [])[:8]:
            root.append(
                Entry(
                    "evidence",
                    (seq,),
                    fields={
                        "source": evidence.get("source", ""),
                        "ref": evidence.get("ref", ""),
                        "text": evidence.get("text", ""),
                    },
                )
            )

    well: list[Entry] = []
    follow: list[Entry] = []
    for seq, at, data in verified:
        if data.get("verdict") in ("better", "healthy"):
            well.append(Entry("well_verified", (seq,), at, dict(data)))
        elif data.get("verdict") == "worse":
            follow.append(Entry("follow_worse", (seq,), at, dict(data)))
    for entry in told:
        state = entry.fields.get("state")
        if entry.kind == "proposal_state" and state == "executed":
            approved = _last(
                [e for e in told if e.refs[0] < entry.refs[0]],
                "proposal_state",
                proposal=entry.fields["proposal"],
                state="approved",
            )
            if approved is not None:
                well.append(
                    Entry(
                        "well_approved",
                        (approved.refs[0], entry.refs[0]),
                        entry.at,
                        {**entry.fields, "approver": approved.fields["actor"]},
                    )
                )
        elif entry.kind == "proposal_state" and state == "undone":
            well.append(Entry("well_undone", entry.refs, entry.at, dict(entry.fields)))
            follow.append(Entry("follow_undone", entry.refs, entry.at, dict(entry.fields)))
        elif entry.kind == "proposal_state" and state == "rejected":
            follow.append(Entry("follow_rejected", entry.refs, entry.at, dict(entry.fields)))
        elif entry.kind == "proposal_state" and state in ("failed", "denied", "expired"):
            follow.append(Entry("follow_" + str(state), entry.refs, entry.at, dict(entry.fields)))
    if ended is not None and ended.fields["state"] == "escalated":
        follow.append(Entry("follow_escalated", ended.refs, ended.at, dict(ended.fields)))
    if diagnosed is not None:
        follow.append(
            Entry(
                "follow_cause",
                (diagnosed[0],),
                fields={
                    "resource": _resource(diagnosed[1].get("resource")),
                    "mechanism": diagnosed[1].get("mechanism", ""),
                },
            )
        )
    return Draft(
        incident_id=incident_id,
        namespace=namespace,
        summary=tuple(summary),
        impact=tuple(impact),
        timeline=tuple(told),
        root_cause=tuple(root),
        went_well=tuple(well),
        follow_ups=tuple(follow),
    )


def _resource(raw: Any) -> str:
    """A stored resource key ({"kind", "name", "namespace"}) as ``kind/name``."""
    if isinstance(raw, dict):
        kind, name = str(raw.get("kind", "")), str(raw.get("name", ""))
        return f"{kind}/{name}" if kind else name
    return str(raw or "")


def of_incident(incidents: IncidentRepository, service: ProposalService, incident_id: str) -> Draft:
    """Read what the draft needs from the store (the one read, for every surface)."""
    incident = incidents.get(incident_id)
    proposals = service.by_incident(incident_id)
    proposal_events = [
        envelope
        for proposal in proposals
        for envelope in service.events.since(proposal_id=proposal.id, limit=MAX_EVENTS)
    ]
    return draft(
        incident_id=incident.id,
        namespace=incident.namespace,
        incident_events=incidents.events(incident_id=incident_id, limit=MAX_EVENTS),
        proposal_events=proposal_events,
        intents={p.id: p.intent for p in proposals},
    )


def records(draft: Draft) -> list[dict[str, Any]]:
    """The draft's entries as data for a model to word the narrative from (each with the
    events it comes from): the facts, never more."""
    return [
        {"events": list(entry.refs), "at": entry.at, "kind": entry.kind, **entry.fields}
        for entry in draft.entries()
    ]


def cited(draft: Draft) -> set[int]:
    """Every event the draft rests on: all a model's line may cite."""
    return {seq for entry in draft.entries() for seq in entry.refs}
