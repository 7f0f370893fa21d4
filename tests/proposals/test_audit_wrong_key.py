"""A keyed database read with the wrong ``STRATUS_AUDIT_KEY``, or with none: the records are
genuine, the key is not. Every command that checks a digest says so once, first, instead of
calling each record tampered; and nothing is written under the wrong key. The CLI runs
in-process against the lab."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_cli
from tools.k8s import KubeClient
from tools.objects import ObjectRef

GEO = ObjectRef("Deployment", "geo", "hotel")
POLICY = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: test}
rules:
  - name: someone-else
    match: {actions: [scale]}
    decision: ask
    self_approval: false
"""
KEY = "k" * 32
WRONG_KEY = "the key of another installation"
SAID = "STRATUS_AUDIT_KEY is missing or is not the key this database was written with"


def run(env: dict[str, str], actor: str, *args: str) -> Result:
    return CliRunner().invoke(
        stratus_cli, list(args), env={**env, "STRATUS_ACTOR": actor}, catch_exceptions=False
    )


def proposal_ids(env: dict[str, str]) -> list[str]:
    db = sqlite3.connect(env["STRATUS_DB"])
    try:
        return [row[0] for row in db.execute("SELECT id FROM proposals ORDER BY created_at")]
    finally:
        db.close()


@pytest.fixture
def keyed(env: dict[str, str], tmp_path: Path, kube: KubeClient) -> dict[str, str]:
    """A keyed database with an executed write (undoable) and a proposal awaiting approval."""
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "p.yaml").write_text(POLICY)
    keyed = {
        **env,
        "STRATUS_POLICY_DIR": str(policies),
        "STRATUS_AUDIT_KEY": KEY,
        "STRATUS_HOME": str(tmp_path / "home"),
    }
    first = run(keyed, "alice", "act", "scale", "deploy/geo", "replicas=3", "-n", "hotel", "--yes")
    assert first.exit_code == 1 and "someone else must approve" in first.stderr, first.output
    [executed] = proposal_ids(keyed)
    approved = run(keyed, "bob", "proposals", "approve", executed)
    assert approved.exit_code == 0 and kube.get(GEO)["spec"]["replicas"] == 3, approved.output
    second = run(keyed, "alice", "act", "scale", "deploy/geo", "replicas=4", "-n", "hotel", "--yes")
    assert second.exit_code == 1, second.output
    verified = run(keyed, "auditor", "audit", "verify")
    assert verified.exit_code == 0, verified.output
    return keyed


def without_key(keyed: dict[str, str], key: str | None) -> dict[str, str]:
    other = {k: v for k, v in keyed.items() if k != "STRATUS_AUDIT_KEY"}
    return other if key is None else {**other, "STRATUS_AUDIT_KEY": key}


KEYS = pytest.mark.parametrize("key", [WRONG_KEY, None], ids=["wrong", "none"])


@KEYS
def test_verify_says_the_key_first_and_accuses_no_record(
    keyed: dict[str, str], key: str | None
) -> None:
    checked = run(without_key(keyed, key), "auditor", "audit", "verify")
    assert checked.exit_code == 1, checked.output
    lines = checked.stderr.strip().splitlines()
    assert SAID in lines[0], checked.stderr
    assert checked.stderr.count(SAID) == 1, checked.stderr
    assert "tampered" not in checked.stderr, checked.stderr
    assert "record" not in checked.stderr.replace("records", ""), checked.stderr
    # With the key back, the same records are intact: nothing was written meanwhile.
    again = run(keyed, "auditor", "audit", "verify")
    assert again.exit_code == 0 and "audit log intact" in again.stdout, again.output


@KEYS
def test_a_refused_answer_names_the_key_not_tampering(
    keyed: dict[str, str], kube: KubeClient, key: str | None
) -> None:
    _, waiting = proposal_ids(keyed)
    refused = run(without_key(keyed, key), "bob", "proposals", "approve", waiting)
    assert refused.exit_code == 1, refused.output
    # With none set, the audit row of the claimed identity is refused first, naming the key.
    said = SAID if key is not None else "keyed, but $STRATUS_AUDIT_KEY is not set"
    assert said in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "edited outside Stratus" not in refused.stderr, refused.stderr
    assert "internal error" not in refused.output
    assert kube.get(GEO)["spec"]["replicas"] == 3
    done = run(keyed, "bob", "proposals", "approve", waiting)
    assert done.exit_code == 0 and kube.get(GEO)["spec"]["replicas"] == 4, done.output


def test_a_refused_undo_names_the_key_not_tampering(
    keyed: dict[str, str], kube: KubeClient
) -> None:
    """With no key at all the keyed log refuses the audit row first (already one line naming
    the key); a wrong key reaches the record's digest and must not call it edited."""
    refused = run(without_key(keyed, WRONG_KEY), "bob", "undo", "--last", "--yes")
    assert refused.exit_code == 1, refused.output
    assert SAID in refused.stderr, refused.stderr
    assert "was edited after it was written" not in refused.stderr, refused.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 3
    undone = run(keyed, "bob", "undo", "--last", "--yes")
    assert undone.exit_code == 0 and kube.get(GEO)["spec"]["replicas"] == 1, undone.output


def test_a_genuinely_edited_record_is_still_called_tampered_under_the_right_key(
    keyed: dict[str, str],
) -> None:
    _, waiting = proposal_ids(keyed)
    db = sqlite3.connect(keyed["STRATUS_DB"])
    db.execute(
        "UPDATE proposals SET body = replace(body, '\"min_approvals\":1', "
        "'\"min_approvals\":0') WHERE id = ?",
        [waiting],
    )
    db.commit()
    db.close()
    checked = run(keyed, "auditor", "audit", "verify")
    assert checked.exit_code == 1 and SAID not in checked.stderr, checked.output
    assert f"proposal {waiting}" in checked.stderr, checked.stderr
