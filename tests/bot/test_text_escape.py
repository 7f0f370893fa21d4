"""Text from the cluster, from people and from models is inert in Slack: a log line or an alert
that says ``<!channel>`` or carries a labelled link is shown, never pings or disguises a link.
Our own mentions of users and user groups still work."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bot import text

HOSTILE = "boom <!channel> <@U0BOB> <https://evil.example|runbook> & more"
RENDERERS: list[Callable[[str], str]] = [
    text.unknown_command,
    text.bad_namespace,
    lambda s: text.failed("what", s),
    lambda s: text.paused("U0ALICE", s),
    text.diagnosis_line,
    lambda s: text.findings(1, [s]),
    lambda s: text.diagnosis("Deployment/geo", "network", s),
    lambda s: text.evidence("log", s, s),
    lambda s: text.history([s]),
    lambda s: text.attempt_started(1, s),
    text.state_note,
    lambda s: text.superseded_notice("p-1", None, s),
    lambda s: text.telemetry("1/1", 0, "1", [s], [s]),
    text.warning,
    lambda s: text.ended("failed", s),
    text.refused,
    lambda s: text.stale("expired", s),
    text.not_approver,
    lambda s: text.answer_why("Deployment/geo", s, []),
    lambda s: text.answer_alternatives([s]),
    lambda s: text.answer_state("diagnosing", s),
    lambda s: text.summary_head("hotel", "resolved", s),
    text.root_cause,
    lambda s: text.timeline_line("12:00:00", s),
    lambda s: text.incident_context("inc-1", s, "offline"),
    text.model_fallback,
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
    assert "<@U0ALICE>" in text.paused("U0ALICE", "<!here>")
