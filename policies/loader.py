"""Loading a directory of policy files, with every error at file:line:column.

PyYAML's composer keeps the position of every node; a validation error's location
(``rules.2.match.actions.0``) is walked down that node tree to the line and column a person
should look at. A directory with any error does not load at all: the caller keeps the last
good policy, or — at start-up — refuses to start (fail closed).

The loader assumes a clumsy or hostile author. Which files a directory holds, and the entries
it refuses, is ``policies.files``; how a file is read before anything of it is trusted (size,
control characters, aliases, depth, duplicate and merge keys, tags, one document) is
``policies.safe_yaml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from policies.files import find_policy_files
from policies.model import Defaults, PolicyFile, Rule
from policies.problems import PolicyError, Problem
from policies.safe_yaml import (
    MAX_ALIAS_EXPANSION,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    compose_and_construct,
    problem_at,
    read_text,
)

# PolicyError and Problem live in policies.problems (shared with policies.files); callers
# import them from here, where policies are loaded.
__all__ = [
    "MAX_ALIAS_EXPANSION",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "Policy",
    "PolicyError",
    "Problem",
    "SourcedRule",
    "load",
    "parse_file",
]


@dataclass(frozen=True)
class SourcedRule:
    rule: Rule
    source: str  # file:line of the rule


@dataclass(frozen=True)
class Policy:
    rules: tuple[SourcedRule, ...] = ()
    defaults: Defaults = field(default_factory=Defaults)
    files: tuple[str, ...] = ()


def _locate(node: yaml.Node | None, loc: tuple[int | str, ...]) -> yaml.Node | None:
    """The deepest node along a pydantic error location (a key for an unknown key)."""
    current = node
    for index, part in enumerate(loc):
        if isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if key_node.value == part:
                    wants_key = loc[index + 1 :] == ("[key]",) or (
                        index == len(loc) - 1
                        and not isinstance(value_node, yaml.MappingNode | yaml.SequenceNode)
                    )
                    current = key_node if wants_key else value_node
                    break
            else:
                return current
        elif (
            isinstance(current, yaml.SequenceNode)
            and isinstance(part, int)
            and part < len(current.value)
        ):
            current = current.value[part]
        else:
            return current
    return current


def _message(error: ErrorDetails) -> str:
    loc = ".".join(
        str(p) for p in error["loc"] if not str(p).startswith("function-") and p != "[key]"
    )
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown key {error['loc'][-1]!r} (at {loc})"
    if kind == "missing":
        return f"{loc}: required key is missing"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return f"{loc}: expected {expected}, got {error.get('input')!r}"
    if kind in _STRICT_TYPES:
        given = error.get("input")
        shown = ("true" if given else "false") if isinstance(given, bool) else repr(given)
        return f"{loc}: expected {_STRICT_TYPES[kind]} written without quotes, got {shown}"
    text = str(error["msg"]).removeprefix("Value error, ")
    return f"{loc}: {text}" if loc else text


# Number and boolean fields are strict (policies.model._Strict): say what was written.
_STRICT_TYPES = {
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "bool_type": "true or false",
}


def _value_node(root: yaml.Node, loc: tuple[int | str, ...]) -> yaml.Node | None:
    """The value node at a pydantic location (``_locate`` answers a scalar's key)."""
    parent = _locate(root, loc[:-1]) if loc[:-1] else root
    if isinstance(parent, yaml.MappingNode):
        return next((v for k, v in parent.value if k.value == loc[-1]), None)
    if isinstance(parent, yaml.SequenceNode) and isinstance(loc[-1], int):
        return parent.value[loc[-1]] if loc[-1] < len(parent.value) else None
    return None


_SHORT_CLOCK = re.compile(r"[0-9]:[0-5][0-9]")


def _read_as(tag: str, value: Any) -> str | None:
    """What YAML 1.1 made of an unquoted scalar that is not text, in words."""
    kind = tag.rpartition(":")[2]
    if kind in ("int", "float"):
        return f"the number {value}"
    if kind == "bool":
        return "true" if value else "false"
    if kind == "null":
        return "null (nothing)"
    if kind == "timestamp":
        return "a date"
    return None


def _unquoted(root: yaml.Node, error: ErrorDetails) -> str | None:
    """For text written without quotes that YAML 1.1 read as something else, what it read and
    how to write it: ``end: 18:00`` is the base-60 number 1080, ``description: yes`` is true."""
    if error["type"] != "string_type" or not error["loc"]:
        return None
    node = _value_node(root, tuple(error["loc"]))
    if not isinstance(node, yaml.ScalarNode) or node.style is not None:
        return None
    read_as = _read_as(node.tag, error.get("input"))
    if read_as is None:
        return None
    text = node.value
    why = f"YAML reads an unquoted {text or '(empty value)'} as {read_as}"
    if ":" in text and node.tag.endswith(":int"):
        why += " (base 60)"
        text = "0" + text if _SHORT_CLOCK.fullmatch(text) else text
    loc = ".".join(str(p) for p in error["loc"])
    return f'{loc}: expected text, but {why}; write it in quotes: {error["loc"][-1]}: "{text}"'


def parse_file(path: Path) -> tuple[list[PolicyFile], list[Problem], list[yaml.Node]]:
    """The file's policy document (one at most), bounded and validated; problems carry
    positions."""
    label = str(path)
    text = read_text(path)
    if isinstance(text, Problem):
        return [], [text], []
    nodes, documents, problems = compose_and_construct(text, label)
    if problems:
        return [], problems, []
    if not documents:
        return [], [Problem(label, 1, 1, "the file is empty; expected an ApprovalPolicy")], []
    parsed = []
    for node, document in zip(nodes, documents, strict=True):
        try:
            parsed.append(PolicyFile.model_validate(document))
        except ValidationError as exc:
            for error in exc.errors():
                located = _locate(node, tuple(error["loc"])) or node
                problems.append(
                    problem_at(label, located, _unquoted(node, error) or _message(error))
                )
    return parsed, problems, nodes


def _rule_position(node: yaml.Node, index: int) -> int:
    located = _locate(node, ("rules", index))
    return (located.start_mark.line + 1) if located is not None else 1


def load(paths: list[Path]) -> Policy:
    """Load files and directories into one policy, or raise PolicyError with every problem."""
    found = find_policy_files(paths)
    problems = list(found.problems)
    rules: list[SourcedRule] = []
    defaults: Defaults | None = None
    defaults_from = ""
    seen: dict[str, str] = {}
    for path in found.files:
        parsed, file_problems, nodes = parse_file(path)
        problems.extend(file_problems)
        if file_problems:
            continue
        for document, node in zip(parsed, nodes, strict=True):
            if document.defaults is not None:
                if defaults is not None:
                    mark = (_locate(node, ("defaults",)) or node).start_mark
                    problems.append(
                        Problem(
                            str(path),
                            mark.line + 1,
                            mark.column + 1,
                            f"defaults are already set in {defaults_from}; "
                            "set them in one file only",
                        )
                    )
                defaults, defaults_from = document.defaults, str(path)
            for index, rule in enumerate(document.rules):
                line = _rule_position(node, index)
                where = f"{path}:{line}"
                if rule.name in seen:
                    problems.append(
                        Problem(
                            str(path),
                            line,
                            1,
                            f"rule name {rule.name!r} is already used at {seen[rule.name]}",
                        )
                    )
                seen[rule.name] = where
                rules.append(SourcedRule(rule, where))
    if problems:
        raise PolicyError(problems)
    return Policy(tuple(rules), defaults or Defaults(), tuple(str(f) for f in found.files))


def located(path: Path, node: yaml.Node, error: ValidationError) -> list[Problem]:
    """A validation error's problems, each at the file:line:column it is about."""
    return [
        problem_at(
            str(path), _locate(node, tuple(e["loc"])) or node, _unquoted(node, e) or _message(e)
        )
        for e in error.errors()
    ]
