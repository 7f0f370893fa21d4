"""Forged approvals: someone who can write the database file (but does not hold
``STRATUS_AUDIT_KEY``) edits a proposal's state, votes or decision, or a grant, and then lets
Stratus carry on. Every edit must stop the write with a clear line, and ``stratus audit verify``
must name the record. The CLI runs in-process against the lab; the tampering is plain SQL on
the SQLite file, as an attacker would do it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from bot import cards
from cli.main import stratus as stratus_cli
from proposals.repository import ProposalRepository
from store.db import Store
from tools.k8s import KubeClient
from tools.objects import ObjectRef

GEO = ObjectRef("Deployment", "geo", "hotel")
PROFILE = ObjectRef("Deployment", "profile", "hotel")
TWO_APPROVERS = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: test}
rules:
  - name: two-people
    match: {actions: [scale]}
    decision: ask
    min_approvals: 2
    self_approval: false
"""
# One approver, not the requester, and "Always allow" may be answered.
REMEMBERED = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: test}
rules:
  - name: someone-else
    match: {actions: [scale]}
    decision: ask
    self_approval: false
    remember: true
    max_grant: 1h
"""
Body = dict[str, Any]


def run(env: dict[str, str], actor: str, *args: str) -> Result:
    return CliRunner().invoke(
        stratus_cli, list(args), env={**env, "STRATUS_ACTOR": actor}, catch_exceptions=False
    )


def sql(env: dict[str, str], statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """The attacker's tool: the database file, without Stratus in the way."""
    db = sqlite3.connect(env["STRATUS_DB"])
    try:
        rows = db.execute(statement, params).fetchall()
        db.commit()
        return rows
    finally:
        db.close()


def body(env: dict[str, str], proposal_id: str) -> Body:
    [(text,)] = sql(env, "SELECT body FROM proposals WHERE id = ?", (proposal_id,))
    loaded: Body = json.loads(text)
    return loaded


def edit(env: dict[str, str], proposal_id: str, change: Callable[[Body], None]) -> None:
    """Edit the stored body and keep the state column in step, as a careful attacker would."""
    stored = body(env, proposal_id)
    change(stored)
    sql(
        env,
        "UPDATE proposals SET body = ?, state = ? WHERE id = ?",
        (json.dumps(stored), stored["state"], proposal_id),
    )


@pytest.fixture
def keyed(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "p.yaml").write_text(TWO_APPROVERS)
    return {**env, "STRATUS_POLICY_DIR": str(policies), "STRATUS_AUDIT_KEY": "k" * 32}


def ask(env: dict[str, str], target: str = "deploy/geo", replicas: int = 3) -> str:
    """alice asks; she may not approve her own request, so it waits."""
    asked = run(
        env, "alice", "act", "scale", target, f"replicas={replicas}", "-n", "hotel", "--yes"
    )
    assert asked.exit_code == 1 and "someone else must approve" in asked.stderr, asked.output
    [(proposal_id,)] = sql(
        env,
        "SELECT id FROM proposals WHERE state = 'awaiting_approval' AND target LIKE ?",
        (f"%/{target.split('/')[1]} %",),
    )
    return str(proposal_id)


def approve(env: dict[str, str], actor: str, proposal_id: str, *options: str) -> Result:
    return run(env, actor, "proposals", "approve", proposal_id, *options)


def verify(env: dict[str, str]) -> Result:
    return run(env, "auditor", "audit", "verify")


def refused(result: Result, kube: KubeClient, *, replicas: int = 1, ref: ObjectRef = GEO) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "internal error" not in result.stderr
    assert kube.get(ref)["spec"]["replicas"] == replicas


def _approved(stored: Body) -> None:
    stored["state"] = "approved"


def _quorum_one(stored: Body) -> None:
    stored["decision"]["min_approvals"] = 1
    stored["state"] = "approved"


def _anyone(stored: Body) -> None:
    stored["decision"]["approvers"] = ["cli:mallory"]


def _second_voter(stored: Body) -> None:
    # bob's vote, relabelled as carol's: two approvers.
    stored["votes"].append({**stored["votes"][0], "user": "cli:carol"})
    stored["state"] = "approved"


def _drop_vote(stored: Body) -> None:
    stored["votes"] = []


