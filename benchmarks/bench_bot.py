"""Benchmarks of the Slack bot (issue 10), deployed as in ``stratus demo``: the bot in its own
process (``stratus serve``, HTTP mode), the lab cluster in another (``stratus lab up``, real-time
clock, hotel and shop) and the Slack playground in the demo's process. The playground measures
each acknowledgement from sending the signed request to reading the answer.

- acknowledgement latency of slash commands (help, status) and clicks (a non-approver's
  Approve, refused), 50 concurrent requests per round (p50/p99 per round and over all);
- slash command → first proposal card with the offline planner, several incidents, typed once
  the injected fault shows (the health score turns unhealthy; the time that takes is printed
  too), so that it times the bot and not the fault's onset;
- the demo's own flow (issue 18): a fault injected, its alert opening the incident thread
  (Prometheus and Alertmanager as ``stratus demo`` runs them), alert → first card, and
  Approve → the verified incident summary;
- the bot process's RSS at rest and its peak while investigations run concurrently.

Run: ``.venv/bin/python -m benchmarks.bench_bot [--rounds N] [--incidents N] [--alerts N]``.
Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agents.health import collect, score
from lab.slack.client import PlaygroundClient
from tests.bot.demo_process import DemoProcess, text_of, wait_for
from tools.k8s import KubeClient

SCENARIOS = (
    "hotel-recommendation-scaled-to-zero",
    "shop-catalog-target-port",
    "hotel-geo-target-port",
    "shop-catalog-selector",
)
# The demo's flow, opened by alerts: the issue's own case first, one per namespace in turn so
# that an alert still firing for the previous fault never joins the next one's thread.
ALERT_SCENARIOS = (
    "shop-payment-bad-config",
    "hotel-recommendation-scaled-to-zero",
    "shop-catalog-target-port",
    "hotel-geo-target-port",
)
CHANNEL = "C0INCIDENT"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def bot_pid(demo: DemoProcess) -> int:
    for pid in demo.children():
        if b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    raise RuntimeError("no bot process")


def acks(slack: PlaygroundClient, requests: list[dict[str, Any]]) -> list[float]:
    def one(request: dict[str, Any]) -> float:
        if "command" in request:
            record = slack.command(request["user"], "/stratus", request["command"])
        else:
            record = slack.click(request["user"], "stratus.approve", value=request["value"])
        assert record["ok"], record
        return float(record["attempts"][0]["ms"])

    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        return list(pool.map(one, requests))


async def direct_clicks(
    demo: DemoProcess, slack: PlaygroundClient, payload: dict[str, Any], count: int
) -> list[float]:
    """``count`` signed clicks posted to the bot at once (each its own ``action_ts``, so none
    is dropped as a duplicate); milliseconds from sending to the acknowledgement."""
    import aiohttp

    config = slack.config()
    secret = str(config["signing_secret"])
    url = str(config["request_url"])

    async def one(session: aiohttp.ClientSession, n: int) -> float:
        body = dict(payload)
        body["actions"] = [{**payload["actions"][0], "action_ts": f"{time.time():.6f}{n}"}]
        raw = urllib.parse.urlencode({"payload": json.dumps(body)}).encode()
        stamp = str(int(time.time()))
        base = b"v0:" + stamp.encode() + b":" + raw
        signature = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature,
        }
        started = time.perf_counter()
        async with session.post(url, data=raw, headers=headers) as response:
            await response.read()
            assert response.status == 200, response.status
        return (time.perf_counter() - started) * 1000

    async with aiohttp.ClientSession() as session:
        return list(await asyncio.gather(*(one(session, n) for n in range(count))))


def newest_card(slack: PlaygroundClient, needle: str = "stratus.approve") -> dict[str, Any] | None:
    for message in reversed(slack.messages(channel=CHANNEL)["messages"]):
        if needle in text_of(message):
            found: dict[str, Any] = message
            return found
    return None


def button(message: dict[str, Any], action_id: str) -> str:
    for block in message["blocks"]:
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                return str(element["value"])
    raise RuntimeError(f"no {action_id}")


def fault_shown(kube: KubeClient, namespace: str, timeout: float = 30.0) -> float:
    """Seconds until the namespace's health score is unhealthy (the injected fault shows: a
    Service without endpoints, callers failing …), at most ``timeout``."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if not score(collect(kube, namespace)).healthy:
            break
        time.sleep(0.1)
    return time.perf_counter() - started


