"""Policy loading against a clumsy user: rules that can never match fail closed with a
Problem at file:line:column."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies.loader import PolicyError, load

HEADER = "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: test}\n"


def write(folder: Path, text: str, name: str = "policy.yaml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def problems_of(paths: list[Path]) -> list[str]:
    with pytest.raises(PolicyError) as failure:
        load(paths)
    return [str(p) for p in failure.value.problems]


def the_problem(paths: list[Path], needle: str) -> str:
    found = [p for p in problems_of(paths) if needle in p]
    assert found, problems_of(paths)
    return found[0]


# --- rules that can never match -----------------------------------------------------------

RULE = HEADER + "rules:\n  - name: a\n    decision: deny\n    match:\n"
NEVER = [
    ("window start = end", "      window: {start: '08:00', end: '08:00'}\n", 8, "never open"),
    ("window starting 24:00", "      window: {start: '24:00', end: '06:00'}\n", 8, "start 24:00"),
    ("clock not HH:MM", "      window: {start: '0900'}\n", 8, "expected HH:MM"),
    ("no days", "      window:\n        days: []\n", 9, "matches no day"),
    ("space in glob", "      namespaces: ['prod web']\n", 8, "' ' is not allowed"),
    ("regex anchors", "      names: ['^web$']\n", 8, "'^' is not allowed"),
    ("regex plus", "      names: ['web-.+']\n", 8, "'+' is not allowed"),
    ("regex group", "      namespaces: ['(prod|dev)']\n", 8, "'(' is not allowed"),
    ("backslash", "      namespaces: ['prod\\d']\n", 8, "'\\\\' is not allowed"),
    ("braces", "      names: ['web-{a,b}']\n", 8, "'{' is not allowed"),
    ("upper case", "      names: ['Web-*']\n", 8, "'W' is not allowed"),
    ("stray bracket", "      names: ['web]']\n", 8, "']' is not allowed"),
    ("empty class", "      names: ['web-[]']\n", 8, "empty character class"),
    ("caret class", "      names: ['web-[^a]']\n", 8, "'^' is not allowed in a class"),
    ("reversed range", "      names: ['web-[9-0]']\n", 8, "range 9-0 is empty"),
    ("label key", "      labels: {'tier name': web}\n", 8, "label key 'tier name'"),
    ("label prefix", "      labels: {'Example.COM/tier': web}\n", 8, "label key"),
    ("label value", "      labels: {tier: 'front end'}\n", 8, "label value 'front end'"),
    ("long label value", "      labels: {tier: " + "a" * 64 + "}\n", 8, "label value"),
]


@pytest.mark.parametrize(
    ("match", "line", "message"), [c[1:] for c in NEVER], ids=[c[0] for c in NEVER]
)
def test_rules_that_can_never_match_are_errors(
    tmp_path: Path, match: str, line: int, message: str
) -> None:
    path = write(tmp_path, RULE + match)
    problem = the_problem([path], message)
    assert problem.startswith(f"{path}:{line}:"), problem


def test_kubernetes_globs_and_labels_that_can_match_load(tmp_path: Path) -> None:
    match = (
        "      namespaces: ['prod-*', 'team-?', 'ns-[0-9]', '[!k]*', 'a.b']\n"
        "      names: ['web-[a-f0-9]*']\n"
        "      labels: {app.kubernetes.io/name: web, tier: '', Tier_2: A.b-c}\n"
        "      window: {days: [sat], start: '22:00', end: '06:00'}\n"
    )
    [rule] = load([write(tmp_path, RULE + match)]).rules
    assert rule.rule.match.labels == {
        "app.kubernetes.io/name": "web",
        "tier": "",
        "Tier_2": "A.b-c",
    }
