"""Records removed or rewritten outside Stratus that ``stratus audit verify`` must name from the
audit log: a proposal, an execution record or an undo entry the log recorded and that is gone
or no longer what it recorded, a proposal row whose columns disagree with its sealed body, and
a proposal event inserted or edited in the event stream (surfaces render events). The CLI runs
in-process against the lab; the tampering is plain SQL on the SQLite file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

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
  - name: two-people
    match: {actions: [scale]}
    decision: ask
    min_approvals: 2
    self_approval: false
"""


def run(env: dict[str, str], actor: str, *args: str) -> Result:
    return CliRunner().invoke(
        stratus_cli, list(args), env={**env, "STRATUS_ACTOR": actor}, catch_exceptions=False
    )


def sql(env: dict[str, str], statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """The attacker's tool: the database file, without Stratus in the way."""
    db = sqlite3.connect(env["STRATUS_DB"])
    try:
        for trigger in ("events_no_update", "events_no_delete"):
            db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        rows = db.execute(statement, params).fetchall()
        db.commit()
        return rows
    finally:
        db.close()


@pytest.fixture
def keyed(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "p.yaml").write_text(POLICY)
    return {**env, "STRATUS_POLICY_DIR": str(policies), "STRATUS_AUDIT_KEY": "k" * 32}


def asked(env: dict[str, str]) -> str:
    result = run(env, "alice", "act", "scale", "deploy/geo", "replicas=3", "-n", "hotel", "--yes")
    assert result.exit_code == 1, result.output
    [(proposal_id,)] = sql(env, "SELECT id FROM proposals ORDER BY created_at DESC LIMIT 1")
    return str(proposal_id)


def executed(env: dict[str, str], kube: KubeClient) -> tuple[str, str, str]:
    """A write two people approved: its proposal, execution record and undo entry."""
    proposal_id = asked(env)
    assert run(env, "bob", "proposals", "approve", proposal_id).exit_code == 0
    done = run(env, "carol", "proposals", "approve", proposal_id)
    assert done.exit_code == 0 and kube.get(GEO)["spec"]["replicas"] == 3, done.output
    [(execution_id, undo_id)] = sql(
        env,
        "SELECT e.id, u.id FROM executions e JOIN undo_entries u ON u.execution_id = e.id "
        "WHERE e.proposal_id = ?",
        (proposal_id,),
    )
    return proposal_id, str(execution_id), str(undo_id)


def named(env: dict[str, str], *words: str) -> Result:
    checked = run(env, "auditor", "audit", "verify")
    assert checked.exit_code == 1, checked.output
    assert "internal error" not in checked.output and "Traceback" not in checked.output
    for word in words:
        assert word in checked.stderr, (word, checked.stderr)
    return checked


def intact(env: dict[str, str]) -> None:
    checked = run(env, "auditor", "audit", "verify")
    assert checked.exit_code == 0, checked.output


@pytest.mark.parametrize(
    "removed", ["proposal", "execution", "undo-entry", "all-three", "body-null"]
)
def test_a_removed_record_of_an_executed_write_is_named(
    keyed: dict[str, str], kube: KubeClient, removed: str
) -> None:
    proposal_id, execution_id, undo_id = executed(keyed, kube)
    intact(keyed)
    if removed in ("undo-entry", "all-three"):
        sql(keyed, "DELETE FROM undo_entries WHERE id = ?", (undo_id,))
    if removed in ("execution", "all-three"):
        sql(keyed, "PRAGMA foreign_keys = OFF")
        sql(keyed, "DELETE FROM undo_entries WHERE execution_id = ?", (execution_id,))
        sql(keyed, "DELETE FROM executions WHERE id = ?", (execution_id,))
    if removed in ("proposal", "all-three"):
        sql(keyed, "DELETE FROM proposals WHERE id = ?", (proposal_id,))
    if removed == "body-null":
        sql(keyed, "UPDATE proposals SET body = NULL WHERE id = ?", (proposal_id,))
    expected = {
        "proposal": [f"proposal {proposal_id}"],
        "execution": [f"execution {execution_id}"],
        "undo-entry": [undo_id],
        "all-three": [f"proposal {proposal_id}", f"execution {execution_id}", undo_id],
        "body-null": [f"proposal {proposal_id}"],
    }[removed]
    named(keyed, *expected)


def test_an_execution_record_that_is_not_the_one_written_is_named(
    keyed: dict[str, str], kube: KubeClient
) -> None:
    _, execution_id, _ = executed(keyed, kube)
    # Another genuine record's digest and images, moved onto this one.
    sql(
        keyed,
        "UPDATE executions SET intent = 'scaled to 1 (harmless)', diff = '' WHERE id = ?",
        (execution_id,),
    )
    named(keyed, f"execution {execution_id}")


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("target", "deployment/profile in hotel"),
        ("action", "rollout-restart"),
        ("requester", "cli:mallory"),
        ("plan", '{"digest": "0000"}'),
        ("created_at", "2001-01-01T00:00:00+00:00"),
        ("updated_at", "2001-01-01T00:00:00+00:00"),
    ],
)
def test_every_column_of_a_proposal_row_is_compared_with_its_body(
    keyed: dict[str, str], kube: KubeClient, column: str, value: str
) -> None:
    proposal_id = asked(keyed)
    intact(keyed)
    sql(keyed, f"UPDATE proposals SET {column} = ? WHERE id = ?", (value, proposal_id))
    checked = named(keyed, f"proposal {proposal_id}", column)
    assert "record tampered" in checked.stderr
    listed = run(keyed, "auditor", "proposals", "list").output
    [line] = [row for row in listed.splitlines() if row.startswith(proposal_id)]
    assert "TAMPERED" in line, listed


