"""One store, one policy: the policy the database's bot recorded is the one every other process
opening the database runs under (``policies.served``). No socket: an in-memory store and
policy files in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from policies import served
from store.audit import AuditLog
from store.db import MEMORY, Store

POLICY = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: bot}
defaults: {approvers: ["S0SRE"]}
rules:
  - name: everything-asks
    decision: ask
"""


@pytest.fixture
def store() -> Iterator[Store]:
    opened = Store(MEMORY)
    yield opened
    opened.close()


def policy_dir(path: Path, text: str = POLICY) -> Path:
    path.mkdir()
    (path / "policy.yaml").write_text(text)
    return path


def test_a_database_no_bot_served_uses_what_it_is_told(store: Store, tmp_path: Path) -> None:
    told = policy_dir(tmp_path / "told")
    assert served.choose(store, told) == served.PolicyChoice(told, None)
    assert served.choose(store, None) == served.PolicyChoice(None, None)


def test_nothing_configured_means_the_bots_policy(store: Store, tmp_path: Path) -> None:
    bots = policy_dir(tmp_path / "bot")
    record = served.record(store, bots, served_by="cli:stratus-bot")
    choice = served.choose(store, None)
    assert choice.directory == bots.absolute() and not choice.changed
    assert choice.served == record and record.source.files == (str(bots / "policy.yaml"),)
    audited = [e for e in AuditLog(store).records(subject="policy") if e.event == "policy-served"]
    assert audited and audited[-1].payload["directory"] == str(bots.absolute())


def test_the_same_directory_or_the_same_files_elsewhere_are_the_same_policy(
    store: Store, tmp_path: Path
) -> None:
    bots = policy_dir(tmp_path / "bot")
    copy = policy_dir(tmp_path / "copy")
    served.record(store, bots, served_by="cli:bot")
    assert served.choose(store, bots).directory == bots
    # A copy with the same files is accepted, but the bot's own directory is what the process
    # follows from then on: editing the copy after the check loosens nothing (a race found by
    # an attacker: the copy was rewritten between this check and the first decision).
    assert served.choose(store, copy).directory == bots.absolute()


def test_another_policy_is_refused_naming_both(store: Store, tmp_path: Path) -> None:
    bots = policy_dir(tmp_path / "bot")
    lax = policy_dir(tmp_path / "lax", POLICY.replace("decision: ask", "decision: allow"))
    served.record(store, bots, served_by="cli:bot")
    with pytest.raises(served.PolicyMismatch) as refused:
        served.choose(store, lax)
    assert str(bots.absolute()) in refused.value.message and str(lax) in refused.value.message
    assert refused.value.details["recorded"] == str(bots.absolute())
    assert refused.value.details["configured"] == str(lax)


def test_a_bot_without_policy_and_a_terminal_with_one_disagree(
    store: Store, tmp_path: Path
) -> None:
    served.record(store, None, served_by="cli:bot")
    assert served.choose(store, None).directory is None
    with pytest.raises(served.PolicyMismatch) as refused:
        served.choose(store, policy_dir(tmp_path / "mine"))
    assert "no policy" in refused.value.message


def test_changed_files_are_said_and_gone_files_refused(store: Store, tmp_path: Path) -> None:
    bots = policy_dir(tmp_path / "bot")
    served.record(store, bots, served_by="cli:bot")
    (bots / "policy.yaml").write_text(POLICY.replace("S0SRE", "S0OPS"))
    assert served.choose(store, None).changed
    (bots / "policy.yaml").unlink()
    with pytest.raises(served.ServedPolicyGone) as gone:
        served.choose(store, None)
    assert str(bots.absolute()) in gone.value.message


def test_a_later_serve_replaces_the_record(store: Store, tmp_path: Path) -> None:
    served.record(store, policy_dir(tmp_path / "old"), served_by="cli:bot")
    new = policy_dir(tmp_path / "new", POLICY.replace("S0SRE", "S0OPS"))
    served.record(store, new, served_by="cli:bot")
    assert served.choose(store, None).directory == new.absolute()


def test_the_cli_says_what_to_do_about_either_refusal() -> None:
    from cli import render

    mismatch = render.error_line(served.PolicyMismatch("bot serves A, told B"))
    assert mismatch.splitlines()[0] == "bot serves A, told B"
    assert "unset STRATUS_POLICY_DIR" in mismatch and "STRATUS_DB" in mismatch
    gone = render.error_line(served.ServedPolicyGone("A is empty"))
    assert "stratus serve" in gone
