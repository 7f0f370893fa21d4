"""The two clocks: real time for the demo, instant for tests."""

from __future__ import annotations

import time

from lab.client import LabClient
from lab.cluster.clock import INSTANT, REALTIME, Clock
from lab.runner import LabServer


def test_realtime_lab_starts_pods_within_seconds() -> None:
    server = LabServer(mode=REALTIME, apps=["hotel"]).start()
    try:
        client = LabClient(server.url)
        assert client.get("/lab/v1/info")["mode"] == REALTIME
        deadline = time.monotonic() + 15
        ready = False
        while time.monotonic() < deadline and not ready:
            time.sleep(0.25)
            traffic = client.get("/lab/v1/namespaces/hotel/traffic")
            ready = (
                bool(traffic)
                and traffic.get("frontend", {}).get("requests", 0) > 0
                and all(t["error_rate"] == 0 for t in traffic.values())
            )
        assert ready, "the hotel app did not come up in real time within 15 s"
    finally:
        server.stop()


def test_instant_clock_jumps_between_timers_only() -> None:
    clock = Clock(INSTANT)
    start = clock.now()
    fired: list[float] = []
    clock.call_later(30, lambda: fired.append(clock.now()))
    clock.call_later(5, lambda: fired.append(clock.now()))
    assert clock.run_due() == 0 and clock.now() == start
    while (due := clock.next_due()) is not None:
        clock.advance_to(due)
        clock.run_due()
    assert fired == [start + 5, start + 30]
    assert clock.now() < time.time()  # virtual time stays in the past
