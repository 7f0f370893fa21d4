"""Reading a YAML file that a clumsy or hostile author wrote, with every problem at
file:line:column: the policy files and the other configuration Stratus reads beside them.

A file is plain UTF-8 text (no control characters) read only up to ``MAX_FILE_BYTES``, and its
composed node graph is checked before anything is constructed: aliases may expand it by at most
``MAX_ALIAS_EXPANSION`` nodes (a "billion laughs" document stops after that many steps),
nesting is bounded by ``MAX_DEPTH``, a key repeated in one mapping (where YAML would silently
keep the last, turning ``decision: deny`` into ``allow``) is an error, as is a merge key
(``<<``), which resolves conflicting keys just as silently, and an explicit tag outside YAML's
core schema. A file holds one YAML document: a second one (``---``) could hide rules below the
one a reviewer read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from policies.problems import Problem

MAX_FILE_BYTES = 1 << 20  # a policy file is a few kilobytes; 1 MiB is generous
MAX_ALIAS_EXPANSION = 10_000  # nodes reached again through aliases, over a whole file
MAX_DEPTH = 50  # a policy nests about 7 levels deep


def problem_at(label: str, node: yaml.Node, message: str) -> Problem:
    return Problem(label, node.start_mark.line + 1, node.start_mark.column + 1, message)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


class _Refused(Exception):
    """A document out of bounds; raised at the first node over a bound, so the walk stops."""

    def __init__(self, node: yaml.Node, message: str) -> None:
        super().__init__(message)
        self.node = node
        self.message = message


class _Bounds:
    """Walks composed documents the way construction and validation would expand them.

    An alias is the same node object reached again, so a walk without memo sees exactly the
    expansion; counting the nodes seen again and stopping at the bound keeps the check itself
    cheap whatever the document claims to expand to. One instance spans a file, so splitting a
    bomb into many small documents does not multiply the budget.
    """

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.expanded = 0
        self._ancestors: set[int] = set()

    def visit(self, node: yaml.Node, depth: int = 0) -> None:
        key = id(node)
        if key in self._ancestors:
            raise _Refused(
                node, "an alias refers to a node that contains itself; a policy is not recursive"
            )
        if depth > MAX_DEPTH:
            raise _Refused(
                node, f"the YAML is nested more than {MAX_DEPTH} levels deep; a policy needs ~7"
            )
        if key in self.seen:
            self.expanded += 1
            if self.expanded > MAX_ALIAS_EXPANSION:
                raise _Refused(
                    node,
                    f"aliases expand this file by more than {MAX_ALIAS_EXPANSION:,} nodes; a "
                    "policy needs a handful at most, so this looks like an alias bomb "
                    '("billion laughs") and is refused unread',
                )
        self.seen.add(key)
        self._ancestors.add(key)
        for child in _children(node):
            self.visit(child, depth + 1)
        self._ancestors.discard(key)


def _nodes(root: yaml.Node) -> Iterator[yaml.Node]:
    """Every node of a document once (aliases share nodes), in document order."""
    seen: set[int] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        pending.extend(reversed(_children(node)))


def _mappings(root: yaml.Node) -> Iterator[yaml.MappingNode]:
    """Every mapping of a document once, in document order."""
    for node in _nodes(root):
        if isinstance(node, yaml.MappingNode):
            yield node


def _duplicate_keys(root: yaml.Node, label: str) -> list[Problem]:
    """A key repeated in one mapping, at the repeat's position.

    YAML keeps the last value silently: a second ``decision:`` turns deny into allow, a second
    ``rules:`` discards the first list. Keys compare by tag and text, so ``decision`` and
    ``"decision"`` are the same key, as they are once constructed.
    """
    problems = []
    for mapping in _mappings(root):
        first: dict[tuple[str, str], yaml.Node] = {}
        for key_node, _ in mapping.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue  # a complex key fails construction with its own error
            identity = (key_node.tag, key_node.value)
            if identity not in first:
                first[identity] = key_node
                continue
            earlier = first[identity].start_mark.line + 1
            problems.append(
                problem_at(
                    label,
                    key_node,
                    f"duplicate key {key_node.value!r} (first at line {earlier}); YAML would "
                    "silently keep only this one: remove one of them",
                )
            )
    return problems


MERGE_TAG = "tag:yaml.org,2002:merge"


def _merge_keys(root: yaml.Node, label: str) -> list[Problem]:
    """Every merge key (``<<``, or a key tagged ``!!merge``), at its position.

    A merge resolves conflicts silently: ``<<: [*deny_rule, *allow_rule]`` keeps the first
    mapping's ``decision``, and a key written beside the merge overrides what it brought, so a
    rule can read as one decision and load as another. Policy files refuse merges altogether;
    an alias of a whole value (``approvers: *sre``) still works.
    """
    return [
        problem_at(
            label,
            key_node,
            "merge keys (<<) are not allowed in policy files: a merge resolves conflicting "
            "keys silently (a merged deny can load as allow); write the keys out, or alias a "
            "whole value (approvers: *sre)",
        )
        for mapping in _mappings(root)
        for key_node, _ in mapping.value
        if key_node.tag == MERGE_TAG
    ]


# What a policy file may not hold, raw or written as an escape: C0 controls but tab and line
# feed, DEL, C1 controls, lone surrogates (no UTF-8 exists for them), the noncharacters
# U+FFFE/U+FFFF, and the bidirectional overrides and isolates, which show a reviewer the text
# in another order than YAML reads it. Policy text is printed on terminals and in Slack, where
# an ESC starts an escape sequence and a carriage return rewrites the line; in a file it is a
# paste or binary mishap. The raw check leaves carriage returns alone (CRLF line ends) and
# lets YAML read NEL as the line break it is.
_BIDI = "\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff{_BIDI}]")
_RAW_CONTROL = re.compile(
    f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff{_BIDI}]"
)
_LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")


def _control_text(char: str) -> str:
    if re.fullmatch(f"[{_BIDI}]", char):
        # "Trojan Source": a reviewer would read the file in another order than YAML does.
        return (
            f"control character U+{ord(char):04X} (a bidirectional override, which reorders "
            "how the text around it is shown)"
        )
    return f"control character U+{ord(char):04X}"


def _raw_control(text: str, label: str) -> Problem | None:
    """The first control character in the file's text, at its line and column (as YAML
    counts them), before PyYAML's reader refuses the whole file without a position."""
    found = _RAW_CONTROL.search(text)
    if found is None:
        return None
    before = text[: found.start()]
    breaks = list(_LINE_BREAK.finditer(before))
    line = len(breaks) + 1
    column = found.start() - (breaks[-1].end() if breaks else 0) + 1
    return Problem(
        label,
        line,
        column,
        f"{_control_text(found.group())} in the file: a policy file is plain text (tab and "
        "line breaks only), and its text is printed on terminals and in Slack; remove it",
    )


