"""The shell grammar the container interpreter reads (``lab/controllers/programs.py``):
commands, ``&&``/``||``/``;``/``&`` lists, pipelines, ``while``/``until``/``for``/``if`` and
``{ …; }``/``( … )`` groups, as a small tree of ``(kind, value)`` nodes. Redirections and command
substitutions are dropped: the interpreter only needs to know what runs, and how long.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

Node = tuple[str, Any]
_KEYWORDS = frozenset({"do", "done", "then", "else", "elif", "fi", "in", "}", ")"})
_OPERATORS = frozenset({";", "&&", "||", "&", "|", "\n", ";;"})


def parse(script: str) -> list[Node]:
    """The script's top-level commands."""
    nodes, _ = _parse_list(_tokens(script), 0, frozenset())
    return nodes


def _tokens(script: str) -> list[str]:
    script = re.sub(r"\$\(([^()]*)\)|`([^`]*)`", "", script)
    script = re.sub(r"(?<=\s)\d?(>>|>|<)&?\s*[^\s;&|]+", " ", script)
    script = script.replace("\n", " ; ")
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|(){}")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: sh reports a syntax error
        return ["exit", "2"]


def _parse_list(tokens: list[str], pos: int, stop: frozenset[str]) -> tuple[list[Node], int]:
    """Commands up to one of ``stop`` (a keyword in command position) or the end."""
    nodes: list[Node] = []
    chain: list[tuple[str, Node]] = []
    connector = ";"
    while pos < len(tokens):
        token = tokens[pos]
        if token in stop:
            break
        if token in _OPERATORS:
            if token == "&" and chain:
                chain[-1] = (chain[-1][0], ("bg", chain[-1][1]))
            if token in (";", "&", "\n", ";;"):
                if chain:
                    nodes.append(("seq", chain))
                chain, connector = [], ";"
            else:
                connector = token
            pos += 1
            continue
        node, pos = _parse_pipeline(tokens, pos, stop)
        chain.append((connector, node))
        connector = ";"
    if chain:
        nodes.append(("seq", chain))
    return nodes, pos


def _parse_pipeline(tokens: list[str], pos: int, stop: frozenset[str]) -> tuple[Node, int]:
    parts: list[Node] = []
    while True:
        node, pos = _parse_command(tokens, pos, stop)
        parts.append(node)
        if pos < len(tokens) and tokens[pos] == "|":
            pos += 1
            continue
        break
    return (parts[0] if len(parts) == 1 else ("pipe", parts)), pos


def _expect(tokens: list[str], pos: int, word: str) -> int:
    return pos + 1 if pos < len(tokens) and tokens[pos] == word else pos


def _parse_command(tokens: list[str], pos: int, stop: frozenset[str]) -> tuple[Node, int]:
    token = tokens[pos]
    if token in ("while", "until"):
        condition, pos = _parse_list(tokens, pos + 1, frozenset({"do"}))
        body, pos = _parse_list(tokens, _expect(tokens, pos, "do"), frozenset({"done"}))
        return ("loop", (token == "until", condition, body)), _expect(tokens, pos, "done")
    if token == "for" and pos + 1 < len(tokens):
        name, pos = tokens[pos + 1], pos + 2
        items: list[str] = []
        if pos < len(tokens) and tokens[pos] == "in":
            pos += 1
            while pos < len(tokens) and tokens[pos] not in (";", "do"):
                items.append(tokens[pos])
                pos += 1
        while pos < len(tokens) and tokens[pos] == ";":
            pos += 1
        body, pos = _parse_list(tokens, _expect(tokens, pos, "do"), frozenset({"done"}))
        return ("for", (name, items, body)), _expect(tokens, pos, "done")
    if token == "if":
        branches: list[tuple[list[Node] | None, list[Node]]] = []
        pos += 1
        while True:
            condition, pos = _parse_list(tokens, pos, frozenset({"then"}))
            body, pos = _parse_list(
                tokens, _expect(tokens, pos, "then"), frozenset({"elif", "else", "fi"})
            )
            branches.append((condition, body))
            if pos < len(tokens) and tokens[pos] == "elif":
                pos += 1
                continue
            break
        if pos < len(tokens) and tokens[pos] == "else":
            body, pos = _parse_list(tokens, pos + 1, frozenset({"fi"}))
            branches.append((None, body))
        return ("if", branches), _expect(tokens, pos, "fi")
    if token in ("{", "("):
        closing = "}" if token == "{" else ")"
        body, pos = _parse_list(tokens, pos + 1, frozenset({closing}))
        return ("group", body), _expect(tokens, pos, closing)
    words: list[str] = []
    while pos < len(tokens):
        token = tokens[pos]
        if token in _OPERATORS or (not words and token in stop) or token in ("}", ")"):
            break
        if not words and token in _KEYWORDS and token in stop:
            break
        words.append(token)
        pos += 1
    if not words:  # a stray keyword or operator: skip it
        return ("cmd", []), pos + 1
    return ("cmd", words), pos