@pytest.mark.parametrize(
    "change",
    [_approved, _quorum_one, _anyone, _second_voter, _drop_vote],
    ids=["state", "min-approvals", "approvers", "forged-vote", "deleted-vote"],
)
def test_an_edited_proposal_is_refused_and_named(
    keyed: dict[str, str], kube: KubeClient, change: Callable[[Body], None]
) -> None:
    proposal_id = ask(keyed)
    assert approve(keyed, "bob", proposal_id).exit_code == 0  # 1 of 2
    edit(keyed, proposal_id, change)
    for actor in ("bob", "carol", "cli:mallory"):
        result = approve(keyed, actor, proposal_id)
        refused(result, kube)
        assert f"proposal {proposal_id}" in result.stderr
        assert "edited outside Stratus" in result.stderr, result.stderr
    checked = verify(keyed)
    assert checked.exit_code == 1 and proposal_id in checked.stderr, checked.output


def test_a_vote_copied_from_another_proposal_does_not_count(
    keyed: dict[str, str], kube: KubeClient
) -> None:
    first = ask(keyed)
    other = ask(keyed, "deploy/profile")
    assert approve(keyed, "carol", other).exit_code == 0
    assert approve(keyed, "bob", first).exit_code == 0
    carols = body(keyed, other)["votes"][0]

    def copied(stored: Body) -> None:
        # carol's vote, moved here and pointed at this plan: looks like a second approval.
        stored["votes"].append({**carols, "digest": stored["plan"]["digest"]})
        stored["state"] = "approved"

    edit(keyed, first, copied)
    result = approve(keyed, "bob", first)
    refused(result, kube)
    assert "vote by cli:carol" in result.stderr and "another proposal" in result.stderr
    assert first in verify(keyed).stderr


def test_an_older_version_of_a_proposal_cannot_be_replayed(
    keyed: dict[str, str], kube: KubeClient
) -> None:
    proposal_id = ask(keyed)
    assert approve(keyed, "bob", proposal_id).exit_code == 0
    assert approve(keyed, "carol", proposal_id, "--no-execute").exit_code == 0
    approved = body(keyed, proposal_id)  # sealed and approved, not executed yet
    assert approved["state"] == "approved"
    done = approve(keyed, "carol", proposal_id)
    assert done.exit_code == 0 and kube.get(GEO)["spec"]["replicas"] == 3, done.output
    assert run(keyed, "alice", "undo", "--last", "--yes").exit_code == 0
    assert kube.get(GEO)["spec"]["replicas"] == 1
    # The approved version, put back: its seal is genuine, but the audit log has moved on.
    edit(keyed, proposal_id, lambda stored: stored.update(approved))
    result = approve(keyed, "carol", proposal_id)
    refused(result, kube)
    assert "older version" in result.stderr, result.stderr
    assert proposal_id in verify(keyed).stderr


def test_without_a_key_a_careless_edit_is_still_caught(
    keyed: dict[str, str], kube: KubeClient
) -> None:
    plain = {k: v for k, v in keyed.items() if k != "STRATUS_AUDIT_KEY"}
    proposal_id = ask(plain)
    assert approve(plain, "bob", proposal_id).exit_code == 0
    edit(plain, proposal_id, _approved)
    refused(approve(plain, "bob", proposal_id), kube)
    assert proposal_id in verify(plain).stderr


# ---------------------------------------------------------------------------------- grants


@pytest.fixture
def remembered(keyed: dict[str, str]) -> dict[str, str]:
    (Path(keyed["STRATUS_POLICY_DIR"]) / "p.yaml").write_text(REMEMBERED)
    return keyed


def _grant_for(env: dict[str, str], target: str) -> str:
    """A genuine grant: alice asks, bob answers "Always allow"."""
    proposal_id = ask(env, target, replicas=2)
    answered = run(env, "bob", "proposals", "approve", proposal_id, "--always")
    assert answered.exit_code == 0, answered.output
    [(grant_id,)] = sql(env, "SELECT id FROM grants ORDER BY created_at DESC LIMIT 1")
    return str(grant_id)


def test_an_inserted_grant_allows_nothing(remembered: dict[str, str], kube: KubeClient) -> None:
    run(remembered, "auditor", "policy", "grants")  # the database exists, grants are empty
    sql(
        remembered,
        "INSERT INTO grants (id, action, namespace, resource, rule, created_by, created_at, "
        "expires_at) VALUES ('grant-forged', 'scale', 'hotel', 'Deployment/geo', "
        "'test:someone-else', 'cli:bob', '2020-01-01T00:00:00+00:00', "
        "'2999-01-01T00:00:00+00:00')",
    )
    result = run(remembered, "alice", "act", "scale", "deploy/geo", "replicas=3", "-n", "hotel")
    refused(result, kube)
    assert "grant grant-forged" in result.stderr and "outside Stratus" in result.stderr
    checked = verify(remembered)
    assert checked.exit_code == 1 and "grant grant-forged" in checked.stderr