def _scalar_controls(root: yaml.Node, label: str) -> list[Problem]:
    """A control character a quoted escape (``"\\e[2J"``, ``"\\0"``, ``"\\r"``) put in a
    key or value, at the scalar's position."""
    problems = []
    for node in _nodes(root):
        if isinstance(node, yaml.ScalarNode):
            found = _CONTROL.search(node.value)
            if found is not None:
                problems.append(
                    problem_at(
                        label,
                        node,
                        f"{_control_text(found.group())} in this value (written as an "
                        "escape): policy text is printed on terminals and in Slack, where "
                        "control characters rewrite what is shown; remove it (tab and "
                        "line breaks are fine)",
                    )
                )
    return problems


def _check_document(node: yaml.Node, bounds: _Bounds, label: str) -> list[Problem]:
    """Problems of one composed document, found before anything is constructed."""
    try:
        bounds.visit(node)
    except _Refused as refused:
        return [problem_at(label, refused.node, refused.message)]
    return _merge_keys(node, label) + _duplicate_keys(node, label) + _scalar_controls(node, label)


def _second_document(label: str, mark: yaml.Mark) -> Problem:
    """A file holds one policy document. YAML allows several (``---``), but a file meant to be
    replaced whole could then hide a second policy below the one its reviewer read."""
    return Problem(
        label,
        mark.line + 1,
        1,
        "a second YAML document ('---'): a policy file holds one policy document, so no rule "
        "hides below the one a reviewer reads; move it to a file of its own",
    )


def _yaml_problem(label: str, error: yaml.YAMLError) -> Problem:
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return Problem(label, line, column, f"invalid YAML: {error.problem or error.context}")
    return Problem(label, 1, 1, f"invalid YAML: {error}")


