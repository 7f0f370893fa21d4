"""Stored records someone edited into something Stratus cannot read: a proposal whose body is
not JSON, names an unknown field or a newer schema, or is gone; a grant whose timestamps are
not timestamps. Such a record is tampered: shown as such where it is listed, refused where it
is acted on, skipped elsewhere, and named by ``stratus audit verify`` — never a crash of an
unrelated command. The CLI runs in-process against the lab; the tampering is plain SQL."""

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
PROFILE = ObjectRef("Deployment", "profile", "hotel")
ASK = """apiVersion: stratus/v1
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


def clean(result: Result) -> None:
    assert "internal error" not in result.output, result.output
    assert "Traceback" not in result.output, result.output


@pytest.fixture
def keyed(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "p.yaml").write_text(ASK)
    return {**env, "STRATUS_POLICY_DIR": str(policies), "STRATUS_AUDIT_KEY": "k" * 32}


def ask(env: dict[str, str], target: str = "deploy/geo", replicas: int = 3) -> str:
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


# ------------------------------------------------------------------- unreadable proposals


def _not_json(body: str) -> str | None:
    return body[: len(body) // 2]


def _unknown_field(body: str) -> str | None:
    return json.dumps({**json.loads(body), "backdoor": True})


def _newer_schema(body: str) -> str | None:
    return json.dumps({**json.loads(body), "schema_version": 2})


def _garbage_expiry(body: str) -> str | None:
    return json.dumps({**json.loads(body), "expires_at": "garbage"})


def _not_an_object(body: str) -> str | None:
    return "[1, 2, 3]"


def _null(body: str) -> str | None:
    return None


BREAKS = [_not_json, _unknown_field, _newer_schema, _garbage_expiry, _not_an_object, _null]
IDS = ["not-json", "unknown-field", "schema-2", "garbage-expiry", "not-an-object", "null"]


@pytest.mark.parametrize("breaks", BREAKS, ids=IDS)
def test_an_unreadable_proposal_is_named_and_crashes_nothing(
    keyed: dict[str, str], kube: KubeClient, breaks: Any
) -> None:
    broken = ask(keyed)
    [(text,)] = sql(keyed, "SELECT body FROM proposals WHERE id = ?", (broken,))
    sql(keyed, "UPDATE proposals SET body = ? WHERE id = ?", (breaks(text), broken))

    # Listed: shown as tampered (every listing), never as waiting.
    for args in (["proposals", "list"], ["proposals", "list", "--all"]):
        listed = run(keyed, "auditor", *args)
        clean(listed)
        assert listed.exit_code == 0, listed.output
        [line] = [row for row in listed.output.splitlines() if row.startswith(broken)]
        assert "TAMPERED" in line and "awaiting" not in line, listed.output
    shown = run(keyed, "auditor", "proposals", "show", broken)
    clean(shown)
    assert "TAMPERED" in shown.output or "outside Stratus" in shown.output, shown.output

    # Acted on: refused with one line, nothing written.
    for actor in ("bob", "carol"):
        answered = run(keyed, actor, "proposals", "approve", broken)
        clean(answered)
        assert answered.exit_code == 1 and broken in answered.stderr, answered.output
        assert "outside Stratus" in answered.stderr, answered.output
    assert kube.get(GEO)["spec"]["replicas"] == 1

    # Elsewhere: skipped. Unrelated work goes on.
    other = ask(keyed, "deploy/profile")
    dry = run(
        keyed, "alice", "act", "scale", "deploy/profile", "replicas=2", "-n", "hotel", "--dry-run"
    )
    clean(dry)
    assert dry.exit_code == 0, dry.output
    answered = run(keyed, "bob", "proposals", "approve", other)
    clean(answered)
    assert answered.exit_code == 0 and kube.get(PROFILE)["spec"]["replicas"] == 3, answered.output
    listed = run(keyed, "alice", "undo", "--list")
    clean(listed)
    assert listed.exit_code == 0, listed.output
    undone = run(keyed, "alice", "undo", "--last", "--yes")
    clean(undone)
    assert kube.get(PROFILE)["spec"]["replicas"] == 1, undone.output
    clean(run(keyed, "auditor", "proposals", "events"))

    # And named.
    checked = run(keyed, "auditor", "audit", "verify")
    clean(checked)
    assert checked.exit_code == 1 and f"proposal {broken}" in checked.stderr, checked.output


# ------------------------------------------------------------------------ unreadable grants


def _grant(env: dict[str, str]) -> str:
    proposal_id = ask(env, replicas=2)
    answered = run(env, "bob", "proposals", "approve", proposal_id, "--always")
    assert answered.exit_code == 0, answered.output
    [(grant_id,)] = sql(env, "SELECT id FROM grants ORDER BY created_at DESC LIMIT 1")
    return str(grant_id)


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("revoked_at", "garbage"),
        ("expires_at", "trailing space "),
        ("created_at", "2020-13-45T00:00:00+00:00"),
        ("expires_at", ""),
        ("expires_at", "2999-01-01T00:00:00"),
        ("creator_groups", "not json"),
    ],
    ids=[
        "revoked-garbage",
        "expiry-space",
        "created-impossible",
        "expiry-empty",
        "expiry-naive",
        "groups-not-json",
    ],
)
def test_a_grant_with_an_unreadable_time_allows_nothing_and_crashes_nothing(
    keyed: dict[str, str], kube: KubeClient, column: str, value: str
) -> None:
    grant_id = _grant(keyed)
    assert kube.get(GEO)["spec"]["replicas"] == 2
    if value == "trailing space ":
        [(expires,)] = sql(keyed, "SELECT expires_at FROM grants WHERE id = ?", (grant_id,))
        value = f"{expires} "
    sql(keyed, f"UPDATE grants SET {column} = ? WHERE id = ?", (value, grant_id))
    grants = run(keyed, "auditor", "policy", "grants", "--all")
    clean(grants)
    assert grant_id in grants.output, grants.output
    acted = run(keyed, "alice", "act", "scale", "deploy/geo", "replicas=4", "-n", "hotel", "--yes")
    clean(acted)
    assert acted.exit_code == 1 and kube.get(GEO)["spec"]["replicas"] == 2, acted.output
    checked = run(keyed, "auditor", "audit", "verify")
    clean(checked)
    assert checked.exit_code == 1 and f"grant {grant_id}" in checked.stderr, checked.output
