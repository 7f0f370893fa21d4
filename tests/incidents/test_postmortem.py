"""The postmortem draft as a pure function (``incidents.postmortem``): events in, entries out,
each naming the events it comes from; and its words (``incidents.postmortem_text``): one line
per entry ending with those events, untrusted text made inert, a model's lines kept only when
they cite events the draft rests on (``agents.llm.postmortem.checked``)."""

from __future__ import annotations

import re
from typing import Any

from agents.llm.postmortem import CitedLine, Narrative, checked
from incidents import postmortem, postmortem_text
from incidents.repository import IncidentEnvelope, IncidentEvent, IncidentEventType
from proposals.events import Envelope, EventType, ProposalEvent

T = IncidentEventType
REF = re.compile(r" \[(#\d+(?:, #\d+)*)\]$")


def incident_event(
    seq: int, kind: IncidentEventType, message: str = "", **fields: Any
) -> IncidentEnvelope:
    body = IncidentEvent(
        type=kind,
        incident_id="inc-1",
        namespace="shop",
        state=fields.pop("state", "detecting"),
        previous_state=fields.pop("previous", None),
        actor=fields.pop("actor", "agent:stratus"),
        message=message,
        data=fields,
    )
    return IncidentEnvelope(seq=seq, at=f"2026-11-25T10:00:{seq:02d}+00:00", event=body)


def proposal_event(
    seq: int, kind: EventType, state: str, actor: str, message: str = "", **data: Any
) -> Envelope:
    body = ProposalEvent(
        type=kind,
        proposal_id="prop-1",
        incident_id="inc-1",
        action="rollout-restart",
        target="deployment/payment in shop",
        state=state,
        actor=actor,
        message=message,
        data=data,
    )
    return Envelope(seq=seq, at=f"2026-11-25T10:00:{seq:02d}+00:00", event=body)


DIAGNOSIS = {
    "resource": {"kind": "Deployment", "name": "payment", "namespace": "shop"},
    "category": "configuration",
    "mechanism": "bad-env",
    "summary": "payment rejects [its](http://evil.example) <config>",
    "evidence": [{"source": "log", "ref": "pod/payment-1", "text": "FATAL `rm -rf` ![x](y)"}],
}
INCIDENT = [
    incident_event(1, T.OPENED, actor="U0DAVE"),
    incident_event(2, T.STATE_CHANGED, "reading", state="diagnosing", previous="detecting"),
    incident_event(3, T.DIAGNOSED, "Deployment/payment: bad env", diagnosis=DIAGNOSIS),
    incident_event(9, T.STATE_CHANGED, "gave up", state="escalated", previous="awaiting_approval"),
]
PROPOSALS = [
    proposal_event(4, EventType.PROPOSED, "proposed", "agent:stratus"),
    proposal_event(5, EventType.STATE_CHANGED, "awaiting_approval", "agent:stratus"),
    proposal_event(6, EventType.VOTED, "rejected", "U0ALICE", "no", choice="reject"),
    proposal_event(
        7, EventType.STATE_CHANGED, "rejected", "U0ALICE", "rejected by U0ALICE: peak hours"
    ),
    proposal_event(8, EventType.STATE_CHANGED, "executing", "agent:stratus"),
]


def draft() -> postmortem.Draft:
    return postmortem.draft(
        incident_id="inc-1",
        namespace="shop",
        incident_events=INCIDENT,
        proposal_events=PROPOSALS,
        intents={"prop-1": "Restart the pods of deployment/payment"},
    )


def test_the_timeline_is_every_told_event_in_stream_order_each_naming_itself() -> None:
    told = draft().timeline
    # "executing" is a step in between: not a line of its own.
    assert [e.refs for e in told] == [(1,), (2,), (3,), (4,), (5,), (6,), (7,), (9,)]
    rejected = told[6]
    assert rejected.fields["state"] == "rejected" and rejected.fields["actor"] == "U0ALICE"
    assert rejected.fields["message"] == "peak hours"  # "rejected by U0ALICE" is the line's


def test_every_line_of_the_document_names_events_the_draft_was_made_from() -> None:
    document = postmortem_text.markdown(draft(), handles={"U0ALICE": "alice"})
    given = {e.seq for e in INCIDENT} | {e.seq for e in PROPOSALS}
    bullets = [line for line in document.splitlines() if line.startswith("- ")]
    assert "- (nothing recorded)" in bullets  # no alert, no finding, no verification: no impact
    bullets = [line for line in bullets if line != "- (nothing recorded)"]
    assert len(bullets) > 10
    for line in bullets:
        match = REF.search(line)
        assert match is not None, line
        assert {int(s.strip("# ")) for s in match.group(1).split(",")} <= given, line
    assert "rejected by @alice: peak hours [#7]" in document
    assert "It ended escalated after 8s: gave up [#1, #9]" in document
    assert "Stratus escalated the incident to people: gave up [#9]" in document
    assert "@alice rejected Restart the pods of deployment/payment" in document


def test_text_read_from_the_cluster_cannot_link_format_or_inline_html() -> None:
    document = postmortem_text.markdown(draft())
    cause = next(line for line in document.splitlines() if "rejects" in line)
    assert "](" not in cause and "<config>" not in cause and "[its]" not in cause
    evidence = next(line for line in document.splitlines() if line.startswith("- Evidence"))
    assert "`rm -rf`" not in evidence and "![x](y)" not in evidence


def test_a_models_line_is_kept_only_when_it_cites_events_it_was_given() -> None:
    narrative = Narrative(
        summary=[
            CitedLine(text="Payment broke on a bad env.", events=[3]),
            CitedLine(text="The whole cluster was down.", events=[42]),
            CitedLine(text="Nothing cited.", events=[]),
        ],
        follow_ups=[CitedLine(text="Invented.", events=[3, 99])],
    )
    kept = checked(narrative, postmortem.cited(draft()))
    assert kept == {"summary": [("Payment broke on a bad env.", (3,))]}
    document = postmortem_text.markdown(draft(), narrative=kept, source="x")
    assert "- Payment broke on a bad env. [#3]" in document
    assert "Invented" not in document
    # The template stands where the model left nothing.
    assert "rejected Restart the pods of deployment/payment" in document
