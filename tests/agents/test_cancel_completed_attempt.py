"""A cancel that comes after an attempt's last step executed (the approve won the race) does not
treat the attempt as half done (issue 16 follow-up, L5): its fix stays, the incident ends
``cancelled`` with the executed step in its record, no undo is proposed, and no state change is
recorded twice. Only a multi-step attempt with steps left is undone. Through the CLI, in
process, against the lab."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_cli
from store.db import Store
from tests.agents.test_workflow import replicas
from tests.conftest import Lab
from tools.k8s import KubeClient

POLICY = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: ask-scale-and-undo}
defaults: {approvers: ["*"]}
rules:
  - {name: ask-scale, decision: ask, match: {actions: [scale]}}
  - {name: ask-undo, decision: ask, match: {actions: [undo]}}
"""


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(stratus_cli, list(args), env=env, catch_exceptions=False)


def rows(env: dict[str, str], sql: str) -> list[dict[str, object]]:
    store = Store(env["STRATUS_DB"])
    try:
        return store.query(sql)
    finally:
        store.close()


@pytest.fixture
def cli_env(env: dict[str, str], tmp_path: Path, lab: Lab) -> dict[str, str]:
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    lab.settle()
    directory = tmp_path / "policy"
    directory.mkdir()
    (directory / "policy.yaml").write_text(POLICY)
    return {**env, "STRATUS_POLICY_DIR": str(directory), "STRATUS_HOME": str(tmp_path / "h")}


def transitions(env: dict[str, str], incident_id: str) -> list[str]:
    """The incident's state changes as ``from -> to: message``, in order."""
    found = rows(
        env,
        "SELECT json_extract(payload, '$.previous_state') AS prev, "
        "json_extract(payload, '$.state') AS state, json_extract(payload, '$.message') AS msg "
        "FROM events WHERE stream = 'incident' AND subject = ? "
        "AND type = 'incident.state_changed' ORDER BY seq".replace("?", f"'{incident_id}'"),
    )
    return [f"{r['prev']} -> {r['state']}: {r['msg']}" for r in found]


def test_a_cancel_after_the_only_step_executed_keeps_the_fix_and_ends_cancelled(
    cli_env: dict[str, str], kube: KubeClient
) -> None:
    env = cli_env
    waiting = run(env, "investigate", "hotel", "--planner", "offline")
    assert waiting.exit_code == 0, waiting.output
    (incident,) = rows(env, "SELECT id, state FROM incidents")
    assert incident["state"] == "awaiting_approval"
    iid = str(incident["id"])
    (step,) = rows(env, "SELECT id FROM proposals")
    approved = run(env, "proposals", "approve", str(step["id"]))
    assert approved.exit_code == 0 and "applied:" in approved.stdout, approved.output
    assert replicas(kube, "recommendation") == 1

    cancelled = run(env, "incidents", "cancel", iid, "--reason", "handled by hand")

    assert cancelled.exit_code == 0, cancelled.output
    assert "(cancelled)" in cancelled.stdout, cancelled.stdout
    assert "half-way" not in cancelled.stdout
    assert replicas(kube, "recommendation") == 1  # the fix stays
    # No undo was proposed: the attempt was complete, and nobody is asked to undo it.
    assert rows(env, "SELECT id FROM proposals WHERE action = 'undo'") == []
    assert rows(env, "SELECT id FROM proposals WHERE state = 'executed'") == [step]
    moves = transitions(env, iid)
    assert not any("undoing" in m for m in moves), moves
    assert [m for m in moves if "-> cancelled" in m], moves
    repeated = [m for m, n in Counter(moves).items() if n > 1]
    assert not repeated, moves
    shown = run(env, "incidents", "show", iid)
    assert str(step["id"]) in shown.stdout  # the executed step is in the record
    assert "stays" in shown.stdout, shown.stdout
    # Undoing it stays possible, as a request of its own.
    assert "undo-" in shown.stdout or rows(env, "SELECT id FROM undo_entries WHERE state='active'")
