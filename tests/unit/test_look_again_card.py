"""The escalated incident's parent message says why it stopped and offers Look again; an open
or resolved one does not (issue 18 §2)."""

from __future__ import annotations

from datetime import UTC, datetime

from slack_sdk.models.blocks import ButtonElement, SectionBlock

from bot import buttons, cards
from incidents.model import Incident, IncidentState

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def incident(state: IncidentState, reason: str = "") -> Incident:
    return Incident(
        id="inc-0123456789",
        namespace="shop",
        requester="U0ALICE",
        state=state,
        reason=reason,
        created_at=NOW,
        updated_at=NOW,
    )


def test_an_escalation_offers_look_again_with_its_reason() -> None:
    (block,) = cards.look_again(incident(IncidentState.ESCALATED, "no candidates left"))
    assert isinstance(block, SectionBlock) and block.text is not None
    assert "nothing Stratus may do would fix what it found" in str(block.text.text)
    button = block.accessory
    assert isinstance(button, ButtonElement)
    assert (button.action_id, button.value) == (buttons.LOOK_AGAIN, "inc-0123456789")
    parent = cards.incident_parent(incident(IncidentState.ESCALATED, "no diagnosis"), NOW)
    assert any(getattr(b, "accessory", None) for b in parent)


def test_open_and_resolved_incidents_offer_nothing_to_look_again_at() -> None:
    for state in (IncidentState.DIAGNOSING, IncidentState.RESOLVED, IncidentState.CANCELLED):
        assert cards.look_again(incident(state)) == []