def first_card(
    slack: PlaygroundClient, scenario: str, kube: KubeClient, shown: list[float]
) -> float:
    """Inject, wait for the fault to show, investigate, time the first card; approve it and
    wait for the summary. Waiting times the bot, not the fault's onset: a Deployment scaled to
    zero loses its pod at once but its callers fail a moment later, and an investigation in
    that moment has to look again (``incidents.unfolding``) before it can propose anything."""
    namespace = scenario.partition("-")[0]
    slack.inject(scenario)
    shown.append(fault_shown(kube, namespace))
    before = {m["ts"] for m in slack.messages(channel=CHANNEL)["messages"]}
    started = time.perf_counter()
    slack.command("U0ALICE", "/stratus", f"investigate {namespace}")

    def fresh_card() -> dict[str, Any] | None:
        for message in slack.messages(channel=CHANNEL)["messages"]:
            if message["ts"] not in before and "stratus.approve" in text_of(message):
                return dict(message)
        return None

    card = wait_for(fresh_card, timeout=60, interval=0.01)
    elapsed = time.perf_counter() - started
    pid = button(card, "stratus.approve")
    slack.click("U0ALICE", "stratus.approve", value=pid)
    wait_for(
        lambda: any(
            "Incident summary" in text_of(m) and m["ts"] not in before
            for m in slack.messages(channel=CHANNEL)["messages"]
        ),
        timeout=120,
    )
    return elapsed