def _vote_event(env: dict[str, str], proposal_id: str) -> tuple[int, dict[str, Any]]:
    [(seq, payload)] = sql(
        env,
        "SELECT seq, payload FROM events WHERE type = 'proposal.voted' AND subject = ?",
        (proposal_id,),
    )
    return int(seq), json.loads(payload)


def _insert_event(env: dict[str, str], proposal_id: str, payload: dict[str, Any]) -> None:
    sql(
        env,
        "INSERT INTO events (at, stream, subject, type, version, payload, seal) "
        "SELECT at, stream, subject, type, version, ?, seal FROM events "
        "WHERE type = 'proposal.voted' AND subject = ?",
        (json.dumps(payload), proposal_id),
    )


@pytest.mark.parametrize("forgery", ["copied-and-edited", "edited-in-place", "replayed"])
def test_a_forged_proposal_event_is_not_rendered_and_is_named(
    keyed: dict[str, str], kube: KubeClient, forgery: str
) -> None:
    proposal_id = asked(keyed)
    assert run(keyed, "bob", "proposals", "approve", proposal_id).exit_code == 0  # 1 of 2
    before = run(keyed, "auditor", "proposals", "events", "--proposal", proposal_id).output
    seq, payload = _vote_event(keyed, proposal_id)
    forged = {
        **payload,
        "state": "approved",
        "message": "approved by cli:bob, cli:carol",
        "data": {"choice": "approve", "approvals": ["cli:bob", "cli:carol"]},
    }
    if forgery == "copied-and-edited":
        _insert_event(keyed, proposal_id, forged)
    elif forgery == "edited-in-place":
        sql(keyed, "UPDATE events SET payload = ? WHERE seq = ?", (json.dumps(forged), seq))
    else:
        _insert_event(keyed, proposal_id, payload)
    shown = run(keyed, "auditor", "proposals", "events", "--proposal", proposal_id)
    assert shown.exit_code == 0, shown.output
    assert "cli:carol" not in shown.output, shown.output
    # Nothing but what Stratus wrote (an event edited in place is not shown at all).
    assert set(shown.output.splitlines()) <= set(before.splitlines()), shown.output
    if forgery != "edited-in-place":
        assert shown.output == before, shown.output
    named(keyed, "event", proposal_id)
    assert kube.get(GEO)["spec"]["replicas"] == 1
