"""What undoing an ended incident's write does to the incident (``incidents.reopening``), as a
pure rule: the fix that resolved it undone re-opens it; anything else is noted and left closed
with the reason. No store, no cluster, no socket."""

from __future__ import annotations

from incidents import reopening
from incidents.model import Attempt, Incident, IncidentState
from incidents.reopening import Undone
from tests.incidents.test_continuation import NOW, attempt, incident

St = IncidentState
UNDONE = Undone(proposal_id="p1", undo_id="u1", by="U0BOB", at=NOW)


def ended(state: IncidentState, outcome: str = "fixed") -> Incident:
    done: Attempt = attempt(("p1",)).model_copy(update={"outcome": outcome})
    return incident(state, done)


def test_undoing_the_fix_of_a_resolved_incident_reopens_it() -> None:
    note = reopening.decide(ended(St.RESOLVED), UNDONE, other_open=None)
    assert note is not None and note.reopened and note.by == "U0BOB"
    assert reopening.sentence(note) == "fix undone by U0BOB at 00:00 UTC; incident re-opened"


def test_an_incident_that_did_not_end_resolved_by_that_write_stays_closed() -> None:
    for state, outcome, why in (
        (St.ESCALATED, "fixed", "escalated to people"),
        (St.CANCELLED, "fixed", "cancelled"),
        (St.RESOLVED, "no effect", "not the fix that resolved it"),
    ):
        note = reopening.decide(ended(state, outcome), UNDONE, other_open=None)
        assert note is not None and not note.reopened and why in note.why, (state, note)
        assert "left closed because" in reopening.sentence(note)


def test_another_open_incident_on_the_namespace_takes_it_over() -> None:
    note = reopening.decide(ended(St.RESOLVED), UNDONE, other_open="inc-2")
    assert note is not None and not note.reopened and "inc-2" in note.why


def test_nothing_to_say_while_open_or_for_a_write_of_no_attempt() -> None:
    assert reopening.decide(ended(St.AWAITING_APPROVAL), UNDONE, other_open=None) is None
    other = Undone(proposal_id="p9", undo_id="u1", by="U0BOB", at=NOW)
    assert reopening.decide(ended(St.RESOLVED), other, other_open=None) is None


def test_a_reopened_incident_waits_for_a_signal() -> None:
    note = reopening.decide(ended(St.RESOLVED), UNDONE, other_open=None)
    assert note is not None
    waiting = ended(St.DETECTING).model_copy(update={"fix_undone": note})
    assert reopening.waits_for_a_signal(waiting)
    assert not reopening.waits_for_a_signal(ended(St.DETECTING))
    assert incident(St.RESOLVED).can_move(St.DETECTING)  # re-opening is a legal move


def test_a_fix_kept_after_a_refused_step_is_the_fix_that_resolved_it() -> None:
    # Issue 18 F2: approve step 1, reject step 2 → resolved, "what it did is kept"; undoing
    # step 1 then said "left closed because that write was not the fix". Stored before the
    # outcome was one word, the attempt's outcome read "…; the steps done are kept (healthy)".
    for outcome in ("fixed", "prop-2 rejected: no restarts; the steps done are kept (healthy)"):
        note = reopening.decide(ended(St.RESOLVED, outcome), UNDONE, other_open=None)
        assert note is not None and note.reopened, (outcome, note)
