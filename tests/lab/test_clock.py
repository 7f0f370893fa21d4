"""The two clocks: real time for the demo, instant for tests."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lab.client import LabClient
from lab.cluster.clock import INSTANT, REALTIME, Clock
from lab.runner import LabServer
from tests.conftest import Lab, kubectl_for


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


def test_instant_clock_moves_only_as_far_as_settling_needs(lab: Lab, tmp_path: Path) -> None:
    """Parallel writers used to push virtual time two minutes per write, so a crash-looping
    deployment "exceeded its progress deadline" after half a minute of wall time."""
    kubectl = kubectl_for("system", lab, tmp_path)
    kubectl.run("create", "deployment", "broken", "--image=busybox", "--", "sh", "-c", "exit 1")
    kubectl.run("create", "configmap", "poke")
    start = Clock.parse(lab.control.get("/lab/v1/info")["now"])

    def writer(index: int) -> None:
        for step in range(10):
            kubectl.run("label", "configmap", "poke", f"w{index}=s{step}", "--overwrite")

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(writer, range(4)))
    moved = Clock.parse(lab.control.get("/lab/v1/info")["now"]) - start
    assert moved < 60, f"40 writes moved the virtual clock {moved:.0f} s"
    deployment = json.loads(kubectl.out("get", "deployment", "broken", "-o", "json"))
    progressing = next(c for c in deployment["status"]["conditions"] if c["type"] == "Progressing")
    assert progressing["reason"] != "ProgressDeadlineExceeded"
    pod = json.loads(kubectl.out("get", "pods", "-l", "app=broken", "-o", "json"))["items"][0]
    waiting = pod["status"]["containerStatuses"][0]["state"].get("waiting") or {}
    assert waiting.get("reason") == "CrashLoopBackOff"
    # Time passes when asked to: an explicit horizon runs the crash loop on.
    restarts = pod["status"]["containerStatuses"][0]["restartCount"]
    lab.control.post("/lab/v1/settle", {"horizon": 600})
    pod = json.loads(kubectl.out("get", "pods", "-l", "app=broken", "-o", "json"))["items"][0]
    assert pod["status"]["containerStatuses"][0]["restartCount"] > restarts


def test_a_crash_loop_picks_up_a_fixed_config_without_waiting_out_its_back_off(
    lab: Lab, tmp_path: Path
) -> None:
    kubectl = kubectl_for("system", lab, tmp_path)
    kubectl.run("create", "configmap", "db-env", "--from-literal=POSTGRES_DB=app")
    kubectl.run("create", "deployment", "db", "--image=postgres:16")
    kubectl.run(
        "patch",
        "deployment",
        "db",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"postgres",'
        '"envFrom":[{"configMapRef":{"name":"db-env"}}]}]}}}}',
    )
    pod = json.loads(kubectl.out("get", "pods", "-l", "app=db", "-o", "json"))["items"][0]
    assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == (
        "CrashLoopBackOff"
    )
    start = Clock.parse(lab.control.get("/lab/v1/info")["now"])
    kubectl.run("patch", "configmap", "db-env", "-p", '{"data":{"POSTGRES_PASSWORD":"s3cret"}}')
    pod = json.loads(kubectl.out("get", "pods", "-l", "app=db", "-o", "json"))["items"][0]
    assert "running" in pod["status"]["containerStatuses"][0]["state"]
    assert Clock.parse(lab.control.get("/lab/v1/info")["now"]) - start <= 300
