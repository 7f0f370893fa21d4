"""``stratus demo`` wires Prometheus, Alertmanager and the bot together: a fault injected from
the page fires an alert, Alertmanager posts it to the bot with the run's token, and an incident
thread opens in #incidents with nobody typing. Skipped only without Debian's packages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.prometheus import unavailable
from tests.bot.demo_process import DemoProcess, text_of, wait_for
from tests.bot.test_demo import card

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(unavailable() is not None, reason=unavailable() or ""),
]
SCENARIO = "hotel-geo-oom"


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    process = DemoProcess(tmp_path / "demo").start()
    yield process
    process.stop()


def test_an_alert_opens_an_incident_thread_in_the_demo_without_anyone_typing(
    demo: DemoProcess,
) -> None:
    announced = wait_for(lambda: "/alerts/alertmanager" in "\n".join(demo.lines), timeout=10)
    assert announced and "prometheus: http://" in "\n".join(demo.lines)
    slack = demo.slack
    slack.inject(SCENARIO)
    parent = wait_for(lambda: card(slack, "Incident in hotel", ":rotating_light:"), timeout=120)
    assert "alert" in text_of(parent)
    waiting = wait_for(lambda: card(slack, "stratus.approve", "geo"), timeout=90)
    assert "memory / limit" in text_of(waiting)  # the card's metrics come from Prometheus
    assert not [d for d in slack.deliveries()["deliveries"] if d["kind"] == "slash_commands"]
