"""Undoing a resolved incident's fix from a terminal (``stratus undo --last``) re-opens the
incident, as the Undo button does (``incidents.reopening``): the terminal says so, and the
incident is open again — one rule for every surface."""

from __future__ import annotations

from pathlib import Path

from tests.agents.test_investigate_cli import ALLOW, incident_state, inject, policy
from tests.conftest import Lab, stratus


def test_undo_last_of_a_resolved_incident_s_fix_reopens_it(
    lab: Lab, env: dict[str, str], tmp_path: Path
) -> None:
    inject(lab, "hotel-recommendation-scaled-to-zero")
    run_env = policy(env, tmp_path, ALLOW)
    done = stratus("investigate", "hotel", "--settle-seconds", "20", env=run_env)
    assert done.returncode == 0 and "resolved" in done.stdout, done.stdout + done.stderr
    ((incident_id, state),) = incident_state(run_env["STRATUS_DB"])
    assert state == "resolved"
    undone = stratus("undo", "--last", "--yes", env=run_env)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert f"incident {incident_id}: fix undone by" in undone.stdout, undone.stdout
    assert "incident re-opened" in undone.stdout
    assert incident_state(run_env["STRATUS_DB"]) == [(incident_id, "detecting")]
    shown = stratus("incidents", "show", incident_id, env=run_env)
    assert "undone:    fix undone by" in shown.stdout and "re-opened" in shown.stdout
