"""Whether a scenario's alerts fired and cleared, for ``stratus eval --prometheus``.

ITBench judges mitigation by alerts clearing; this is the same judgement with the shipped
alert rules: a real Prometheus (``lab.prometheus``) scrapes the scenario's lab (real-time
clock) with the rules loaded on the lab's time scale; after the fault is injected the alerts
that fire in the namespace are collected, and after the investigation ends the probe waits
for them to clear.

Collecting lasts, after the first alert, as long as the longest scaled ``for:`` of the loaded
rules plus two evaluation intervals (an alert with ``for: 15m`` fires 30 s after its fault on
the lab's clock, well after one with ``for: 0m``), bounded by ``MAX_SETTLE_SECONDS``.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from lab.prometheus import PrometheusStack
from lab.prometheus.config import min_range_seconds
from lab.prometheus.rules import format_duration, load_scaled, parse_duration
from lab.runner import LAB_TOKEN

FIRE_SECONDS = 45.0  # how long a fault is given to fire an alert (5m rules → 10 s on the lab)
SETTLE_SECONDS = 12.0  # after the first alert, more may follow; collected at least this long
MAX_SETTLE_SECONDS = 120.0  # … and at most this long, whatever the rules' ``for:``
EVALUATIONS = 2  # evaluation intervals past the longest ``for:`` (a pending alert's last step)
CLEAR_SECONDS = 60.0  # how long cleared alerts are waited for after the investigation


def settle_seconds(rule_documents: Iterable[Any], evaluation_interval: float) -> float:
    """How long to keep collecting after the first alert: the longest ``for:`` of the (scaled)
    rules and ``EVALUATIONS`` evaluation intervals (its group's ``interval`` when it sets one),
    within [SETTLE_SECONDS, MAX_SETTLE_SECONDS]."""
    wanted = 0.0
    for document in rule_documents:
        for group in document.get("groups", []):
            interval = parse_duration(
                str(group.get("interval") or format_duration(evaluation_interval))
            )
            for rule in group.get("rules", []):
                pending = parse_duration(str(rule.get("for") or "0s"))
                wanted = max(wanted, pending + EVALUATIONS * interval)
    return min(max(SETTLE_SECONDS, wanted), MAX_SETTLE_SECONDS)


class AlertProbe:
    def __init__(
        self,
        *,
        lab_url: str,
        namespace: str,
        rules: Path,
        workdir: Path,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.namespace = namespace
        self.sleep = sleep
        self.stack = PrometheusStack(
            lab_url=lab_url, token=LAB_TOKEN, workdir=workdir, rule_files=[rules]
        )
        # The rules as Prometheus gets them (the stack scales them the same way).
        interval = parse_duration(self.stack.scrape_interval)  # also the evaluation interval
        scaled = load_scaled(
            rules, self.stack.time_scale, min_range_seconds(self.stack.scrape_interval)
        )
        self.settle = settle_seconds([scaled], interval)

    def __enter__(self) -> AlertProbe:
        self.stack.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stack.stop()

    def firing(self) -> set[str]:
        """Alert names firing now in the namespace."""
        selector = f'ALERTS{{alertstate="firing",namespace="{self.namespace}"}}'
        url = f"{self.stack.prometheus_url}/api/v1/query?" + urllib.parse.urlencode(
            {"query": selector}
        )
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.loads(response.read())
        return {str(r["metric"].get("alertname", "")) for r in body["data"]["result"]}

    def fired(self, timeout: float | None = None, settle: float | None = None) -> list[str]:
        """The alerts that fired after the fault: waits for the first, then collects the
        others for ``settle`` seconds (``self.settle``, from the rules). Empty when nothing
        fired within ``timeout`` (long enough for the slowest rule to fire by default)."""
        settle = self.settle if settle is None else settle
        timeout = max(FIRE_SECONDS, settle + SETTLE_SECONDS) if timeout is None else timeout
        seen: set[str] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen |= self.firing()
            if seen:
                deadline = min(deadline, time.monotonic() + settle)
            self.sleep(1.0)
        return sorted(seen)

    def cleared(self, timeout: float = CLEAR_SECONDS) -> bool:
        """Whether no alert fires in the namespace any more (waits up to ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.firing():
                return True
            if time.monotonic() > deadline:
                return False
            self.sleep(1.0)
