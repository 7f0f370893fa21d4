"""Policy loading against an attacker and a clumsy user: duplicate keys, files the loader
would skip, alias bombs and oversized files, and rules that can never match. Each case fails
closed with a Problem at file:line:column; none hangs, none is silently ignored."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from policies.loader import MAX_ALIAS_EXPANSION, MAX_FILE_BYTES, Policy, PolicyError, load
from policies.reload import PolicyWatcher
from tests.conftest import REPO

HEADER = "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: test}\n"
GOOD = HEADER + "rules:\n  - name: good\n    decision: deny\n"


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


# --- duplicate keys -----------------------------------------------------------------------

DUPLICATES = [
    (
        "decision in a rule",
        HEADER + "rules:\n  - name: a\n    decision: deny\n    decision: allow\n",
        "7:5",
        "'decision' (first at line 6)",
    ),
    (
        "a second rules list",
        HEADER + "rules:\n  - name: a\n    decision: deny\nrules:\n  - name: b\n"
        "    decision: allow\n",
        "7:1",
        "'rules' (first at line 4)",
    ),
    (
        "in a flow mapping",
        HEADER + "rules:\n  - {name: a, decision: deny, decision: allow}\n",
        "5:31",
        "'decision' (first at line 5)",
    ),
    (
        "in match, quoted",
        HEADER + "rules:\n  - name: a\n    decision: deny\n    match:\n"
        "      namespaces: [prod]\n      'namespaces': [dev]\n",
        "9:7",
        "'namespaces' (first at line 8)",
    ),
    (
        "in a label map",
        HEADER + "rules:\n  - name: a\n    decision: allow\n    match:\n"
        "      labels: {tier: frontend, tier: backend}\n",
        "8:32",
        "'tier' (first at line 8)",
    ),
]


@pytest.mark.parametrize(
    ("text", "where", "message"), [c[1:] for c in DUPLICATES], ids=[c[0] for c in DUPLICATES]
)
def test_duplicate_keys_are_errors_at_the_second_occurrence(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    path = write(tmp_path, text)
    problem = the_problem([path], "duplicate key")
    assert problem.startswith(f"{path}:{where}: duplicate key {message}"), problem


# --- the directory layout -----------------------------------------------------------------


def test_policy_files_are_yaml_and_yml_directly_in_the_directory(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "a.yaml")
    write(tmp_path, GOOD.replace("good", "other"), "b.yml")
    loaded = load([tmp_path])
    assert [r.rule.name for r in loaded.rules] == ["good", "other"]
    assert loaded.files == (str(tmp_path / "a.yaml"), str(tmp_path / "b.yml"))


BAD_ENTRIES = [
    ("upper-case suffix", "prod.YAML", "rename it to prod.yaml"),
    ("json", "prod.json", "rename it to prod.yaml"),
    ("editor backup", "prod.yaml~", "only *.yaml and *.yml files"),
    ("no suffix", "README", "only *.yaml and *.yml files"),
]


@pytest.mark.parametrize(
    ("name", "message"), [c[1:] for c in BAD_ENTRIES], ids=[c[0] for c in BAD_ENTRIES]
)
def test_any_other_file_in_the_directory_is_an_error(
    tmp_path: Path, name: str, message: str
) -> None:
    write(tmp_path, GOOD, "good.yaml")
    write(tmp_path, GOOD.replace("good", "extra"), name)
    problem = the_problem([tmp_path], name)
    assert problem.startswith(f"{tmp_path / name}:1:1: ") and message in problem, problem


def test_a_subdirectory_is_an_error_not_searched(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "good.yaml")
    (tmp_path / "prod").mkdir()
    write(tmp_path / "prod", GOOD.replace("good", "prod"), "prod.yaml")
    problem = the_problem([tmp_path], "directory")
    assert problem.startswith(f"{tmp_path / 'prod'}:1:1: ") and "not searched" in problem


def test_a_dangling_symlink_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "good.yaml")
    (tmp_path / "gone.yaml").symlink_to(tmp_path / "elsewhere" / "gone.yaml")
    problem = the_problem([tmp_path], "gone.yaml")
    assert "dangling symbolic link" in problem and "elsewhere" in problem


def test_a_symlink_to_a_directory_is_an_error(tmp_path: Path) -> None:
    policies, other = tmp_path / "policies", tmp_path / "other"
    policies.mkdir()
    other.mkdir()
    write(policies, GOOD, "good.yaml")
    (policies / "more.yaml").symlink_to(other)
    assert "is a directory" in the_problem([policies], "more.yaml")


def test_a_fifo_is_an_error_and_is_never_opened(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "good.yaml")
    os.mkfifo(tmp_path / "pipe.yaml")
    assert "not a regular file" in the_problem([tmp_path], "pipe.yaml")


def test_symlinked_files_are_followed_and_hidden_entries_ignored(tmp_path: Path) -> None:
    """The layout of a Kubernetes ConfigMap volume, plus an editor's swap and lock files."""
    policies = tmp_path / "policies"
    version = policies / "..2026_01_01_00_00_00.1"
    version.mkdir(parents=True)
    write(version, GOOD, "default.yaml")
    (policies / "..data").symlink_to(version.name)
    (policies / "default.yaml").symlink_to("..data/default.yaml")
    write(policies, "not: [yaml", ".default.yaml.swp")
    (policies / ".#default.yaml").symlink_to("user@host.1234")  # an Emacs lock: dangling
    loaded = load([policies])
    assert [r.rule.name for r in loaded.rules] == ["good"]
    assert loaded.files == (str(policies / "default.yaml"),)


