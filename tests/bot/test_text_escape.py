"""Text from the cluster, from people and from models is inert in Slack: a log line or an alert
that says ``<!channel>`` or carries a labelled link is shown, never pings or disguises a link.
Our own mentions of users and user groups still work."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from bot import text
from bot.text import card_words, command_words, error_words, thread_words
from store.errors import Remedy, StratusError

HOSTILE = "boom <!channel> <@U0BOB> <https://evil.example|runbook> & more"
RENDERERS: list[Callable[[str], str]] = [
    command_words.unknown_command,
    command_words.bad_namespace,
    lambda s: command_words.failed("what", s),
    lambda s: command_words.paused("U0ALICE", s),
    thread_words.diagnosis_line,
    lambda s: thread_words.findings(1, [s]),
    lambda s: thread_words.diagnosis("Deployment/geo", "network", s),
    lambda s: thread_words.evidence("log", s, s),
    lambda s: thread_words.history([s]),
    lambda s: thread_words.attempt_started(1, s),
    thread_words.state_note,
    lambda s: thread_words.superseded_notice("p-1", None, s),
    lambda s: card_words.telemetry("1/1", 0, "1", [s], [s]),
    card_words.warning,
    lambda s: card_words.ended("failed", s),
    card_words.refused,
    lambda s: error_words.stale("expired", s),
    error_words.not_approver,
    lambda s: thread_words.answer_why("Deployment/geo", s, []),
    lambda s: thread_words.answer_alternatives([s]),
    lambda s: thread_words.answer_state("diagnosing", s),
    lambda s: thread_words.summary_head("hotel", "resolved", s),
    thread_words.root_cause,
    lambda s: thread_words.timeline_line("12:00:00", s),
    lambda s: thread_words.incident_context("inc-1", s, "offline"),
    thread_words.model_fallback,
    *(
        lambda s, r=remedy: error_words.refused_error(
            StratusError(s, subject=s, remedy=r, details={"open": s})
        )
        for remedy in Remedy
    ),
    lambda s: error_words.failed_error("what", StratusError(s, remedy=Remedy.CANCEL_OPEN)),
]


@pytest.mark.parametrize("render", RENDERERS)
def test_untrusted_text_cannot_mention_or_link(render: Callable[[str], str]) -> None:
    shown = render(HOSTILE)
    assert "<!channel>" not in shown and "<@U0BOB>" not in shown and "<https://" not in shown
    assert "&lt;!channel&gt;" in shown


def test_escaping_is_slacks_three_characters_only() -> None:
    assert text.esc("a & b <c> `d` *e*") == "a &amp; b &lt;c&gt; `d` *e*"


def test_our_own_mentions_still_mention() -> None:
    assert text.who("U0ALICE") == "<@U0ALICE>"
    assert "<!subteam^S0SRE>" in text.approvers(["S0SRE"])
    assert "<@U0ALICE>" in command_words.paused("U0ALICE", "<!here>")


# Text someone else controls — a model's intent, a cluster's event message — that tries every
# trick mrkdwn offers: formatting, a backtick to break out of a code span, mentions, a link.
FORMATTED = "*bold* _it_ ~gone~ `x` ``` <!here> <@U0BOB> <http://evil.example|docs>\nsecond line"
QUOTED: list[Callable[[str], str]] = [
    lambda s: command_words.status_pending("prop-1", s, 0, 1),
    lambda s: thread_words.attempt_started(1, s, "model"),
    thread_words.state_note,
    lambda s: thread_words.undone_notice(s, "U0ALICE", "undo-1"),
    lambda s: card_words.high_risk_confirm(s, s),
    card_words.undo_confirm,
    lambda s: error_words.chose_other("U0ALICE", s),
    lambda s: thread_words.answer_state("diagnosing", s),
    lambda s: thread_words.action_line(s, "by policy", "Executed", "healthy"),
    lambda s: thread_words.timeline_line("12:00:00", s),
    lambda s: command_words.home_pending("prop-1", s, None),
    card_words.reject_intro,
    lambda s: command_words.grant_line("g-1", "scale", "hotel", s, "U0ALICE", text_now()),
]


def text_now() -> datetime:
    return datetime(2025, 1, 1, tzinfo=UTC)


def code_spans_hold(shown: str) -> None:
    """Every piece of ``FORMATTED`` sits inside one inline code span on one line."""
    assert "\n" not in shown.split("`", 1)[1]
    spans = shown.split("`")
    assert len(spans) % 2 == 1, shown  # every span is closed
    inside = " ".join(spans[1::2])
    outside = " ".join(spans[0::2])
    assert "bold" in inside and "second line" in inside
    for mark in ("*bold*", "_it_", "~gone~", "evil", "<!here>", "<@U0BOB>", "<http"):
        assert mark not in outside, (mark, shown)
    assert "<" not in inside and f"{text.LOOKALIKE_BACKTICK}x{text.LOOKALIKE_BACKTICK}" in inside


@pytest.mark.parametrize("render", QUOTED)
def test_intents_and_event_messages_are_quoted_data(render: Callable[[str], str]) -> None:
    code_spans_hold(render(FORMATTED))


def test_the_model_s_words_say_so() -> None:
    assert "the model's words" in thread_words.attempt_started(1, "scale it", "model")
    assert "the model" not in thread_words.attempt_started(1, "scale it", "offline")
    assert text.planner_source("llm") == "model"


def test_notification_text_is_inert_too() -> None:
    for shown in (card_words.card_fallback(FORMATTED, "awaiting_approval"), text.inert(FORMATTED)):
        for mark in ("*bold*", "_it_", "~gone~", "`", "<!here>", "<@U0BOB>", "<http"):
            assert mark not in shown, (mark, shown)


# Formatting a reason, a model, an alert or a log line may carry to make a card lie: a line of
# its own, a bold field, an emoji, code, a bidi override (U+202E) and a NUL.
FORGED = "ok\n*State*\n:white_check_mark: Executed `x` _it_ ~s~ \u202edesrever\u0000end"
INERT_RENDERERS: list[Callable[[str], str]] = [
    lambda s: card_words.ended("rejected", s),
    lambda s: error_words.stale("rejected", s),
    lambda s: thread_words.superseded_notice("p-1", None, s),
    lambda s: command_words.paused("U0ALICE", s),
    thread_words.diagnosis_line,
    lambda s: thread_words.diagnosis_line(s, "model"),
    lambda s: thread_words.diagnosis(s, "network", s, "model"),
    lambda s: thread_words.evidence("log", s, s),
    lambda s: thread_words.history([s]),
    lambda s: thread_words.findings(1, [s]),
    lambda s: thread_words.answer_why(s, s, []),
    lambda s: thread_words.answer_alternatives([s]),
    lambda s: thread_words.summary_head("hotel", "cancelled", s),
    thread_words.root_cause,
    lambda s: thread_words.alert_line(s, s, s, s),
    lambda s: thread_words.alert_cleared_line(s, s),
    lambda s: thread_words.alerts_still_firing([s]),
    lambda s: thread_words.alerts_outcome([s], False, "2025-01-01T00:00:00"),
    lambda s: thread_words.incident_context("inc-1", s, "offline"),
    thread_words.model_answer,
]


def _outside_code(shown: str) -> str:
    """What Slack would format: the text outside code spans and blocks."""
    import re

    return re.sub(r"```.*?```|`[^`]*`", "", shown, flags=re.S)


@pytest.mark.parametrize("render", INERT_RENDERERS)
def test_untrusted_text_cannot_format_a_card_or_hide_behind_control_characters(
    render: Callable[[str], str],
) -> None:
    shown = render(FORGED)
    assert "\u202e" not in shown and "\u0000" not in shown
    assert "U+202E" in shown and "U+0000" in shown
    loose = _outside_code(shown)
    for live in ("*State*", "Executed", "_it_", "~s~", "desrever"):
        assert live not in loose, (live, shown)


def test_notification_text_is_one_line_without_formatting_or_control_characters() -> None:
    shown = text.inert(FORGED)
    assert "\n" not in shown and "\u202e" not in shown and "\u0000" not in shown
    for live in ("*State*", ":white_check_mark:", "_it_", "~s~", "`"):
        assert live not in shown, (live, shown)


def test_a_model_s_answer_keeps_its_lines_but_is_labelled_as_the_model_s() -> None:
    shown = thread_words.model_answer("first line\nsecond ``` line <!here>")
    assert shown.startswith("```") and "first line\nsecond" in shown
    assert shown.count("```") == 2 and "&lt;!here&gt;" in shown
    assert "the model's words" in shown and thread_words.ANSWER_MODEL_NOTE in shown


def test_the_parked_notice_s_remedy_fits_the_error() -> None:
    limited = thread_words.parked_notice("inc-1", "hotel", "ratelimited", 10)
    assert "invite me" not in limited and "wait a minute" in limited
    outside = thread_words.parked_notice("inc-1", "hotel", "not_in_channel", 10)
    assert "invite me to this channel" in outside
    assert "invite me" not in thread_words.parked_notice("inc-1", "hotel", "fatal_error", 10)
    assert "follows in this channel" not in command_words.investigating("hotel")


def test_telemetry_error_lines_and_event_reasons_are_quoted_data() -> None:
    """A log line or an Event's reason (anyone who can create an Event writes it) that carries
    a backtick cannot close its code span and format what follows."""
    shown = card_words.telemetry("1/1", 0, "1", [FORMATTED], [FORMATTED])
    for line in shown.splitlines()[1:]:
        _, _, said = line.partition(": ")
        code_spans_hold(said)


def test_names_read_from_metrics_labels_format_nothing() -> None:
    """A caller's or a service's name comes from a Prometheus label, which whoever runs the
    workload sets: shown as itself, never as markup."""
    for shown in (
        card_words.caller_figure(FORMATTED, "1% → 0%"),
        card_words.metrics_title("5m", [FORMATTED]),
    ):
        for mark in ("*bold*", "_it_", "~gone~", "`x`", "<!here>", "<@U0BOB>", "<http"):
            assert mark not in shown, (mark, shown)
