"""The shipped alert rules: valid for Prometheus (``promtool check rules``), each one firing on
the series its fault gives and quiet otherwise (``promtool test rules``), in the
kubernetes-mixin shape, and every one unit-tested."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from operations import metrics, readiness
from operations.figures import Figures

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "manifests" / "prometheus" / "alerts.yaml"
TESTS = Path(__file__).with_name("alerts_test.yaml")
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (Debian package prometheus)"
)


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


@needs_promtool
def test_promtool_accepts_the_rules() -> None:
    done = subprocess.run(
        [str(PROMTOOL), "check", "rules", str(RULES)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules())} rules found" in done.stdout


@needs_promtool
def test_promtool_unit_tests_pass() -> None:
    done = subprocess.run(
        [str(PROMTOOL), "test", "rules", TESTS.name],
        cwd=TESTS.parent,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@needs_promtool
def test_a_broken_expectation_fails(tmp_path: Path) -> None:
    """The unit tests can fail: the same file expecting the crash loop alert earlier breaks."""
    broken = TESTS.read_text().replace("eval_time: 10m", "eval_time: 1m", 1)
    (tmp_path / "broken_test.yaml").write_text(
        broken.replace("../../manifests", str(ROOT / "manifests"))
    )
    done = subprocess.run(
        [str(PROMTOOL), "test", "rules", "broken_test.yaml"],
        cwd=tmp_path,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "KubePodCrashLooping" in done.stdout + done.stderr


def test_every_rule_has_the_mixin_shape() -> None:
    names = [rule["alert"] for rule in rules()]
    assert len(names) == len(set(names))
    for rule in rules():
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert rule["labels"]["severity"] in ("info", "warning", "critical")
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}
        assert rule["annotations"]["runbook_url"].startswith("https://")
        assert "namespace" in rule["annotations"]["description"]


def test_every_rule_is_unit_tested() -> None:
    tested = {
        check["alertname"]
        for case in yaml.safe_load(TESTS.read_text())["tests"]
        for check in case.get("alert_rule_test", [])
        if check.get("exp_alerts")
    }
    assert tested == {rule["alert"] for rule in rules()}


def test_the_issue_s_alerts_are_shipped() -> None:
    names = {rule["alert"] for rule in rules()}
    assert {
        "KubePodCrashLooping",
        "KubeDeploymentReplicasMismatch",
        "ServiceHighErrorRate",
        "KubePodNotReady",
        "KubeContainerOOMKilled",
    } <= names


# Stratus's own alerts (issue 19 §2): a file of their own, routed to the people who run
# Stratus rather than to Stratus, validated and unit-tested the same way.
SELF_RULES = ROOT / "manifests" / "prometheus" / "stratus-alerts.yaml"
SELF_TESTS = Path(__file__).with_name("stratus_alerts_test.yaml")


def self_rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(SELF_RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


@needs_promtool
def test_promtool_accepts_stratus_s_own_rules() -> None:
    done = subprocess.run(
        [str(PROMTOOL), "check", "rules", str(SELF_RULES)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(self_rules())} rules found" in done.stdout


@needs_promtool
def test_stratus_s_own_rules_pass_their_unit_tests_and_can_fail(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(PROMTOOL), "test", "rules", SELF_TESTS.name],
        cwd=SELF_TESTS.parent,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    # Expecting "stopped acting" before its 15 minutes and 5 of ``for`` breaks the tests.
    broken = SELF_TESTS.read_text().replace("eval_time: 25m", "eval_time: 16m", 1)
    (tmp_path / "broken_test.yaml").write_text(
        broken.replace("../../manifests", str(ROOT / "manifests"))
    )
    failed = subprocess.run(
        [str(PROMTOOL), "test", "rules", "broken_test.yaml"],
        cwd=tmp_path,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode != 0
    assert "StratusStoppedActing" in failed.stdout + failed.stderr


def test_stratus_s_own_rules_are_shaped_and_each_unit_tested() -> None:
    names = [rule["alert"] for rule in self_rules()]
    assert len(names) == len(set(names))
    assert set(names) >= {
        "StratusDown",
        "StratusNotReady",
        "StratusStoppedActing",
        "StratusApprovalsPilingUp",
        "StratusKubernetesAPIErrors",
    }
    for rule in self_rules():
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert set(rule["annotations"]) == {"summary", "description", "runbook"}
        section = rule["annotations"]["runbook"].split("#", 1)[1]
        assert f"### {rule['alert']}" in (ROOT / "docs" / "operations.md").read_text(), section
    tested = {
        check["alertname"]
        for case in yaml.safe_load(SELF_TESTS.read_text())["tests"]
        for check in case.get("alert_rule_test", [])
        if check.get("exp_alerts")
    }
    assert tested == set(names)
    # None of them is in the file whose alerts are routed to Stratus itself.
    assert not set(names) & {rule["alert"] for rule in rules()}


def test_stratus_s_own_rules_read_only_what_stratus_exposes() -> None:
    """A rule over a metric /metrics never serves would never fire."""
    ready = readiness.judge([])
    exposed = {family.name for family in metrics.families(Figures(), {"503": 1}, ready)}
    exposed |= {f"{name}_total" for name in exposed}  # counters' samples
    for rule in self_rules():
        used = set(re.findall(r"\b(stratus_[a-z_]+)", rule["expr"]))
        assert used <= exposed, (rule["alert"], used - exposed)