@pytest.mark.parametrize(
    ("column", "value", "target"),
    [
        ("expires_at", "2999-01-01T00:00:00+00:00", GEO),
        ("resource", "Deployment/profile", PROFILE),
        ("created_by", "cli:carol", GEO),
        ("revoked_at", None, GEO),
    ],
    ids=["expiry", "scope", "creator", "un-revoked"],
)
def test_an_edited_grant_allows_nothing(
    remembered: dict[str, str], kube: KubeClient, column: str, value: str | None, target: ObjectRef
) -> None:
    grant_id = _grant_for(remembered, "deploy/geo")
    assert kube.get(GEO)["spec"]["replicas"] == 2
    if column == "revoked_at":
        assert run(remembered, "bob", "policy", "revoke", grant_id).exit_code == 0
    sql(remembered, f"UPDATE grants SET {column} = ? WHERE id = ?", (value, grant_id))
    result = run(
        remembered, "alice", "act", "scale", f"deploy/{target.name}", "replicas=4", "-n", "hotel"
    )
    replicas = 2 if target == GEO else 1
    refused(result, kube, replicas=replicas, ref=target)
    if column != "revoked_at":
        assert f"grant {grant_id}" in result.stderr, result.stderr
        checked = verify(remembered)
        assert checked.exit_code == 1 and f"grant {grant_id}" in checked.stderr


# ---------------------------------------------------------------- every surface that lists


def _swap_bodies(env: dict[str, str], first: str, second: str) -> None:
    one, two = body(env, first), body(env, second)
    sql(env, "UPDATE proposals SET body = ? WHERE id = ?", (json.dumps(two), first))
    sql(env, "UPDATE proposals SET body = ? WHERE id = ?", (json.dumps(one), second))


@pytest.mark.parametrize(
    "tamper",
    ["quorum", "state-column", "version-column", "swapped-bodies", "incident-column"],
)
def test_a_tampered_proposal_is_shown_as_tampered_everywhere(
    keyed: dict[str, str], kube: KubeClient, monkeypatch: pytest.MonkeyPatch, tamper: str
) -> None:
    proposal_id = ask(keyed)
    other = ask(keyed, "deploy/profile")
    assert approve(keyed, "bob", proposal_id).exit_code == 0  # 1 of 2
    if tamper == "quorum":
        edit(keyed, proposal_id, _quorum_one)
    elif tamper == "state-column":
        sql(keyed, "UPDATE proposals SET state = 'approved' WHERE id = ?", (proposal_id,))
    elif tamper == "version-column":
        sql(keyed, "UPDATE proposals SET version = version + 1 WHERE id = ?", (proposal_id,))
    elif tamper == "swapped-bodies":
        _swap_bodies(keyed, proposal_id, other)
    else:
        sql(
            keyed, "UPDATE proposals SET incident_id = 'inc-elsewhere' WHERE id = ?", (proposal_id,)
        )
    listed = run(keyed, "auditor", "proposals", "list").output
    everything = run(keyed, "auditor", "proposals", "list", "--all").output
    for output in (listed, everything):
        [line] = [row for row in output.splitlines() if row.startswith(proposal_id)]
        assert "TAMPERED" in line and "edited outside Stratus" in line, output
        assert "approved" not in line.split("by")[0] and "awaiting" not in line, line
    shown = run(keyed, "auditor", "proposals", "show", proposal_id)
    assert shown.exit_code == 0, shown.output
    assert "state:     TAMPERED" in shown.output and "nothing acts on it" in shown.output
    # The card the bot renders from the same query: no buttons, and it says why.
    monkeypatch.setenv("STRATUS_AUDIT_KEY", keyed["STRATUS_AUDIT_KEY"])
    store = Store(keyed["STRATUS_DB"])
    try:
        card = cards.proposal_card(
            ProposalRepository(store).shown_one(proposal_id), incident=None, telemetry=None
        )
    finally:
        store.close()
    rendered = json.dumps([block.to_dict() for block in card])
    assert "edited outside Stratus" in rendered and "Tampered" in rendered
    assert '"actions"' not in rendered and "stratus.approve" not in rendered
    for actor in ("carol", "cli:mallory"):
        refused(approve(keyed, actor, proposal_id), kube)
    checked = verify(keyed)
    assert checked.exit_code == 1 and f"proposal {proposal_id}" in checked.stderr
