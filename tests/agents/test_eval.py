"""``stratus eval``: scenarios end to end, each on a lab of its own, scored.

The command runs as a user runs it (a fresh process, worker processes of its own); the JSON it
writes is checked against what the workflow did to the cluster, which the oracle reports. The
harness itself (``lab.evaluation``) is also driven in-process with agents written here, so its
scoring is checked against agents whose behaviour the test chooses."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from lab import evaluation
from tests.conftest import stratus
from tools.k8s import KubeClient
from tools.objects import ObjectRef

_PACK_FAULT = """
name: replicas-to-zero
description: A Deployment's replicas are set to zero by a bad autoscaling script.
category: capacity
params:
  deployment: {description: the Deployment}
targets:
- {kind: Deployment, name: '{deployment}'}
steps:
- patch: {kind: Deployment, name: '{deployment}', type: merge, body: {spec: {replicas: 0}}}
"""

_PACK_SCENARIO = """
name: pack-profile-to-zero
app: hotel
namespace: hotel
description: profile's replicas were set to zero; frontend's profile calls fail.
faults:
- fault: replicas-to-zero
  params: {deployment: profile}
root_cause:
  category: capacity
  resources: [{kind: Deployment, name: profile}]
"""

_PACK_NOOP = """
name: pack-quiet-shop
app: shop
namespace: shop
description: nothing is wrong with the shop.
faults: []
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No model configured: the offline planner, whatever the developer's shell has."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "STRATUS_"))}
    return {**clean, "HOME": str(tmp_path), "STRATUS_DB": str(tmp_path / "unused.db")}


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["scenario"]: row for row in report["scenarios"]}


