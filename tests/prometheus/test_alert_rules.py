"""The shipped alert rules: valid for Prometheus (``promtool check rules``), each one firing on
the series its fault gives and quiet otherwise (``promtool test rules``), in the
kubernetes-mixin shape, and every one unit-tested."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

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
