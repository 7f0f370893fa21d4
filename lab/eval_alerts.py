"""Whether a scenario's alerts fired and cleared, for ``stratus eval --prometheus``.

ITBench judges mitigation by alerts clearing; this is the same judgement with the shipped
alert rules: a real Prometheus (``lab.prometheus``) scrapes the scenario's lab (real-time
clock) with the rules loaded on the lab's time scale; after the fault is injected the alerts
that fire in the namespace are collected, and after the investigation ends the probe waits
for them to clear.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from lab.prometheus import PrometheusStack
from lab.runner import LAB_TOKEN

FIRE_SECONDS = 45.0  # how long a fault is given to fire an alert (5m rules → 10 s on the lab)
SETTLE_SECONDS = 12.0  # after the first alert, more may follow; collected this long
CLEAR_SECONDS = 60.0  # how long cleared alerts are waited for after the investigation


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

    def fired(self, timeout: float = FIRE_SECONDS, settle: float = SETTLE_SECONDS) -> list[str]:
        """The alerts that fired after the fault: waits for the first, then collects the
        others for ``settle`` seconds. Empty when nothing fired within ``timeout``."""
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
