"""``stratus eval --prometheus``: per scenario, the shipped alerts that fired after the fault
and whether they cleared after the investigation — with a real Prometheus and Alertmanager
beside a real-time lab; "n/a" without it."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from cli.eval_commands import ALERT_RULES, investigate
from lab import evaluation
from lab.prometheus import unavailable


def test_without_prometheus_the_alert_columns_say_n_a() -> None:
    result = evaluation.run_scenario("noop-hotel", functools.partial(investigate))
    assert result.error == "" and result.alerts_fired is None and result.alerts_cleared is None
    report = evaluation.EvalReport([result], "offline", 1, 1.0)
    assert report.totals()["alerts"] == "n/a"
    row = next(line for line in evaluation.table(report).splitlines() if "noop-hotel" in line)
    assert "n/a" in row


@pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
def test_the_fault_s_alerts_fire_and_clear_after_the_fix() -> None:
    assert Path(ALERT_RULES).is_file()
    result = evaluation.run_scenario(
        "hotel-geo-oom", functools.partial(investigate), alert_rules=ALERT_RULES
    )
    assert result.error == "", result.error
    assert result.mitigated
    assert result.alerts_fired is not None and "KubeContainerOOMKilled" in result.alerts_fired
    assert result.alerts_cleared is True
    report = evaluation.EvalReport([result], "offline", 1, 1.0)
    assert report.totals()["alerts"] == "1/1 cleared"
    assert "cleared" in evaluation.table(report)
    assert report.to_dict()["scenarios"][0]["alerts_fired"] == result.alerts_fired
