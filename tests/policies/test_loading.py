"""Policy files: precise errors at file:line:column, never a traceback, never a silently
allowing policy; the shipped files load; reload keeps the last good policy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from policies.loader import PolicyError, load
from policies.model import schema
from policies.reload import LivePolicy, PolicyWatcher, audit_reporter
from store.audit import AuditLog
from store.db import Store
from tests.conftest import REPO

HEADER = "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: test}\n"


def write(tmp_path: Path, text: str, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


CASES = [
    ("bad yaml", HEADER + "rules:\n  - name: a\n    decision: [deny\n", 7, "invalid YAML"),
    (
        "unknown key",
        HEADER + "rules:\n  - name: a\n    decison: deny\n",
        6,
        "unknown key 'decison'",
    ),
    (
        "wrong type",
        HEADER + "rules:\n  - name: a\n    decision: ask\n    min_approvals: two\n",
        7,
        "min_approvals",
    ),
    (
        "unknown action",
        HEADER + "rules:\n  - name: a\n    decision: deny\n    match:\n"
        "      actions: [scale, reboot]\n",
        8,
        "unknown action(s) reboot",
    ),
    (
        "bad glob",
        HEADER + "rules:\n  - name: a\n    decision: deny\n    match:\n"
        "      namespaces: ['prod-[']\n",
        8,
        "unbalanced '['",
    ),
    (
        "bad decision",
        HEADER + "rules:\n  - name: a\n    decision: maybe\n",
        6,
        "expected 'deny', 'ask' or 'allow'",
    ),
    (
        "remember without max",
        HEADER + "rules:\n  - name: a\n    decision: ask\n    remember: true\n",
        5,
        "needs max_grant",
    ),
    (
        "bad duration",
        HEADER + "rules:\n  - name: a\n    decision: ask\n    remember: true\n"
        "    max_grant: forever\n",
        8,
        "expected a duration",
    ),
    ("empty approvers", HEADER + "defaults:\n  approvers: []\n", 5, "lets nobody approve"),
    (
        "bad approver",
        HEADER + "rules:\n  - name: a\n    decision: ask\n    approvers: [bob]\n",
        7,
        "approvers are Slack user IDs",
    ),
    (
        "approvers on deny",
        HEADER + "rules:\n  - name: a\n    decision: deny\n    approvers: [U123]\n",
        5,
        "only apply to decision: ask",
    ),
    (
        "wrong api version",
        "apiVersion: stratus/v2\nkind: ApprovalPolicy\nmetadata: {name: x}\n",
        1,
        "apiVersion: expected 'stratus/v1'",
    ),
    (
        "bad time zone",
        HEADER + "rules:\n  - name: a\n    decision: deny\n    match:\n"
        "      window: {timezone: Mars/Olympus}\n",
        8,
        "unknown time zone",
    ),
    ("empty file", "", 1, "the file is empty"),
]


@pytest.mark.parametrize(
    ("text", "line", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_malformed_files_give_precise_errors(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PolicyError) as failure:
        load([path])
    problems = failure.value.problems
    assert any(message in p.message for p in problems), [str(p) for p in problems]
    hit = next(p for p in problems if message in p.message)
    assert hit.path == str(path) and hit.line == line and hit.column >= 1


def test_duplicate_rule_names_and_two_defaults_across_files(tmp_path: Path) -> None:
    write(
        tmp_path,
        HEADER + "defaults: {min_approvals: 1}\nrules:\n  - name: a\n    decision: deny\n",
        "a.yaml",
    )
    write(
        tmp_path,
        HEADER + "defaults: {min_approvals: 2}\nrules:\n  - name: a\n    decision: allow\n",
        "b.yaml",
    )
    with pytest.raises(PolicyError) as failure:
        load([tmp_path])
    text = str(failure.value)
    assert "rule name 'a' is already used at" in text and "b.yaml:6:1" in text
    assert "defaults are already set in" in text


def test_policy_check_command_prints_positions_and_no_traceback(tmp_path: Path) -> None:
    bad = write(tmp_path, CASES[3][1])

    def check(*paths: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cli", "policy", "check", *map(str, paths)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=REPO,
        )

    failed = check(bad)
    assert failed.returncode == 1 and f"{bad}:8:" in failed.stderr
    assert "Traceback" not in failed.stderr
    # The shipped default names a placeholder for its approvers: it does not load until the
    # installer names theirs (docs/deploy.md, "The approvers"); named, it and the examples do.
    placeholder = check(REPO / "manifests" / "policies" / "default")
    assert placeholder.returncode == 1, placeholder.stdout
    assert "default.yaml:18:14: defaults.approvers: SET-ME-approver-group is the shipped" in (
        placeholder.stderr
    )
    named = tmp_path / "named"
    named.mkdir()
    default = (REPO / "manifests" / "policies" / "default" / "default.yaml").read_text()
    (named / "default.yaml").write_text(default.replace("SET-ME-approver-group", "S0SRE"))
    shipped = check(named, REPO / "manifests" / "policies" / "examples")
    assert shipped.returncode == 0 and "ok: 6 rules in 2 file(s)" in shipped.stdout


def test_the_exported_json_schema_is_current() -> None:
    exported = json.loads((REPO / "manifests" / "policies" / "schema.json").read_text())
    assert exported == json.loads(json.dumps(schema()))


def test_invalid_directory_fails_closed_at_start_and_reload_keeps_the_last_good(
    tmp_path: Path,
) -> None:
    policies = tmp_path / "policies"  # the database lives outside: nothing else may lie here
    policies.mkdir()
    bad = write(policies, CASES[1][1])
    with pytest.raises(PolicyError):
        PolicyWatcher(policies)
    bad.write_text(HEADER + "rules:\n  - name: good\n    decision: deny\n")
    errors: list[PolicyError] = []
    store = Store(tmp_path / "db.sqlite")
    report = audit_reporter(store)

    def on_error(error: PolicyError) -> None:
        errors.append(error)
        report(error)

    watcher = PolicyWatcher(policies, on_error=on_error)
    assert [r.rule.name for r in watcher.current.policy.rules] == ["good"]
    assert watcher.refresh() is False  # nothing changed
    time.sleep(0.01)
    bad.write_text(HEADER + "rules:\n  - name: broken\n    decison: allow\n")
    os.utime(bad, (time.time() + 5, time.time() + 5))
    assert watcher.refresh() is False and errors and watcher.last_error is not None
    assert [r.rule.name for r in watcher.current.policy.rules] == ["good"]
    [record] = AuditLog(store).records()
    assert record.event == "policy-rejected" and "unknown key 'decison'" in str(record.payload)
    bad.write_text(HEADER + "rules:\n  - name: better\n    decision: ask\n")
    os.utime(bad, (time.time() + 10, time.time() + 10))
    assert watcher.refresh() is True
    assert [r.rule.name for r in watcher.current.policy.rules] == ["better"]


def test_a_live_policy_follows_its_files_and_keeps_the_last_good(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    file = write(policies, HEADER + "rules:\n  - name: first\n    decision: ask\n")
    # An interval a loaded machine cannot overrun between two lines (0.05 s was overrun once).
    live = LivePolicy(policies, interval=1.0)
    assert [r.rule.name for r in live().policy.rules] == ["first"]
    file.write_text(HEADER + "rules:\n  - name: freeze\n    decision: deny\n")
    os.utime(file, (time.time() + 5, time.time() + 5))
    assert [r.rule.name for r in live().policy.rules] == ["first"]  # within the interval
    time.sleep(1.05)
    assert [r.rule.name for r in live().policy.rules] == ["freeze"]
    file.write_text(HEADER + "rules:\n  - name: broken\n    decison: allow\n")
    os.utime(file, (time.time() + 10, time.time() + 10))
    time.sleep(1.05)
    assert [r.rule.name for r in live().policy.rules] == ["freeze"]
    assert live.last_error is not None and "decison" in str(live.last_error)


def test_a_live_policy_fails_closed_on_its_first_load(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    write(policies, CASES[1][1])
    with pytest.raises(PolicyError):
        LivePolicy(policies)()
