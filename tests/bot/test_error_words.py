"""Slack's words for every error of the family (socket-free): each code renders a sentence
with the error's facts and what to do next in Slack's vocabulary — never a terminal's."""

from __future__ import annotations

import pytest

from bot import text
from bot.text import error_words
from store.errors import Remedy, StratusError
from tests.store.errors_catalog import FACT, sample, samples

TERMINAL_WORDS = ("--force", "--", "`stratus ", "stratus audit", "hint:", "run the command")


@pytest.mark.parametrize("error", samples(), ids=lambda e: f"{type(e).__name__}-{e.remedy}")
def test_each_error_reads_as_a_slack_sentence(error: StratusError) -> None:
    line = error_words.error_line(error)
    assert line.startswith(text.esc(FACT)), line
    assert "\n" not in line
    fact_free = line.removeprefix(text.esc(FACT))
    for word in TERMINAL_WORDS:
        assert word not in fact_free, (word, line)
    refused = error_words.refused_error(error)
    assert refused.startswith(":no_entry: Nothing changed: ") and line in refused


def test_facts_from_the_store_stay_inert() -> None:
    error = sample(StratusError, Remedy.CANCEL_OPEN)
    error.message = "<!channel> look"
    error.details["open"] = "<@U123>"
    line = error_words.error_line(error)
    assert "<!channel>" not in line and "<@U123>" not in line
    assert "&lt;@U123&gt;" in line


def test_undo_over_a_change_names_the_fact_not_a_flag() -> None:
    line = error_words.failed_error("Undo", sample(StratusError, Remedy.FORCE))
    assert line.startswith(":warning: Undo: ") and "--force" not in line
    assert "explicit force" in line
