"""Benchmark of alerts opening incidents (issue 11): alert → incident thread.

The bot (HTTP mode, alerts on) runs on its own event loop thread against the lab and the Slack
playground; each run opens a new incident (a new alert group on a healthy namespace, which
the workflow then closes as healthy, so the next run can open one again). Two figures:

- **webhook → thread**: from the moment a notification is sent to the bot's endpoint, exactly
  as Alertmanager sends it (version 4 body, bearer token), until the incident's parent message
  and then the alert's message in its thread are stored in the playground (polled every 10 ms);
  the webhook's own answer time too. This is the issue's "after Alertmanager sends".
- **Alertmanager → thread**: the whole chain with a real Alertmanager (Debian's, configured by
  ``lab.prometheus`` with group_wait 1 s): an alert posted to Alertmanager's API until the
  thread exists — includes Alertmanager's group_wait.

Run: ``.venv/bin/python -m benchmarks.bench_alerts [--runs N]``. Prints JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bot.app import StratusBot
from bot.config import AlertsConfig, BotConfig
from lab.prometheus import PrometheusStack, WebhookTarget, unavailable
from lab.prometheus.stack import free_port
from lab.runner import LAB_TOKEN, LabServer, write_kubeconfig
from lab.slack.client import PlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.agents.alert_payloads import alert, payload
from tests.bot.conftest import make_runtime
from tests.bot.test_signatures import ThreadedBot
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

TOKEN = "bench-alerts-token-0123456789abcdef"
CHANNEL = "C0INCIDENT"


def post(url: str, body: Any, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", **headers},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(response.status)


def parents(slack: PlaygroundClient) -> list[dict[str, Any]]:
    found = slack.messages(channel=CHANNEL)["messages"]
    return [m for m in found if m.get("thread_ts", m["ts"]) == m["ts"]]


def wait(check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.01)
    raise TimeoutError("the thread never appeared")


def settle(bot: StratusBot) -> None:
    """Until no incident is open (the healthy namespace's incident closes by itself)."""
    wait(lambda: not bot.rt.incidents.recent(open_only=True), timeout=60)


def one_run(bot: StratusBot, slack: PlaygroundClient, index: int) -> dict[str, float]:
    before = len(parents(slack))
    body = payload(
        alert(
            "KubePodCrashLooping", pod=f"geo-{index}", starts=dt.datetime.now(dt.UTC).isoformat()
        ),
        group_key=f"bench-{index}",
    )
    start = time.perf_counter()
    post(bot.alerts_url, body, {"Authorization": f"Bearer {TOKEN}"})
    answered = time.perf_counter()
    parent = wait(lambda: (found := parents(slack))[before:] and found[-1])
    threaded = time.perf_counter()

    def alert_in_thread() -> bool:
        replies = slack.messages(channel=CHANNEL, thread_ts=parent["ts"])["messages"]
        return any("alert firing" in json.dumps(m.get("blocks", [])) for m in replies)

    wait(alert_in_thread)
    shown = time.perf_counter()
    settle(bot)
    return {
        "answer_ms": (answered - start) * 1000,
        "thread_ms": (threaded - start) * 1000,
        "alert_message_ms": (shown - start) * 1000,
    }


def through_alertmanager(
    bot: StratusBot, slack: PlaygroundClient, stack: PrometheusStack, index: int
) -> float:
    before = len(parents(slack))
    now = dt.datetime.now(dt.UTC)
    alerts = [
        {
            "labels": {
                "alertname": "KubePodCrashLooping",
                "namespace": "hotel",
                "pod": f"am-{index}",
                "severity": "warning",
            },
            "annotations": {"summary": "Pod is crash looping."},
            "startsAt": now.isoformat(),
        }
    ]
    start = time.perf_counter()
    post(f"{stack.alertmanager_url}/api/v2/alerts", alerts, {})
    wait(lambda: len(parents(slack)) > before)
    elapsed = (time.perf_counter() - start) * 1000
    settle(bot)
    return elapsed


def summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 1),
        "min": round(min(values), 1),
        "max": round(max(values), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-alerts-"))
    lab = LabServer(apps=["hotel"]).start()
    kubeconfig = write_kubeconfig(folder / "kubeconfig", lab.url, "hotel")
    playground = PlaygroundServer().start()
    kube = KubeClient(kubeconfig=str(kubeconfig))
    port = free_port()
    bot = StratusBot(
        make_runtime(kube, folder / "bot.db", PolicyBox()),
        BotConfig(
            mode="http",
            bot_token=playground.bot_token,
            signing_secret=playground.signing_secret,
            api_url=playground.api_url,
            port=port,
            follow_interval=0.3,  # the default
            alerts=AlertsConfig(token=TOKEN, channel=CHANNEL),
        ),
    )
    slack = PlaygroundClient(playground.url)
    result: dict[str, Any] = {"runs": args.runs}
    try:
        with ThreadedBot(bot):
            runs = [one_run(bot, slack, i) for i in range(args.runs)]
            result["webhook_to_thread"] = {key: summary([r[key] for r in runs]) for key in runs[0]}
            reason = unavailable()
            if reason is None:
                with PrometheusStack(
                    lab_url=lab.url,
                    token=LAB_TOKEN,
                    workdir=folder / "prometheus",
                    webhook=WebhookTarget(bot.alerts_url, TOKEN),
                ) as stack:
                    chain = [through_alertmanager(bot, slack, stack, i) for i in range(args.runs)]
                result["alertmanager_to_thread_ms"] = summary(chain)
                result["alertmanager_group_wait_s"] = 1
            else:
                result["alertmanager_to_thread_ms"] = f"skipped: {reason}"
    finally:
        kube.close()
        playground.stop()
        lab.stop()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