def test_an_empty_policy_directory_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "x", ".hidden.yaml")
    problem = the_problem([tmp_path], "no policy files")
    assert problem.startswith(f"{tmp_path}:1:1: no policy files in {tmp_path}: every write")


def test_no_policy_directory_at_all_still_means_ask_for_everything() -> None:
    assert load([]) == Policy()


def test_an_explicitly_named_file_is_read_whatever_its_suffix(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD, "policy.json")
    assert [r.rule.name for r in load([path]).rules] == ["good"]


def _touch_later(path: Path, seconds: float) -> None:
    os.utime(path, (time.time() + seconds, time.time() + seconds))


def test_reload_keeps_the_last_good_policy_when_the_directory_turns_bad(tmp_path: Path) -> None:
    good = write(tmp_path, GOOD, "good.yaml")
    errors: list[PolicyError] = []
    watcher = PolicyWatcher(tmp_path, on_error=errors.append)
    assert [r.rule.name for r in watcher.current.policy.rules] == ["good"]

    stray = write(tmp_path, GOOD.replace("good", "json"), "stray.json")
    assert watcher.refresh() is False
    assert watcher.last_error is not None and "stray.json" in str(watcher.last_error)
    stray.unlink()
    assert watcher.refresh() is True and watcher.last_error is None

    good.unlink()
    assert watcher.refresh() is False
    assert "no policy files" in str(watcher.last_error) and len(errors) == 2
    assert [r.rule.name for r in watcher.current.policy.rules] == ["good"]

    (tmp_path / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    write(tmp_path, GOOD.replace("good", "back"), "back.yaml")
    assert watcher.refresh() is False and "dangling" in str(watcher.last_error)
    (tmp_path / "gone.yaml").unlink()
    assert watcher.refresh() is True
    assert [r.rule.name for r in watcher.current.policy.rules] == ["back"]


def test_reload_ignores_changes_to_hidden_files(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "good.yaml")
    watcher = PolicyWatcher(tmp_path)
    swap = write(tmp_path, "junk", ".good.yaml.swp")
    _touch_later(swap, 5)
    assert watcher.refresh() is False and watcher.last_error is None


# --- bounds: size, aliases, depth ---------------------------------------------------------


def billion_laughs() -> str:
    """Nine levels of nine aliases each: 9**9 (387 million) strings once expanded."""
    lines = ["lol0: &lol0 [" + ", ".join(['"lol"'] * 9) + "]"]
    for level in range(1, 10):
        lines.append(f"lol{level}: &lol{level} [" + ", ".join([f"*lol{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(60)
def test_the_classic_billion_laughs_fails_fast(tmp_path: Path) -> None:
    # CPU time of this thread, not the wall clock: "fast" is about the work the loader
    # does, and a CI machine running four workers on two cores stretches wall time.
    path = write(tmp_path, billion_laughs())
    started = time.thread_time()
    problem = the_problem([path], "aliases")
    assert time.thread_time() - started < 2
    assert f"more than {MAX_ALIAS_EXPANSION:,} nodes" in problem and "alias bomb" in problem


GUARDED_LOAD = """
import resource, sys, time
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from policies.loader import PolicyError, load
started = time.process_time()
try:
    load([Path(sys.argv[1])])
except PolicyError as error:
    print(error)
print(f"cpu seconds: {time.process_time() - started:.3f}")
"""


# The wall-clock bounds are generous (a cold interpreter on a loaded CI machine once took
# over 8 s to start); the child's own CPU time is what says "fast".
@pytest.mark.timeout(90)
def test_a_billion_laughs_where_the_schema_looks_fails_fast(tmp_path: Path) -> None:
    """The bomb behind a key the schema reads: before the bound, the error message for
    ``kind`` printed the fully expanded value (gigabytes). A separate process with a memory
    cap keeps a regression from taking the test machine down with it."""
    text = billion_laughs() + "apiVersion: stratus/v1\nkind: *lol9\nmetadata: {name: x}\n"
    path = write(tmp_path, text)
    loaded = subprocess.run(
        [sys.executable, "-c", GUARDED_LOAD, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert loaded.returncode == 0 and "alias bomb" in loaded.stdout, loaded.stderr[-2000:]
    cpu = float(loaded.stdout.rsplit("cpu seconds: ", 1)[1])
    assert cpu < 2, loaded.stdout


@pytest.mark.timeout(60)
def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + "rules: &loop\n  - *loop\n")
    assert "contains itself" in the_problem([path], "alias")


@pytest.mark.timeout(60)
def test_deep_nesting_is_refused_without_a_traceback(tmp_path: Path) -> None:
    for depth in (60, 5000):
        path = write(tmp_path, HEADER + "rules: " + "[" * depth + "]" * depth + "\n")
        assert "nested" in the_problem([path], "nested")


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "#" * MAX_FILE_BYTES + "\n")
    problem = the_problem([path], "larger than")
    assert problem.startswith(f"{path}:1:1: the file is larger than 1 MiB")


def test_ordinary_anchors_and_aliases_still_load(tmp_path: Path) -> None:
    text = HEADER + (
        "rules:\n"
        "  - name: a\n    decision: ask\n    approvers: &sre [S0SREONCALL]\n"
        "    match: &prod {namespaces: ['prod-*']}\n"
        "  - name: b\n    decision: ask\n    approvers: *sre\n    match: *prod\n"
    )
    loaded = load([write(tmp_path, text)])
    assert [r.rule.approvers for r in loaded.rules] == [["S0SREONCALL"], ["S0SREONCALL"]]


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


CONTROL_RULE = HEADER + "rules:\n  - name: good\n    decision: deny\n"


@pytest.mark.parametrize(
    ("case", "text", "line", "column"),
    [
        ("NUL in a plain value", "    description: x\x00y\n", 7, 19),
        ("BEL in a quoted value", '    description: "x\x07y"\n', 7, 20),
        ("ESC in a comment", "    # \x1b[2J\n", 7, 7),
        ("DEL", "    description: x\x7fy\n", 7, 19),
        ("a C1 control", "    description: x\x9by\n", 7, 19),
        ("a noncharacter", "    description: x\ufffey\n", 7, 19),
    ],
)
def test_a_control_character_in_the_file_is_a_problem_at_its_position(
    tmp_path: Path, case: str, text: str, line: int, column: int
) -> None:
    path = write(tmp_path, CONTROL_RULE + text)
    problem = the_problem([path], "control character")
    assert problem.startswith(f"{path}:{line}:{column}: "), (case, problem)


@pytest.mark.parametrize(
    ("case", "text"),
    [
        ("escaped NUL", '    description: "a\\0b"\n'),
        ("escaped BEL", '    description: "a\\ab"\n'),
        ("escaped ESC (a terminal escape sequence)", '    description: "\\e[2Jcleared"\n'),
        ("escaped C1", '    description: "a\\x9bb"\n'),
        ("a lone surrogate (no UTF-8 for it)", '    description: "\\ud800"\n'),
        ("escaped carriage return", '    description: "denied\\rallowed"\n'),
        ("escaped control in a key", '    match: {labels: {"a\\x01b": x}}\n'),
    ],
)
def test_a_control_character_written_as_an_escape_is_refused_too(
    tmp_path: Path, case: str, text: str
) -> None:
    """Policy text is printed on terminals and in Slack: an escape sequence in a description
    would rewrite the terminal of whoever runs `policy explain`."""
    path = write(tmp_path, CONTROL_RULE + text)
    problem = the_problem([path], "control character")
    assert problem.startswith(f"{path}:7:"), (case, problem)


@pytest.mark.parametrize(
    ("case", "text", "needle"),
    [
        ("an impossible date", "    description: 2024-13-45\n", "2024-13-45"),
        ("an impossible date and time", "    description: 2024-02-30 10:00:00\n", "2024-02-30"),
        ("an integer too long to read", "    min_approvals: " + "9" * 5000 + "\n", "digits"),
    ],
)
def test_values_yaml_cannot_construct_are_problems_at_their_line(
    tmp_path: Path, case: str, text: str, needle: str
) -> None:
    path = write(tmp_path, CONTROL_RULE + text)
    problems = problems_of([path])
    assert any(p.startswith(f"{path}:7:") and needle in p for p in problems), (case, problems)


def test_tabs_newlines_and_unicode_text_still_load(tmp_path: Path) -> None:
    text = (
        CONTROL_RULE + '    description: "Gel\\u00e9e:\\tno changes\\nduring the freeze \u2603"\n'
    )
    [rule] = load([write(tmp_path, text)]).rules
    assert rule.rule.description == "Gelée:\tno changes\nduring the freeze \u2603"


@pytest.mark.parametrize("command", ["check", "explain", "act"])
def test_a_control_character_is_one_line_at_the_cli_never_an_internal_error(
    env: dict[str, str], tmp_path: Path, command: str
) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    path = write(policies, CONTROL_RULE + "    description: x\x07y\n")
    env = {**env, "STRATUS_POLICY_DIR": str(policies), "STRATUS_HOME": str(tmp_path)}
    args = {
        "check": ["policy", "check", str(policies)],
        "explain": [
            "policy",
            "explain",
            "--action",
            "scale",
            "-n",
            "hotel",
            "--resource",
            "deployment/geo",
        ],
        "act": ["act", "scale", "geo", "replicas=3", "-n", "hotel", "--yes"],
    }[command]
    result = subprocess.run(
        [sys.executable, "-m", "cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "internal error" not in result.stderr
    assert f"{path}:7:19: " in result.stderr and "control character" in result.stderr


@pytest.mark.parametrize(
    ("case", "text", "line"),
    [
        ("a second policy", GOOD + "---\n" + GOOD.replace("good", "other"), 7),
        ("a second document hiding an allow rule", GOOD + "--- \n# later\n" + GOOD, 7),
        ("an empty second document", GOOD + "---\n", 7),
        ("an explicit end, then another", GOOD + "...\n---\n" + GOOD, 8),
        ("a leading marker and a second document", "---\n" + GOOD + "---\n" + GOOD, 8),
    ],
)
def test_a_file_holds_one_document(tmp_path: Path, case: str, text: str, line: int) -> None:
    """A file meant to be replaced whole could hide a second document nobody reviews."""
    path = write(tmp_path, text)
    problem = the_problem([path], "holds one policy document")
    assert problem.startswith(f"{path}:{line}:1: "), (case, problem)


def test_a_leading_document_marker_is_fine(tmp_path: Path) -> None:
    assert len(load([write(tmp_path, "---\n" + GOOD + "...\n")]).rules) == 1


@pytest.mark.parametrize(
    ("clock", "minutes"), [("18:00", 1080), ("9:30", 570), ("24:00", 1440), ("22:00:00", 79200)]
)
def test_an_unquoted_clock_time_says_to_quote_it(tmp_path: Path, clock: str, minutes: int) -> None:
    """YAML 1.1 reads an unquoted 18:00 as the base-60 number 1080."""
    path = write(tmp_path, RULE + f"      window: {{start: '08:00', end: {clock}}}\n")
    problem = the_problem([path], "quote")
    assert problem.startswith(f"{path}:8:"), problem
    quoted = "09:30" if clock == "9:30" else clock
    assert f"the number {minutes}" in problem and f'end: "{quoted}"' in problem, problem


def test_a_symlink_loop_is_reported_as_a_loop(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "good.yaml")
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    problem = the_problem([tmp_path], "a.yaml:")
    assert "loop" in problem and "dangling" not in problem and "does not exist" not in problem


def test_a_link_to_itself_is_a_loop(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "good.yaml")
    (tmp_path / "self.yaml").symlink_to("self.yaml")
    problem = the_problem([tmp_path], "self.yaml")
    assert "loop" in problem and "dangling" not in problem, problem


def test_a_directory_of_refused_entries_names_them_not_an_empty_directory(
    tmp_path: Path,
) -> None:
    write(tmp_path, GOOD, "prod.YAML")
    write(tmp_path, GOOD, "prod.json")
    problems = problems_of([tmp_path])
    assert len(problems) == 2, problems
    assert not any("no policy files" in p for p in problems), problems
    assert any("rename it to prod.yaml" in p for p in problems), problems


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u202a"])
def test_a_bidirectional_override_is_refused(tmp_path: Path, char: str) -> None:
    """ "Trojan Source": in a comment or a value, it shows a reviewer another order than YAML
    reads (``decision: allow  # <RLO> deny``)."""
    raw = write(tmp_path, CONTROL_RULE + f"    # {char}wolla :noisiced\n", "raw.yaml")
    assert "bidirectional" in the_problem([raw], "raw.yaml:7:7: control character")
    escaped = write(tmp_path, CONTROL_RULE + f'    description: "a\\u{ord(char):04x}b"\n', "e.yaml")
    assert "bidirectional" in the_problem([escaped], "e.yaml:7:18: control character")


@pytest.mark.parametrize(
    ("case", "name", "needle"),
    [
        ("missing", "nowhere", "no such file or directory"),
        ("a name too long for the file system", "a" * 5000, "too long"),
    ],
)
def test_a_policy_path_that_cannot_be_read_is_a_problem(
    tmp_path: Path, case: str, name: str, needle: str
) -> None:
    problem = the_problem([tmp_path / name], "cannot read it")
    assert needle in problem, (case, problem)


def test_a_policy_path_looping_on_itself_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "policies").symlink_to(tmp_path / "policies")
    assert "symbolic links" in the_problem([tmp_path / "policies"], "cannot read it")
