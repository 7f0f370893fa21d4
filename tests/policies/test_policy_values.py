"""Policy values that read one way and load another: YAML merge keys, empty match lists, and
durations too long for the clock. Each is refused at file:line:column, never loaded, and
never ends in an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies.loader import PolicyError, load
from policies.model import MAX_DURATION_SECONDS, parse_duration

HEADER = "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: test}\n"
TEMPLATES = "templates: &templates\n"  # never reached: the merge is refused first


def problems(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as failure:
        load([tmp_path])
    return [str(p) for p in failure.value.problems]


# --- merge keys ---------------------------------------------------------------------------

MERGES = {
    "deny then allow": (
        "rules:\n  - &deny_rule {name: a, decision: deny}\n  - &allow_rule {name: b, decision: "
        "allow}\n  - name: c\n    <<: [*deny_rule, *allow_rule]\n",
        "8:5",
    ),
    "a key beside the merge overrides it": (
        "rules:\n  - &deny_rule {name: a, decision: deny}\n  - name: c\n    <<: *deny_rule\n"
        "    decision: allow\n",
        "7:5",
    ),
    "an explicit !!merge tag": (
        "rules:\n  - &deny_rule {name: a, decision: deny}\n  - {name: c, !!merge x: *deny_rule}\n",
        "6:15",
    ),
    "in the defaults": (
        "defaults:\n  <<: {approvers: ['*']}\nrules: []\n",
        "5:3",
    ),
    "in a match": (
        "rules:\n  - name: a\n    decision: deny\n    match:\n      <<: {namespaces: [prod]}\n",
        "8:7",
    ),
}


@pytest.mark.parametrize("case", sorted(MERGES))
def test_merge_keys_are_refused_where_they_stand(tmp_path: Path, case: str) -> None:
    text, where = MERGES[case]
    found = problems(tmp_path, HEADER + text)
    assert found[0].startswith(f"{tmp_path / 'policy.yaml'}:{where}: merge keys (<<) are not")


def test_a_quoted_merge_key_is_an_unknown_key_not_a_merge(tmp_path: Path) -> None:
    found = problems(tmp_path, HEADER + "rules:\n  - {name: a, decision: deny, '<<': x}\n")
    assert any("unknown key '<<'" in p for p in found), found


def test_an_alias_bomb_behind_a_merge_stops_at_the_alias_bound(tmp_path: Path) -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    bomb = "bomb:\n" + "".join(f"  {line}\n" for line in levels)
    found = problems(tmp_path, HEADER + bomb + "rules:\n  - name: a\n    <<: *a8\n")
    assert "alias bomb" in found[0]


def test_an_anchored_rule_reused_is_a_duplicate_rule(tmp_path: Path) -> None:
    found = problems(tmp_path, HEADER + "rules:\n  - &r {name: a, decision: deny}\n  - *r\n")
    assert any("rule name 'a' is already used" in p for p in found), found


def test_an_anchor_for_a_whole_value_still_works(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(
        HEADER + "rules:\n  - name: a\n    decision: ask\n    approvers: &sre [S0SRE]\n"
        "  - name: b\n    decision: ask\n    approvers: *sre\n"
    )
    assert [r.rule.approvers for r in load([tmp_path]).rules] == [["S0SRE"], ["S0SRE"]]


# --- empty match lists ---------------------------------------------------------------------

EMPTY = {
    "actions": "actions: []",
    "namespaces": "namespaces: []",
    "kinds": "kinds: []",
    "names": "names: []",
    "risk": "risk: []",
    "managed_by": "managed_by: []",
    "labels": "labels: {}",
}


@pytest.mark.parametrize("key", sorted(EMPTY))
def test_an_empty_match_list_is_refused(tmp_path: Path, key: str) -> None:
    text = HEADER + f"rules:\n  - name: a\n    decision: deny\n    match:\n      {EMPTY[key]}\n"
    found = problems(tmp_path, text)
    assert len(found) == 1, found
    assert "policy.yaml:8:" in found[0]
    assert f"rules.0.match.{key}: {EMPTY[key].split(': ')[1]} would match anything" in found[0]
    assert "leave the key out" in found[0]


def test_a_missing_match_key_still_means_any(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(
        HEADER + "rules:\n  - name: a\n    decision: deny\n    match: {namespaces: [prod]}\n"
    )
    assert load([tmp_path]).rules[0].rule.match.actions == []


# --- durations -----------------------------------------------------------------------------

LONG = {
    "approval_timeout": "defaults:\n  approval_timeout: {value}\n",
    "max_grant": "rules:\n  - name: a\n    decision: ask\n    remember: true\n"
    "    max_grant: {value}\n",
}


@pytest.mark.parametrize("key", sorted(LONG))
@pytest.mark.parametrize("value", ["99999999999d", "367d", "8785h", "9" * 400 + "s"])
def test_a_duration_longer_than_a_year_is_refused_at_its_line(
    tmp_path: Path, key: str, value: str
) -> None:
    found = problems(tmp_path, HEADER + LONG[key].format(value=value))
    assert len(found) == 1, found
    assert "longer than the longest duration a policy may set, 366d" in found[0]
    assert found[0].startswith(str(tmp_path / "policy.yaml") + ":")


def test_the_longest_durations_load_and_fit_the_clock(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(
        HEADER
        + LONG["approval_timeout"].format(value="366d")
        + LONG["max_grant"].format(value="8784h")
    )
    loaded = load([tmp_path])
    assert loaded.rules[0].rule.max_grant_seconds == MAX_DURATION_SECONDS
    assert parse_duration(loaded.defaults.approval_timeout) == MAX_DURATION_SECONDS


@pytest.mark.parametrize("text", ["\u0661\u0662m", "1.5h", "-1h", "0d", "1w", "1 h"])
def test_only_plain_ascii_durations_parse(text: str) -> None:
    with pytest.raises(ValueError, match="expected a duration"):
        parse_duration(text)


# --- strict numbers and booleans, and explicit tags -----------------------------------------

NOT_A_NUMBER_OR_BOOL = {
    "min_approvals true": ("    decision: ask\n    min_approvals: true\n", "rules.0.min_approvals"),
    "min_approvals yes": ("    decision: ask\n    min_approvals: yes\n", "rules.0.min_approvals"),
    "min_approvals quoted": (
        '    decision: ask\n    min_approvals: "2"\n',
        "rules.0.min_approvals",
    ),
    "min_approvals float": ("    decision: ask\n    min_approvals: 2.0\n", "rules.0.min_approvals"),
    "remember 1": ("    decision: ask\n    remember: 1\n", "rules.0.remember"),
    "self_approval quoted": (
        '    decision: ask\n    self_approval: "false"\n',
        "rules.0.self_approval",
    ),
    "self_approval 0": ("    decision: ask\n    self_approval: 0\n", "rules.0.self_approval"),
    "allow_irreversible quoted": (
        '    decision: allow\n    allow_irreversible: "true"\n',
        "rules.0.allow_irreversible",
    ),
    "reversible 1": (
        "    decision: deny\n    match: {reversible: 1}\n",
        "rules.0.match.reversible",
    ),
}


@pytest.mark.parametrize("case", sorted(NOT_A_NUMBER_OR_BOOL))
def test_numbers_and_booleans_are_not_coerced(tmp_path: Path, case: str) -> None:
    """``min_approvals: true`` loaded as 1 and ``"2"`` as 2: what a reviewer reads is not what
    the rule enforces. A number is a number and a boolean a boolean, or the file is refused."""
    text, where = NOT_A_NUMBER_OR_BOOL[case]
    found = problems(tmp_path, HEADER + "rules:\n  - name: a\n" + text)
    assert len(found) == 1, found
    assert found[0].startswith(f"{tmp_path / 'policy.yaml'}:"), found
    assert where in found[0], found


def test_defaults_are_strict_too(tmp_path: Path) -> None:
    found = problems(tmp_path, HEADER + "defaults:\n  min_approvals: true\nrules: []\n")
    assert any("defaults.min_approvals" in p for p in found), found
    found = problems(tmp_path, HEADER + "defaults:\n  self_approval: 'no'\nrules: []\n")
    assert any("defaults.self_approval" in p for p in found), found


def test_plain_numbers_and_booleans_still_load(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(
        HEADER + "rules:\n  - name: a\n    decision: ask\n    min_approvals: 2\n"
        "    self_approval: false\n    remember: true\n    max_grant: 1h\n"
    )
    rule = load([tmp_path]).rules[0].rule
    assert (rule.min_approvals, rule.self_approval, rule.remember) == (2, False, True)


TAGGED = {
    "binary kind": ("    match: {kinds: [!!binary RGVwbG95bWVudA==]}\n", "7:21", "!!binary"),
    "str on a number": ("    min_approvals: !!str 2\n", "7:20", "!!str"),
    "int on a number": ("    min_approvals: !!int 2\n", "7:20", "!!int"),
    "bool on a boolean": ("    remember: !!bool true\n", "7:15", "!!bool"),
    "local tag": ("    match: {namespaces: [!prod prod]}\n", "7:26", "!prod"),
    "non-specific tag": ("    match: {namespaces: [! prod]}\n", "7:26", "!"),
    "tagged mapping": ("    match: !!map {namespaces: [prod]}\n", "7:12", "!!map"),
    "tagged list": ("    match: {namespaces: !!seq [prod]}\n", "7:25", "!!seq"),
    "verbatim tag": ("    match: {namespaces: [!<tag:yaml.org,2002:str> prod]}\n", "7:26", "!!str"),
}


@pytest.mark.parametrize("case", sorted(TAGGED))
def test_explicit_tags_are_refused_at_their_line(tmp_path: Path, case: str) -> None:
    """``kinds: [!!binary RGVwbG95bWVudA==]`` loaded as Deployment: a rule's meaning must be
    readable on its own lines, so no value in a policy file carries an explicit tag."""
    text, where, tag = TAGGED[case]
    found = problems(tmp_path, HEADER + "rules:\n  - name: a\n    decision: deny\n" + text)
    assert len(found) == 1, found
    assert found[0].startswith(f"{tmp_path / 'policy.yaml'}:{where}: "), found
    assert "explicit YAML tag" in found[0] and tag in found[0], found
