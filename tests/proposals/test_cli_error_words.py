"""The terminal's words for every error of the family (socket-free): each code renders its
facts on one line and a hint in terminal vocabulary — never Slack's; and the CLI and the bot
show the same facts for the same error."""

from __future__ import annotations

import pytest

from bot import text as slack
from bot.text import error_words
from cli import render
from cli import text as terminal
from store.errors import Remedy, StratusError
from tests.store.errors_catalog import FACT, sample, samples

SLACK_WORDS = ("button", "/stratus", "App Home", "card", ":no_entry:", "Slack")


@pytest.mark.parametrize("error", samples(), ids=lambda e: f"{type(e).__name__}-{e.remedy}")
def test_each_error_reads_as_a_terminal_line(error: StratusError) -> None:
    line = render.error_line(error)
    first, _, rest = line.partition("\n")
    assert first == FACT
    assert rest == "" or (rest.startswith("  hint: ") and "\n" not in rest), line
    for word in SLACK_WORDS:
        assert word not in rest, (word, line)


@pytest.mark.parametrize("error", samples(), ids=lambda e: f"{type(e).__name__}-{e.remedy}")
def test_the_cli_and_the_bot_show_the_same_facts(error: StratusError) -> None:
    cli_line = render.error_line(error)
    bot_line = error_words.error_line(error)
    assert FACT in cli_line and slack.esc(FACT) in bot_line
    # Both say what to do next, or neither does; and name the same objects when they do.
    assert bool(terminal.hint(error)) == (bot_line != slack.esc(FACT)), (cli_line, bot_line)
    for named in (error.subject or "", str(error.details.get("open", ""))):
        assert (named in cli_line) == (named in bot_line), (named, cli_line, bot_line)


def test_remedy_words_name_what_to_type() -> None:
    cancel = render.error_line(sample(StratusError, Remedy.CANCEL_OPEN))
    assert cancel.endswith("hint: cancel it first: `stratus proposals cancel prop-open1`")
    force = render.error_line(sample(StratusError, Remedy.FORCE))
    assert "--force" in force
    revoke = render.error_line(sample(StratusError, Remedy.REVOKE_GRANT))
    assert "`stratus policy revoke prop-subject1`" in revoke


def test_a_hint_from_the_store_stays_on_its_line() -> None:
    error = sample(StratusError, Remedy.CANCEL_OPEN)
    error.details["open"] = "prop-1\n\x1b[2Jforged"
    line = render.error_line(error)
    assert line.count("\n") == 1 and "\x1b" not in line
