"""The terminal tells the truth about ended incidents (issue 18 §2, §6): ``incidents resume`` and
``incidents cancel`` on a closed incident say it is closed and exit non-zero, with a next step
that names the real incident and a real command; an escalated one is looked at again with
``incidents look-again ID`` (Slack's Look again), in the same incident. In process, against
the lab."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.test_cancel_completed_attempt import rows, run
from tests.agents.test_workflow import replicas
from tests.conftest import Lab
from tools.k8s import KubeClient

DENY = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: deny-scale}
defaults: {approvers: ["*"]}
rules:
  - {name: no-scaling, decision: deny, match: {actions: [scale]}}
"""
ALLOW = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: allow}
rules:
  - {name: allow-all, decision: allow, allow_irreversible: true}
"""


@pytest.fixture
def policy_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "policy"
    directory.mkdir()
    return directory


@pytest.fixture
def cli_env(env: dict[str, str], tmp_path: Path, lab: Lab, policy_dir: Path) -> dict[str, str]:
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    lab.settle()
    return {**env, "STRATUS_POLICY_DIR": str(policy_dir), "STRATUS_HOME": str(tmp_path / "h")}


def only_incident(env: dict[str, str]) -> tuple[str, str]:
    (row,) = rows(env, "SELECT id, state FROM incidents")
    return str(row["id"]), str(row["state"])


def test_resume_and_cancel_of_an_escalated_incident_say_so_and_look_again_reopens_it(
    cli_env: dict[str, str], policy_dir: Path, kube: KubeClient
) -> None:
    (policy_dir / "policy.yaml").write_text(DENY)
    denied = run(cli_env, "investigate", "hotel", "--planner", "offline")
    iid, state = only_incident(cli_env)
    assert state == "escalated", denied.output
    assert denied.exit_code == 3
    assert f"stratus incidents look-again {iid}" in denied.output  # the way on, named
    for verb in ("resume", "cancel"):
        said = run(cli_env, "incidents", verb, iid)
        assert said.exit_code == 1, said.output
        assert f"incident {iid} is closed (escalated" in said.output, said.output
        assert f"stratus incidents look-again {iid}" in said.output, said.output
        assert "internal error" not in said.output
    assert only_incident(cli_env) == (iid, "escalated")

    (policy_dir / "policy.yaml").write_text(ALLOW)
    again = run(cli_env, "incidents", "look-again", iid, "--yes")
    assert again.exit_code == 0, again.output
    assert f"looking again at incident {iid}" in again.output
    assert only_incident(cli_env) == (iid, "resolved")  # the same incident, no new one
    assert replicas(kube, "recommendation") == 1

    resumed = run(cli_env, "incidents", "resume", iid)
    assert resumed.exit_code == 1
    assert f"incident {iid} is closed (resolved" in resumed.output, resumed.output
    assert f"stratus incidents show {iid}" in resumed.output
    assert "look-again" not in resumed.output
    refused = run(cli_env, "incidents", "look-again", iid)
    assert refused.exit_code == 1 and "is closed (resolved" in refused.output, refused.output


def test_a_new_investigation_after_an_escalation_looks_again_in_it(
    cli_env: dict[str, str], policy_dir: Path, kube: KubeClient
) -> None:
    (policy_dir / "policy.yaml").write_text(DENY)
    run(cli_env, "investigate", "hotel", "--planner", "offline")
    iid, state = only_incident(cli_env)
    assert state == "escalated"
    (policy_dir / "policy.yaml").write_text(ALLOW)
    again = run(cli_env, "investigate", "hotel", "--planner", "offline", "--yes")
    assert again.exit_code == 0, again.output
    assert f"looking again in the escalated incident {iid} on hotel" in again.output
    assert only_incident(cli_env) == (iid, "resolved")
    assert replicas(kube, "recommendation") == 1