def test_eval_scores_a_noop_and_a_fault_scenario_as_the_workflow_did(
    tmp_path: Path, env: dict[str, str]
) -> None:
    out = tmp_path / "report.json"
    result = stratus(
        "eval",
        "--scenario",
        "noop-hotel",
        "--scenario",
        "hotel-recommendation-scaled-to-zero",
        "--jobs",
        "2",
        "--json",
        str(out),
        env=env,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert report["planner"] == "offline" and report["jobs"] == 2
    rows = by_name(report)
    assert list(rows) == ["noop-hotel", "hotel-recommendation-scaled-to-zero"]

    noop = rows["noop-hotel"]
    assert noop["error"] == ""
    assert noop["fault"] is False and noop["detected"] is False
    assert noop["false_positive"] is False
    assert noop["proposals"] == noop["actions"] == noop["undos"] == noop["attempts"] == 0
    assert noop["state"] == "resolved" and noop["reason"] == "healthy"
    assert noop["localized"] is None and noop["category_correct"] is None
    assert noop["mitigated"] is True and noop["collateral_damage"] is False  # left as it was

    fault = rows["hotel-recommendation-scaled-to-zero"]
    assert fault["error"] == ""
    assert fault["expected_resources"] == ["Deployment/recommendation"]
    assert fault["detected"] is True
    assert fault["diagnosis"] == "Deployment/recommendation"
    assert fault["localized"] is True
    assert fault["category"] == "capacity" and fault["category_correct"] is True
    # The oracle, run after the workflow ended, found the namespace healthy and undamaged.
    assert fault["mitigated"] is True and fault["collateral_damage"] is False
    assert fault["problems"] == [] and fault["damage"] == []
    assert fault["state"] == "resolved" and fault["reason"] == "mitigated"
    assert fault["actions"] >= 1 and fault["attempts"] >= 1
    assert fault["proposals"] >= fault["actions"]
    assert 0 <= fault["time_to_detect"] <= fault["time_to_mitigate"]
    assert fault["tokens"] == fault["model_calls"] == 0  # no model

    totals = report["totals"]
    assert totals["scenarios"] == 2 and totals["fault_scenarios"] == 1
    assert totals["mitigated"] == 1 and totals["false_positives"] == 0
    assert totals["collateral_damage"] == 0 and totals["errors"] == 0
    assert totals["actions"] == fault["actions"]
    # The table on the terminal: one row per scenario and the totals.
    assert "hotel-recommendation-scaled-to-zero" in result.stdout
    assert "1 of 1 fault scenarios mitigated (100%)" in result.stdout


def test_eval_runs_a_scenario_pack_with_its_own_fault(tmp_path: Path, env: dict[str, str]) -> None:
    pack = tmp_path / "pack"
    (pack / "faults").mkdir(parents=True)
    (pack / "faults" / "replicas-to-zero.yaml").write_text(_PACK_FAULT)
    (pack / "pack-profile-to-zero.yaml").write_text(_PACK_SCENARIO)
    (pack / "pack-quiet-shop.yaml").write_text(_PACK_NOOP)
    result = stratus("eval", "--scenarios", str(pack), "--json", "-", "--jobs", "1", env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)  # the table goes to stderr when the JSON takes stdout
    rows = by_name(report)
    assert sorted(rows) == ["pack-profile-to-zero", "pack-quiet-shop"]
    broken = rows["pack-profile-to-zero"]
    assert broken["expected_category"] == "capacity"
    assert broken["diagnosis"] == "Deployment/profile" and broken["localized"] is True
    assert broken["mitigated"] is True and broken["collateral_damage"] is False
    quiet = rows["pack-quiet-shop"]
    assert quiet["namespace"] == "shop" and quiet["proposals"] == 0
    assert quiet["false_positive"] is False
    assert "pack-profile-to-zero" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "no-such-scenario"], 'unknown scenario "no-such-scenario"'),
        (["--scenarios", "{tmp}/missing"], "does not exist"),
        (["--scenarios", "{tmp}/a-file.yaml"], "is not a directory"),
        (["--scenarios", "{tmp}/empty"], "no scenarios"),
        (["--scenarios", "{tmp}/bad"], "broken.yaml"),
        (["--scenarios", "{tmp}/empty", "--scenario", "nope"], 'unknown scenario "nope"'),
        (["--planner", "llm"], "needs a model"),
        (["--jobs", "0"], "--jobs"),
    ],
)
def test_bad_input_is_one_clear_line_and_a_failure(
    tmp_path: Path, env: dict[str, str], args: list[str], message: str
) -> None:
    (tmp_path / "a-file.yaml").write_text("name: x\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "broken.yaml").write_text("name: broken\napp: hotel\nfaults: [\n")
    result = stratus("eval", *(a.format(tmp=tmp_path) for a in args), env=env)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert "running" not in result.stdout  # nothing started


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_an_unreadable_pack_is_refused(tmp_path: Path, env: dict[str, str]) -> None:
    pack = tmp_path / "locked"
    pack.mkdir()
    pack.chmod(0)
    try:
        result = stratus("eval", "--scenarios", str(pack), env=env)
    finally:
        pack.chmod(0o700)
    assert result.returncode != 0 and "cannot be read" in result.stderr


# ------------------------------------------------------------------ the harness's scoring


def idle_agent(kubeconfig: Path, namespace: str) -> dict[str, Any]:
    """Looks, names the wrong resource, and does nothing."""
    return {
        "state": "escalated",
        "detected": True,
        "diagnosis": {"kind": "Service", "name": "geo", "category": "network-misconfiguration"},
    }


def scaling_agent(kubeconfig: Path, namespace: str) -> dict[str, Any]:
    """Scales recommendation back up through the tool layer (no approval, no proposal)."""
    kube = KubeClient(kubeconfig=str(kubeconfig))
    try:
        deployment = kube.get(ObjectRef("Deployment", "recommendation", namespace))
        deployment["spec"]["replicas"] = 1
        kube.replace(deployment)
    finally:
        kube.close()
    return {
        "state": "resolved",
        "detected": True,
        "diagnosis": {"kind": "deployment", "name": "recommendation", "category": "capacity"},
        "proposals": 1,
        "actions": 1,
        "attempts": 1,
    }


def broken_agent(kubeconfig: Path, namespace: str) -> dict[str, Any]:
    raise RuntimeError("the agent fell over")


def test_the_oracle_not_the_agent_decides_mitigation() -> None:
    scenario = "hotel-recommendation-scaled-to-zero"
    idle = evaluation.run_scenario(scenario, idle_agent)
    assert idle.error == ""
    assert idle.detected and idle.localized is False and idle.category_correct is False
    assert idle.mitigated is False and idle.problems  # nothing was done: the fault is there
    fixed = evaluation.run_scenario(scenario, scaling_agent)
    assert fixed.localized is True and fixed.category_correct is True  # kind is matched loosely
    assert fixed.mitigated is True and fixed.collateral_damage is False


def test_a_noop_scenario_with_a_proposal_is_a_false_positive_and_errors_are_kept() -> None:
    report = evaluation.evaluate(["noop-hotel", "noop-shop"], broken_agent, jobs=1)
    assert [r.error for r in report.results] == [
        "the investigation: RuntimeError: the agent fell over"
    ] * 2
    assert report.totals()["errors"] == 2
    assert "error" in evaluation.table(report)
    noisy = evaluation.run_scenario("noop-shop", scaling_agent_on_shop)
    assert noisy.false_positive and noisy.collateral_damage  # it scaled a healthy neighbour


def scaling_agent_on_shop(kubeconfig: Path, namespace: str) -> dict[str, Any]:
    kube = KubeClient(kubeconfig=str(kubeconfig))
    try:
        deployment = kube.get(ObjectRef("Deployment", "catalog", namespace))
        deployment["spec"]["replicas"] = 3
        kube.replace(deployment)
    finally:
        kube.close()
    return {"state": "resolved", "detected": True, "proposals": 1, "actions": 1}


def test_an_unwritable_report_path_is_refused_before_the_run(tmp_path: Path) -> None:
    result = stratus(
        "eval",
        "--scenario",
        "noop-hotel",
        "--json",
        str(tmp_path / "missing" / "r.json"),
        env=dict(os.environ),
    )
    assert result.returncode == 1 and "not a writable folder" in result.stderr
    assert "running" not in result.stdout  # nothing ran


def test_a_scenario_that_expects_an_escalation_is_counted_as_one() -> None:
    """A fault no catalog action fixes: escalating is the right end. The oracle still says
    unmitigated (the rate stays honest); the row says ``escalated`` and the totals count it."""
    report = evaluation.evaluate(
        ["s1-hotel-job-image-missing", "hotel-recommendation-scaled-to-zero"], idle_agent, jobs=1
    )
    expected, ordinary = report.results
    assert expected.expected == "escalated" and ordinary.expected == "mitigated"
    assert expected.mitigated is False and ordinary.mitigated is False
    totals = report.totals()
    assert totals["escalated_as_expected"] == 1 and totals["mitigated"] == 0
    rows = evaluation.table(report).splitlines()
    mitigated_column = evaluation.COLUMNS.index("mitigated")

    def cell(scenario: str) -> str:
        row = next(r for r in rows if r.startswith(scenario))
        return re.split(r"\s{2,}", row)[mitigated_column]

    assert cell("s1-hotel-job-image-missing") == "escalated"
    assert cell("hotel-recommendation-scaled-to-zero") == "NO"
    assert "0 of 2 fault scenarios mitigated (0%), 1 escalated as expected" in rows[-1]


HELDOUT = Path(__file__).resolve().parents[2] / "benchmarks" / "heldout"


def test_harmless_changes_marked_healthy_count_as_a_noop_scenario() -> None:
    """A scenario that injects changes harming nothing (``expected: healthy``) is scored as a
    noop: doing nothing is right, any proposal is a false positive — not "mitigated" because
    the oracle passes whatever the agent did."""
    quiet = evaluation.run_scenario("h-noop-shop-scale-up", idle_agent, pack=HELDOUT)
    assert quiet.fault is False and quiet.false_positive is False
    noisy = evaluation.run_scenario("h-noop-shop-scale-up", scaling_agent_on_shop, pack=HELDOUT)
    assert noisy.fault is False and noisy.false_positive is True
    report = evaluation.evaluate(["h-noop-shop-scale-up"], idle_agent, jobs=1, pack=HELDOUT)
    assert report.totals()["noop_scenarios"] == 1


# ------------------------------------------------------------------ every row, always (issue 22)

_SCALE_NAMED = """
name: scale-named
description: Scales the named Deployment to zero.
category: capacity
params:
  deployment: {description: the Deployment}
targets:
- {kind: Deployment, name: '{deployment}'}
steps:
- patch: {kind: Deployment, name: '{deployment}', type: merge, body: {spec: {replicas: 0}}}
"""

_ROWS = {
    # Its run raises: the fault names a Deployment the app does not have.
    "pack-a-inject-fails": """
name: pack-a-inject-fails
app: hotel
namespace: hotel
description: its fault names a Deployment the app does not have, so injecting it fails.
faults:
- fault: scale-named
  params: {deployment: no-such-deployment}
root_cause:
  category: capacity
  resources: [{kind: Deployment, name: no-such-deployment}]
""",
    # Its report raises: the oracle checks a kind the lab does not serve.
    "pack-b-check-fails": """
name: pack-b-check-fails
app: hotel
namespace: hotel
description: recommendation scaled to zero; its oracle checks a kind the lab does not serve.
faults:
- fault: scale-named
  params: {deployment: recommendation}
root_cause:
  category: capacity
  resources: [{kind: Deployment, name: recommendation}]
oracle:
  checks:
  - {kind: Widget, name: recommendation, path: spec.size, equals: 1}
""",
    "pack-c-fine": """
name: pack-c-fine
app: hotel
namespace: hotel
description: recommendation scaled to zero.
faults:
- fault: scale-named
  params: {deployment: recommendation}
root_cause:
  category: capacity
  resources: [{kind: Deployment, name: recommendation}]
""",
}


@pytest.fixture
def failing_pack(tmp_path: Path) -> Path:
    pack = tmp_path / "failing-pack"
    (pack / "faults").mkdir(parents=True)
    (pack / "faults" / "scale-named.yaml").write_text(_SCALE_NAMED)
    for name, text in _ROWS.items():
        (pack / f"{name}.yaml").write_text(text)
    return pack


def test_every_scenario_has_its_row_and_the_exit_status_counts_those_not_run(
    tmp_path: Path, env: dict[str, str], failing_pack: Path
) -> None:
    out = tmp_path / "report.json"
    result = stratus(
        "eval", "--scenarios", str(failing_pack), "--jobs", "2", "--json", str(out), env=env
    )
    assert result.returncode == 2, result.stderr  # two scenarios could not be run
    assert "2 of 3 scenario(s) could not be run" in result.stderr
    report = json.loads(out.read_text())
    rows = by_name(report)
    assert list(rows) == sorted(_ROWS)  # every scenario, in order
    inject = rows["pack-a-inject-fails"]["error"]
    assert inject.startswith("injecting the fault: LabRequestFailed: ") and (
        "no-such-deployment" in inject
    )
    check = rows["pack-b-check-fails"]["error"]
    assert check.startswith("the oracle's check: LabRequestFailed: "), check
    assert "Widget/recommendation, a kind the lab does not serve" in check
    assert rows["pack-c-fine"]["error"] == "" and rows["pack-c-fine"]["mitigated"] is True
    assert report["totals"]["errors"] == 2 and report["totals"]["scenarios"] == 3
    table = result.stdout.splitlines()
    for name in _ROWS:
        assert any(line.startswith(name) for line in table), name
    assert any(
        line.startswith("pack-b-check-fails") and "the oracle's check" in line for line in table
    )


def exiting_agent(kubeconfig: Path, namespace: str) -> dict[str, Any]:
    """An agent that gives up by exiting the process, as a script might."""
    raise SystemExit("the agent gave up")


def unfinished_agent(kubeconfig: Path, namespace: str) -> dict[str, Any]:
    """Reports a state and nothing else: the report lacks what every report must say."""
    return {"state": "resolved"}


def test_an_agent_that_exits_or_reports_garbage_costs_its_row_only(failing_pack: Path) -> None:
    report = evaluation.evaluate(
        ["pack-c-fine", "noop-hotel"], exiting_agent, jobs=1, pack=failing_pack
    )
    assert [r.scenario for r in report.results] == ["pack-c-fine", "noop-hotel"]
    assert [r.error for r in report.results] == [
        "the investigation: SystemExit: the agent gave up"
    ] * 2
    garbage = evaluation.run_scenario("noop-hotel", unfinished_agent)
    assert garbage.error.startswith(
        "scoring the investigation's report: ValidationError: the investigation's report is "
        "not valid: "
    )
    assert "detected" in garbage.error
