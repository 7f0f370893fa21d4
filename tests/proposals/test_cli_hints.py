"""The CLI's hints name the real proposal, never a placeholder, and say where else it is
answered when a bot serves the database. No socket: the CLI's words only."""

from __future__ import annotations

from cli import render
from proposals.errors import AnswerRefused


def test_the_ask_an_approver_hint_names_the_proposal() -> None:
    line = render.error_line(AnswerRefused("you are not an approver", subject="prop-0123abcd"))
    assert "`stratus proposals approve prop-0123abcd`" in line
    assert " ID" not in line
    nameless = render.error_line(AnswerRefused("you are not an approver"))
    assert "stratus proposals list" in nameless and " ID" not in nameless


def test_a_waiting_proposal_says_how_it_is_answered() -> None:
    alone = render.waiting_hint("prop-0123abcd", in_slack_too=False)
    assert "`stratus proposals approve prop-0123abcd`" in alone and "Slack" not in alone
    served = render.waiting_hint("prop-0123abcd", in_slack_too=True)
    assert "App Home" in served and "`/stratus status`" in served
