"""Loading a directory of policy files, with every error at file:line:column.

PyYAML's composer keeps the position of every node; a validation error's location
(``rules.2.match.actions.0``) is walked down that node tree to the line and column a person
should look at. A directory with any error does not load at all: the caller keeps the last
good policy, or — at start-up — refuses to start (fail closed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from policies.model import Defaults, PolicyFile, Rule


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


class PolicyError(Exception):
    """One or more policy files are invalid; ``problems`` lists each with its position."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


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
                    current = (
                        key_node
                        if index == len(loc) - 1
                        and not isinstance(value_node, yaml.MappingNode | yaml.SequenceNode)
                        else value_node
                    )
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
    loc = ".".join(str(p) for p in error["loc"] if not str(p).startswith("function-"))
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown key {error['loc'][-1]!r} (at {loc})"
    if kind == "missing":
        return f"{loc}: required key is missing"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return f"{loc}: expected {expected}, got {error.get('input')!r}"
    text = str(error["msg"]).removeprefix("Value error, ")
    return f"{loc}: {text}" if loc else text


def _compose_and_construct(text: str) -> tuple[list[yaml.Node], list[Any]]:
    """Parse once: keep each document's node tree (for positions) and its Python value."""
    loader = yaml.SafeLoader(text)
    nodes: list[yaml.Node] = []
    documents: list[Any] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            value = loader.construct_document(node)
            if value is not None:
                nodes.append(node)
                documents.append(value)
    finally:
        loader.dispose()
    return nodes, documents


def parse_file(path: Path) -> tuple[list[PolicyFile], list[Problem], list[yaml.Node]]:
    """Every document of one file, validated; problems carry positions."""
    label = str(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        return [], [Problem(label, 1, 1, f"cannot read the file: {exc}")], []
    try:
        nodes, documents = _compose_and_construct(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return [], [Problem(label, line, column, f"invalid YAML: {exc.problem or exc.context}")], []
    except yaml.YAMLError as exc:
        return [], [Problem(label, 1, 1, f"invalid YAML: {exc}")], []
    if not documents:
        return [], [Problem(label, 1, 1, "the file is empty; expected an ApprovalPolicy")], []
    parsed, problems = [], []
    for node, document in zip(nodes, documents, strict=True):
        try:
            parsed.append(PolicyFile.model_validate(document))
        except ValidationError as exc:
            for error in exc.errors():
                located = _locate(node, tuple(error["loc"])) or node
                mark = located.start_mark
                problems.append(Problem(label, mark.line + 1, mark.column + 1, _message(error)))
    return parsed, problems, nodes


def _rule_position(node: yaml.Node, index: int) -> int:
    located = _locate(node, ("rules", index))
    return (located.start_mark.line + 1) if located is not None else 1


def policy_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
            )
        else:
            found.append(path)
    return found


def load(paths: list[Path]) -> Policy:
    """Load files and directories into one policy, or raise PolicyError with every problem."""
    files = policy_files(paths)
    problems: list[Problem] = []
    for path in paths:
        if not path.exists():
            problems.append(Problem(str(path), 1, 1, "no such file or directory"))
    rules: list[SourcedRule] = []
    defaults: Defaults | None = None
    defaults_from = ""
    seen: dict[str, str] = {}
    for path in files:
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
    return Policy(tuple(rules), defaults or Defaults(), tuple(str(f) for f in files))
