"""An attempt's outcome is one word, with why a step stopped it kept apart (issue 18 F2), and
incidents stored before the word still read right. No store, no cluster, no socket."""

from __future__ import annotations

from incidents import memory
from incidents.model import OUTCOMES, outcome_word, stop_word
from tests.incidents.test_continuation import attempt


def test_every_word_reads_as_itself() -> None:
    assert [w for w in OUTCOMES if outcome_word(w) != w] == []


def test_the_free_text_stored_before_reads_as_its_word() -> None:
    kept = "prop-2 rejected: no restarts at peak; the steps done are kept ({})"
    assert outcome_word(kept.format("healthy")) == "fixed"
    assert outcome_word(kept.format("better")) == "improved"
    assert outcome_word("prop-2 rejected: no restarts at peak") == "rejected"
    assert outcome_word("denied by policy: denied: no-prod") == "denied"
    assert outcome_word("complete when cancelled; its changes stay (not verified)") == (
        "complete when cancelled"
    )
    assert outcome_word("") == ""


def test_why_a_step_stopped_an_attempt_is_a_word() -> None:
    assert stop_word("prop-1 expired") == "expired"
    assert stop_word("prop-1 cancelled: the incident changed") == "cancelled"
    assert stop_word("failed: the server refused it") == "failed"
    assert stop_word("no change: every object already looked as wanted") == "no change"
    # A reason that merely mentions a word after the colon is not that word.
    assert stop_word("failed: prop-1 rejected the lock") == "failed"


def test_memory_counts_a_fix_kept_after_a_refused_step_as_a_fix() -> None:
    # Issue 18 F2: "Seen before" recorded the real fix as "rejected".
    stored = "prop-2 rejected: no restarts; the steps done are kept (healthy)"
    fixed = attempt(("p1", "p2")).model_copy(update={"outcome": stored, "verdict": "healthy"})
    assert memory.taught(fixed) == "fixed"
    now = fixed.model_copy(update={"outcome": "fixed", "stopped": "prop-2 rejected: no"})
    assert memory.taught(now) == "fixed"
    kept = fixed.model_copy(update={"outcome": "fix kept", "verdict": "worse"})
    assert memory.taught(kept) is None  # a too-early look teaches nothing about the fix
