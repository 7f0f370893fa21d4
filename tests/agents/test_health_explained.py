"""The health score explains itself (issue 18 §3): a card, a verification line and the parent
message say what the number is made of, on what scale, and why a score above 0 counts as
healthy when it does — pure functions of the stored scores, no socket."""

from __future__ import annotations

import datetime as dt

from agents.health import HealthScore, breakdown
from bot import cards
from bot.text import thread_words
from incidents.model import Incident, IncidentState

BROKEN = HealthScore(
    parts={"unready_pods": 2, "unavailable_replicas": 1, "new_warning_events": 0}
).to_dict()
FIXED = HealthScore(parts={"unready_pods": 0, "unavailable_replicas": 0}).to_dict()
# The pods are back; the request rate still remembers the errors from before the fix.
LAGGING = HealthScore(
    parts={"unready_pods": 0, "erroring_services": 1}, details={}, metrics="prometheus"
).to_dict()


def test_the_breakdown_adds_up_to_the_score_heaviest_first() -> None:
    parts = breakdown(BROKEN)
    assert [(p.name, p.count, p.points) for p in parts] == [
        ("unavailable_replicas", 1, 2),
        ("unready_pods", 2, 2),
    ]
    assert sum(p.points for p in parts) == BROKEN["total"] == 4
    assert breakdown(FIXED) == [] and breakdown(None) == []
    assert [p.lenient for p in breakdown(LAGGING)] == [True]


def test_a_fixed_score_says_what_was_wrong() -> None:
    line = cards.health_line(BROKEN, FIXED)
    assert (
        line == "4 → 0 (healthy): was 1 unavailable replica (2 points), 2 unready pods (2 points)"
    )


def test_a_score_still_wrong_says_what_is_wrong_now() -> None:
    worse = HealthScore(parts={"unready_pods": 1, "crash_looping_containers": 1}).to_dict()
    line = cards.health_line(BROKEN, worse)
    assert line == "4: 1 crash-looping container (3 points), 1 unready pod (1 point)"


def test_a_healthy_score_above_zero_says_why_it_counts_as_healthy() -> None:
    assert LAGGING["healthy"] and LAGGING["total"] == 2
    line = cards.health_line(BROKEN, LAGGING)
    assert line.startswith("4 → 2 (healthy): now 1 service failing requests (2 points)"), line
    assert "counts as healthy" in line and "lag a fix" in line


def test_the_parent_message_and_the_verification_lines_carry_the_parts_and_the_scale() -> None:
    at = dt.datetime(2026, 11, 25, 10, 0, tzinfo=dt.UTC)
    incident = Incident(
        id="inc-1",
        namespace="hotel",
        requester="U0DAVE",
        state=IncidentState.RESOLVED,
        created_at=at,
        updated_at=at,
        health_at_start=BROKEN,
        health_now=FIXED,
    )
    shown = str(cards.incident_parent(incident, at))
    assert "was 1 unavailable replica (2 points)" in shown
    assert "0 means nothing wrong" in shown
    verified = thread_words.verified_health(1, "healthy", cards.health_line(BROKEN, LAGGING))
    assert "health score 4 → 2 (healthy): now 1 service failing requests" in verified
    assert "counts as healthy" in verified


def test_the_terminal_names_the_parts_too() -> None:
    from click.testing import CliRunner

    from cli import render

    at = dt.datetime(2026, 11, 25, 10, 0, tzinfo=dt.UTC)
    incident = Incident(
        id="inc-1",
        namespace="hotel",
        requester="cli:dave",
        state=IncidentState.RESOLVED,
        created_at=at,
        updated_at=at,
        health_at_start=BROKEN,
        health_now=LAGGING,
    )
    runner = CliRunner()
    with runner.isolation() as (out, _, _):
        render.incident_summary(incident)
        printed = out.getvalue().decode()
    line = next(x for x in printed.splitlines() if x.startswith("health:"))
    assert line.startswith("health:    score 2 (healthy): erroring services 1;"), line
    assert "lag a fix" in line and "0 means nothing wrong" in printed


def test_failing_requests_read_as_words() -> None:
    """Issue 18: the part read "2: 1 failure callers log"."""
    assert thread_words.health_part("failing_requests", 1, 2) == (
        "1 failing request logged by a caller (2 points)"
    )
    assert thread_words.health_part("failing_requests", 2, 4) == (
        "2 failing requests logged by callers (4 points)"
    )
    scaled_to_zero = HealthScore(
        parts={"services_without_endpoints": 1, "failing_requests": 1}
    ).to_dict()
    assert cards.health_line(scaled_to_zero, scaled_to_zero) == (
        "5: 1 service without ready endpoints (3 points), "
        "1 failing request logged by a caller (2 points)"
    )
