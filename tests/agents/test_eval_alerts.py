"""``stratus eval --prometheus``: per scenario, the shipped alerts that fired after the fault
and whether they cleared after the investigation — with a real Prometheus and Alertmanager
beside a real-time lab; "n/a" without it."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from cli.eval_commands import ALERT_RULES, investigate
from lab import eval_alerts, evaluation
from lab.prometheus import DEFAULT_TIME_SCALE, unavailable
from lab.prometheus.rules import load_scaled


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
    # A `for: 15m` rule (30 s on the lab's clock) fires well after the OOM kill: still counted.
    assert "KubeDeploymentReplicasMismatch" in result.alerts_fired, result.alerts_fired
    assert result.alerts_cleared is True
    report = evaluation.EvalReport([result], "offline", 1, 1.0)
    assert report.totals()["alerts"] == "1/1 cleared"
    assert "cleared" in evaluation.table(report)
    assert report.to_dict()["scenarios"][0]["alerts_fired"] == result.alerts_fired


def test_collecting_lasts_past_the_longest_scaled_for_of_the_rules(tmp_path: Path) -> None:
    # The shipped rules on the lab's clock: `for: 15m` is 30 s; the first alert (`for: 0m`)
    # comes much earlier, so 12 s after it would miss KubePodNotReady and its like.
    scaled = load_scaled(Path(ALERT_RULES), DEFAULT_TIME_SCALE, 4.0)
    settle = eval_alerts.settle_seconds([scaled], 1.0)
    assert settle == 15 * 60 / DEFAULT_TIME_SCALE + 2 * 1.0
    probe = eval_alerts.AlertProbe(
        lab_url="http://127.0.0.1:1", namespace="hotel", rules=Path(ALERT_RULES), workdir=tmp_path
    )
    assert probe.settle == settle  # what ``fired`` collects for, from the rules it loads


def test_collecting_is_bounded_and_never_shorter_than_before() -> None:
    def rules(*fors: str, interval: str | None = None) -> dict[str, Any]:
        group: dict[str, Any] = {"name": "g", "rules": [{"alert": "A", "for": f} for f in fors]}
        return {"groups": [{**group, **({"interval": interval} if interval else {})}]}

    assert eval_alerts.settle_seconds([rules("0s")], 1.0) == eval_alerts.SETTLE_SECONDS
    assert eval_alerts.settle_seconds([], 1.0) == eval_alerts.SETTLE_SECONDS
    assert eval_alerts.settle_seconds([rules("10s", "45s")], 1.0) == 47.0
    assert eval_alerts.settle_seconds([rules("40s", interval="5s")], 1.0) == 50.0
    assert eval_alerts.settle_seconds([rules("2h")], 1.0) == eval_alerts.MAX_SETTLE_SECONDS
