"""A keyed installation run once without its key: ``STRATUS_AUDIT_KEY`` unset, or set but
empty. Nothing may be appended unkeyed (an unkeyed row after keyed ones reads as forged from
then on), so the command is refused with one line naming the key, and the log stays intact
for the next run that has the key. The CLI runs in-process against the lab."""

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


def run(env: dict[str, str], actor: str, *args: str) -> Result:
    return CliRunner().invoke(
        stratus_cli, list(args), env={**env, "STRATUS_ACTOR": actor}, catch_exceptions=False
    )


def audit_rows(env: dict[str, str]) -> int:
    db = sqlite3.connect(env["STRATUS_DB"])
    try:
        return int(db.execute("SELECT COUNT(*) FROM audit_log").fetchone()[0])
    finally:
        db.close()


@pytest.mark.parametrize("key", [None, "", "  "], ids=["unset", "empty", "blank"])
def test_a_keyed_log_is_never_appended_to_without_its_key(
    env: dict[str, str], tmp_path: Path, kube: KubeClient, key: str | None
) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "p.yaml").write_text(POLICY)
    keyed = {**env, "STRATUS_POLICY_DIR": str(policies), "STRATUS_AUDIT_KEY": "k" * 32}
    asked = run(keyed, "alice", "act", "scale", "deploy/geo", "replicas=3", "-n", "hotel", "--yes")
    assert asked.exit_code == 1 and "someone else must approve" in asked.stderr, asked.output
    db = sqlite3.connect(keyed["STRATUS_DB"])
    [(proposal_id,)] = db.execute("SELECT id FROM proposals").fetchall()
    db.close()
    before = audit_rows(keyed)

    without = {k: v for k, v in keyed.items() if k != "STRATUS_AUDIT_KEY"}
    if key is not None:
        without["STRATUS_AUDIT_KEY"] = key
    # The claimed identity (STRATUS_ACTOR) is audited first, then the answer: both refused.
    for args in (["proposals", "approve", proposal_id], ["policy", "revoke", "grant-x"]):
        refused = run(without, "bob", *args)
        assert refused.exit_code == 1, refused.output
        assert "internal error" not in refused.output and "Traceback" not in refused.output
        assert "STRATUS_AUDIT_KEY" in refused.stderr, refused.stderr
        expected = "set but empty" if key is not None else "keyed, but $STRATUS_AUDIT_KEY is not"
        assert expected in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) <= 2, refused.stderr  # line + hint
    assert audit_rows(keyed) == before
    assert kube.get(GEO)["spec"]["replicas"] == 1

    checked = run(keyed, "auditor", "audit", "verify")
    assert checked.exit_code == 0, checked.output
    done = run(keyed, "bob", "proposals", "approve", proposal_id)
    assert done.exit_code == 0 and kube.get(GEO)["spec"]["replicas"] == 3, done.output
