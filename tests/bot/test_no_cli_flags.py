"""Slack's words name no terminal flag (issue 18 §4): a person in Slack cannot type
``--force`` or ``--list``; where Slack offers a way (the Force undo button), the words say so.
The one option the slash command itself reads (``/stratus investigate <namespace> --cluster
<name>``, issue 19 §4) is Slack's own and may be named."""

from __future__ import annotations

import re
from pathlib import Path

import bot.text
from bot.commands import cluster_option

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*")
SLASH_OPTIONS = {"--cluster"}  # read by /stratus itself (bot.commands), typed in Slack


def test_bot_words_hold_no_cli_flag() -> None:
    source = Path(bot.text.__file__).read_text()
    strings = re.findall(r'"(?:[^"\\]|\\.)*"', source)
    found = [s for s in strings if set(FLAG.findall(s)) - SLASH_OPTIONS]
    assert not found, found


def test_the_slash_options_named_are_read_by_the_slash_command() -> None:
    assert cluster_option("--cluster b why?") == ("b", "why?")