class _TagNotingLoader(yaml.SafeLoader):
    """SafeLoader that notes every node written with an explicit tag. The composed node keeps
    only the resolved tag, so ``!!int 2`` and ``2`` look alike there; the event still says."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.tagged: list[tuple[yaml.Mark, str]] = []

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        tag = getattr(event, "tag", None)
        if tag is not None:
            self.tagged.append((event.start_mark, tag))
        return super().compose_node(parent, index)


def _explicit_tags(loader: _TagNotingLoader, label: str) -> list[Problem]:
    """``kinds: [!!binary RGVwbG95bWVudA==]`` loads as Deployment: a tag makes a value mean
    something other than what its line shows, so a policy file has none."""
    problems = []
    for mark, tag in loader.tagged:
        shown = "!!" + tag.removeprefix(_CORE_TAG) if tag.startswith(_CORE_TAG) else tag
        problems.append(
            Problem(
                label,
                mark.line + 1,
                mark.column + 1,
                f"an explicit YAML tag ({shown}) on a value: policy values are read as written "
                "(text, numbers, true/false, lists, mappings), so a rule means what its lines "
                "show; remove the tag and write the value itself",
            )
        )
    loader.tagged.clear()
    return problems


_CORE_TAG = "tag:yaml.org,2002:"


def compose_and_construct(
    text: str, label: str
) -> tuple[list[yaml.Node], list[Any], list[Problem]]:
    """Parse once: keep each document's node tree (for positions) and its Python value.

    Every document is composed and checked before any is constructed, so nothing is expanded
    that was not counted first.
    """
    control = _raw_control(text, label)
    if control is not None:
        return [], [], [control]
    bounds = _Bounds()
    nodes: list[yaml.Node] = []
    try:
        loader = _TagNotingLoader(text)
    except yaml.YAMLError as error:  # the reader refuses a character _RAW_CONTROL let through
        return [], [], [_yaml_problem(label, error)]
    try:
        while loader.check_node():
            if nodes:
                marker = loader.peek_event().start_mark  # type: ignore[no-untyped-call]
                return [], [], [_second_document(label, marker)]
            node = loader.get_node()
            if node is None:
                break
            problems = _check_document(node, bounds, label) or _explicit_tags(loader, label)
            if problems:
                return [], [], problems
            nodes.append(node)
        values = [loader.construct_document(node) for node in nodes]
    except yaml.YAMLError as error:
        return [], [], [_yaml_problem(label, error)]
    except (ValueError, OverflowError, TypeError) as error:
        # PyYAML's resolvers promise more than its constructors keep: 2024-13-45 resolves as
        # a date that datetime refuses, a 5,000-digit integer exceeds Python's limit.
        return [], [], [_unconstructable(nodes, label, error)]
    except RecursionError:
        # PyYAML's composer recurses once per level: thousands of '[' end here, not in _Bounds
        message = f"the YAML is nested far more than {MAX_DEPTH} levels deep; a policy needs ~7"
        return [], [], [Problem(label, 1, 1, message)]
    finally:
        loader.dispose()
    kept = [(node, value) for node, value in zip(nodes, values, strict=True) if value is not None]
    return [node for node, _ in kept], [value for _, value in kept], []


def _unconstructable(nodes: list[yaml.Node], label: str, error: Exception) -> Problem:
    """The scalar whose value YAML resolved to a type it then could not build, at its line."""
    constructor = yaml.SafeLoader("")
    try:
        for root in nodes:
            for node in _nodes(root):
                if not isinstance(node, yaml.ScalarNode):
                    continue
                try:
                    constructor.construct_object(node)
                except (ValueError, OverflowError, TypeError) as failure:
                    return problem_at(label, node, _unreadable_scalar(node, failure))
    finally:
        constructor.dispose()
    return Problem(label, 1, 1, f"a value cannot be read: {error}")


def _unreadable_scalar(node: yaml.ScalarNode, error: Exception) -> str:
    kind = node.tag.rpartition(":")[2]
    if kind == "int" and "digits" in str(error):
        digits = sum(c.isdigit() for c in node.value)
        return (
            f"a number with {digits:,} digits ({node.value[:12]}…) cannot be read; no policy "
            "value needs more than a few"
        )
    what = {"timestamp": "a date", "int": "a number", "float": "a number"}.get(kind, kind)
    return (
        f"{node.value!r} reads as {what} in YAML but is not one ({error}); put it in quotes "
        "if it is text"
    )


def read_text(path: Path) -> str | Problem:
    """The file's text, reading at most one byte past the limit: a huge file is never read
    whole."""
    label = str(path)
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        return Problem(label, 1, 1, f"cannot read the file: {error}")
    if len(data) > MAX_FILE_BYTES:
        limit = f"{MAX_FILE_BYTES >> 20} MiB"
        return Problem(
            label,
            1,
            1,
            f"the file is larger than {limit}; a policy file is a few kilobytes: split it, or "
            "check that this is the file you meant",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        return Problem(label, 1, 1, f"cannot read the file: it is not UTF-8 text ({error})")


def read_document(path: Path) -> tuple[yaml.Node | None, Any, list[Problem]]:
    """One YAML document read with every check a policy file gets (size, control characters,
    duplicate and merge keys, aliases, depth, a second document), for the other configuration
    files Stratus reads beside its policies (``policies.impersonation``)."""
    label = str(path)
    text = read_text(path)
    if isinstance(text, Problem):
        return None, None, [text]
    nodes, documents, problems = compose_and_construct(text, label)
    if problems:
        return None, None, problems
    if not documents:
        return None, None, [Problem(label, 1, 1, "the file is empty")]
    return nodes[0], documents[0], []
