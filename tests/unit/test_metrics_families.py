"""The metrics families are a pure function of the store's figures, the API-error tally and the
readiness: Prometheus-conventional names, cumulative histogram buckets, every label value the
alert rules select on present even at zero."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from operations import metrics, readiness
from operations.figures import Figures
from operations.readiness import Check


class _Fixed(Collector):
    def __init__(self, found: list[Metric]) -> None:
        self.found = found

    def collect(self) -> Iterator[Metric]:
        return iter(self.found)


def _samples(
    found: Figures, errors: dict[str, int], ready: readiness.Readiness | None
) -> dict[Any, float]:
    text = metrics.exposition(_Fixed(metrics.families(found, errors, ready))).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_histogram_buckets_are_cumulative_with_inf_and_sum() -> None:
    buckets, total = metrics.histogram([3.0, 20.0, 20.0, 7200.0], (5.0, 30.0, 3600.0))
    assert buckets == [("5.0", 1.0), ("30.0", 3.0), ("3600.0", 3.0), ("+Inf", 4.0)]
    assert total == 7243.0


def test_figures_become_conventional_families() -> None:
    found = Figures(
        incidents=Counter({"resolved": 2, "awaiting_approval": 1}),
        proposals=Counter({("executed", "ask", "rule"): 3, ("denied", "deny", "rule"): 1}),
        oldest_open={"awaiting_approval": 42.0},
        approval_latencies=[("approve", 12.0), ("approve", 40.0), ("reject", 3.0)],
        executions=Counter(
            {("write", "applied"): 3, ("undo", "applied"): 1, ("write", "pending"): 1}
        ),
        undos=Counter({"tnr": 1}),
        model_calls=4,
        tokens=Counter({"prompt": 100, "completion": 20}),
        alert_notifications=Counter({"accepted": 2}),
    )
    ready = readiness.judge([Check(n, ok=n != "slack") for n in readiness.REQUIRED])
    got = _samples(found, {"503": 2, "unreachable": 1}, ready)
    assert got[("stratus_incidents", (("state", "resolved"),))] == 2
    key = (
        "stratus_proposals",
        (("decision", "ask"), ("provenance", "rule"), ("state", "executed")),
    )
    assert got[key] == 3
    assert got[("stratus_proposal_oldest_open_seconds", (("state", "awaiting_approval"),))] == 42
    count = ("stratus_approval_latency_seconds_count", (("answer", "approve"),))
    assert got[count] == 2
    bucket = ("stratus_approval_latency_seconds_bucket", (("answer", "approve"), ("le", "15.0")))
    assert got[bucket] == 1
    assert got[("stratus_executions_total", (("kind", "write"), ("outcome", "applied")))] == 3
    assert got[("stratus_executions_pending", ())] == 1
    assert got[("stratus_undos_total", (("trigger", "tnr"),))] == 1
    assert got[("stratus_undos_total", (("trigger", "request"),))] == 0  # present at zero
    assert got[("stratus_kubernetes_api_errors_total", (("code", "503"),))] == 2
    assert got[("stratus_model_calls_total", ())] == 4
    assert got[("stratus_model_tokens_total", (("type", "prompt"),))] == 100
    assert got[("stratus_alert_notifications_total", (("outcome", "refused"),))] == 0
    assert got[("stratus_ready", ())] == 0
    assert got[("stratus_readiness_check", (("check", "slack"),))] == 0
    assert got[("stratus_readiness_check", (("check", "cluster"),))] == 1
    assert all(name.startswith("stratus_") for name, _ in got)


def test_without_readiness_there_is_no_ready_gauge() -> None:
    got = _samples(Figures(), {}, None)
    assert not any(name == "stratus_ready" for name, _ in got)
    assert got[("stratus_model_calls_total", ())] == 0