def _thread(slack: PlaygroundClient, parent: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = slack.messages(channel=CHANNEL, thread_ts=parent)["messages"]
    return found


def _alert_thread(
    slack: PlaygroundClient, namespace: str, before: set[str]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The new incident thread of ``namespace`` that an alert opened, with its first card."""
    for message in slack.messages(channel=CHANNEL)["messages"]:
        if message["ts"] in before or message.get("thread_ts", message["ts"]) != message["ts"]:
            continue
        if f"Incident in {namespace}" not in text_of(message):
            continue
        cards = [m for m in _thread(slack, message["ts"]) if "stratus.approve" in text_of(m)]
        if cards:
            return dict(message), dict(cards[0])
    return None


def alert_flow(slack: PlaygroundClient, scenario: str) -> dict[str, float]:
    """The demo as issue 18 tried it: inject a fault and type nothing. Seconds from the
    injection to the thread its alert opens, from that alert to the first card (both as the
    playground stamped them), and from the last Approve to the verified incident summary."""
    namespace = scenario.partition("-")[0]
    before = {m["ts"] for m in slack.messages(channel=CHANNEL)["messages"]}
    injected = time.time()
    slack.inject(scenario)
    parent, card = wait_for(lambda: _alert_thread(slack, namespace, before), 180, 0.05)
    approved: set[str] = set()
    clicked = 0.0
    summary: dict[str, Any] | None = None
    deadline = time.monotonic() + 180
    while summary is None and time.monotonic() < deadline:
        thread = _thread(slack, parent["ts"])
        summary = next((m for m in thread if "Incident summary" in text_of(m)), None)
        for message in thread:
            if "stratus.approve" not in text_of(message) or message["ts"] in approved:
                continue
            try:
                value = button(message, "stratus.approve")
            except RuntimeError:
                continue  # answered already: the card kept no buttons
            approved.add(message["ts"])
            clicked = time.time()
            slack.click("U0ALICE", "stratus.approve", value=value, ts=message["ts"])
        time.sleep(0.05)
    if summary is None:
        raise TimeoutError("never happened")
    return {
        "inject_to_alert_thread_s": round(float(parent["ts"]) - injected, 2),
        "alert_to_first_card_s": round(float(card["ts"]) - float(parent["ts"]), 2),
        "approve_to_summary_s": round(float(summary["ts"]) - clicked, 2),
        "approvals": len(approved),
    }


def main(rounds: int, incidents: int, alerts: int = len(ALERT_SCENARIOS)) -> dict[str, Any]:
    demo = DemoProcess(Path(tempfile.mkdtemp()) / "demo").start()
    try:
        slack = demo.slack
        pid = bot_pid(demo)
        time.sleep(2)  # let the bot's first follower reads settle
        results: dict[str, Any] = {"bot_rss_at_rest_mb": round(rss_mb(pid), 1)}
        kube = KubeClient(kubeconfig=str(demo.directory / "kubeconfig"))

        # First, while no other fault's alert can still be firing: the demo's alert flow.
        chosen = [ALERT_SCENARIOS[i % len(ALERT_SCENARIOS)] for i in range(alerts)]
        flows = [alert_flow(slack, scenario) for scenario in chosen]
        results["alert_flows"] = [{"scenario": c, **f} for c, f in zip(chosen, flows, strict=True)]
        for key in ("inject_to_alert_thread_s", "alert_to_first_card_s", "approve_to_summary_s"):
            if flows:
                results[f"{key}_median"] = round(statistics.median(f[key] for f in flows), 2)

        commands = [
            {"user": "U0ALICE", "command": "status" if i % 2 else "help"} for i in range(50)
        ]
        command_rounds = [acks(slack, commands) for _ in range(rounds)]

        shown: list[float] = []
        cards = [
            first_card(slack, SCENARIOS[i % len(SCENARIOS)], kube, shown) for i in range(incidents)
        ]
        results["inject_to_fault_shown_s"] = [round(s, 2) for s in shown]

        # Clicks: a card waiting for approval, and 50 concurrent Approves by dave (refused).
        slack.inject(SCENARIOS[0])
        fault_shown(kube, SCENARIOS[0].partition("-")[0])
        slack.command("U0ALICE", "/stratus", "investigate hotel")
        waiting = wait_for(lambda: _waiting_card(slack), timeout=60)
        value = button(waiting, "stratus.approve")
        clicks = [{"user": "U0DAVE", "value": value} for _ in range(50)]
        click_rounds = [acks(slack, clicks) for _ in range(rounds)]
        # The same clicks sent straight to the bot, signed as Slack signs them, from this
        # process: the latency Slack would see, without the playground's own delivery work.
        delivered = [d for d in slack.deliveries()["deliveries"] if d["label"] == "block_actions"]
        direct_rounds = [
            asyncio.run(direct_clicks(demo, slack, delivered[-1]["payload"], 50))
            for _ in range(rounds)
        ]
        per_round_direct = [pct(r, 0.99) for r in direct_rounds]
        flat_direct = [ms for r in direct_rounds for ms in r]
        results["click_direct_ms_p99_per_round"] = per_round_direct
        results["click_direct_ms_p50"] = pct(flat_direct, 0.5)
        results["click_direct_ms_p99"] = pct(flat_direct, 0.99)

        for name, per_round in (("command", command_rounds), ("click", click_rounds)):
            flat = [ms for r in per_round for ms in r]
            results[f"{name}_ack_ms_p50_per_round"] = [pct(r, 0.5) for r in per_round]
            results[f"{name}_ack_ms_p99_per_round"] = [pct(r, 0.99) for r in per_round]
            results[f"{name}_ack_ms_p50"] = pct(flat, 0.5)
            results[f"{name}_ack_ms_p99"] = pct(flat, 0.99)
            results[f"{name}_ack_ms_max"] = round(max(flat), 1)
        results["command_to_first_card_s"] = [round(c, 2) for c in cards]
        results["command_to_first_card_s_median"] = round(statistics.median(cards), 2)
        results["command_to_first_card_s_max"] = round(max(cards), 2)

        # RSS while investigations run at once (every namespace the lab has, twice over).
        peak = rss_mb(pid)
        with ThreadPoolExecutor(max_workers=10) as pool:
            futures = [
                pool.submit(slack.command, "U0BOB", "/stratus", f"investigate {ns}")
                for ns in ("shop", "default", "kube-system", "kube-public", "hotel") * 2
            ]
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                peak = max(peak, rss_mb(pid))
                time.sleep(0.05)
            for future in futures:
                future.result()
        results["bot_rss_concurrent_investigations_peak_mb"] = round(peak, 1)
        # The machine is shared: the load says how far these figures are from a quiet run's.
        results["load_average_1m_at_end"] = round(os.getloadavg()[0], 2)
        return results
    except TimeoutError:
        print("the demo did not answer in time; the bot's log ends:", file=sys.stderr)
        print(demo.log("bot")[-4000:], file=sys.stderr)
        raise
    finally:
        code = demo.stop()
        if code != 0:
            print("\n".join(demo.lines[-20:]))


def _waiting_card(slack: PlaygroundClient) -> dict[str, Any] | None:
    return newest_card(slack)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--incidents", type=int, default=4)
    parser.add_argument("--alerts", type=int, default=len(ALERT_SCENARIOS))
    arguments = parser.parse_args()
    print(json.dumps(main(arguments.rounds, arguments.incidents, arguments.alerts), indent=2))
