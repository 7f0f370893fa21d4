"""Benchmarks of the Slack bot (issue 10), against the playground and the lab:

- acknowledgement latency of slash commands and clicks, 50 concurrent requests (p50/p99);
- slash command → first proposal card with the offline planner;
- the bot process's RSS at rest and during 10 concurrent incidents.

Run: ``.venv/bin/python -m benchmarks.bench_bot``. Prints one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from bot.app import StratusBot
from bot.config import BotConfig
from lab.runner import LabServer, write_kubeconfig
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from lab.slack.workspace import PlaygroundConfig
from policies.model import Defaults, Rule
from tests.bot.conftest import make_runtime
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

HOT_METHODS = ("chat.postMessage", "chat.update", "chat.postEphemeral")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


async def main() -> dict[str, Any]:
    lab = LabServer(apps=["hotel", "shop"]).start()
    folder = Path(tempfile.mkdtemp())
    kube = KubeClient(kubeconfig=str(write_kubeconfig(folder / "config", lab.url, "hotel")))
    playground = PlaygroundServer(
        PlaygroundConfig(rate_limits=dict.fromkeys(HOT_METHODS, 100_000))
    ).start()
    policy = PolicyBox()
    policy.set(Rule(name="ask", decision="ask"), defaults=Defaults(approvers=["*"]))
    bot = StratusBot(
        make_runtime(kube, folder / "bot.db", policy),
        BotConfig(
            mode="http",
            bot_token=playground.bot_token,
            signing_secret=playground.signing_secret,
            api_url=playground.api_url,
            port=0,
            follow_interval=0.05,
        ),
    )
    await bot.start()
    slack = AsyncPlaygroundClient(playground.url)
    await slack.configure(request_url=bot.url)
    results: dict[str, Any] = {"rss_at_rest_mb": round(rss_mb(), 1)}

    # Ack latency: 50 concurrent commands (help, status) and clicks (stale Approve).
    async def one(i: int) -> float:
        record = await slack.command("U0ALICE", "/stratus", "status" if i % 2 else "help")
        return float(record["attempts"][0]["ms"])

    acks = [ms for _ in range(4) for ms in await asyncio.gather(*(one(i) for i in range(50)))]
    results["ack_ms_p50"] = pct(acks, 0.5)
    results["ack_ms_p99"] = pct(acks, 0.99)

    # Slash command → first proposal card (offline planner).
    lab_control = __import__("lab.client", fromlist=["LabClient"]).LabClient(lab.url)
    lab_control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    lab_control.post("/lab/v1/settle")
    started = time.perf_counter()
    await slack.command("U0ALICE", "/stratus", "investigate hotel")
    while True:
        found = (await slack.messages())["messages"]
        if any("stratus.approve" in json.dumps(m.get("blocks", [])) for m in found):
            break
        await asyncio.sleep(0.02)
    results["command_to_first_card_s"] = round(time.perf_counter() - started, 2)

    # RSS during 10 concurrent incidents (hotel and shop, and eight more namespaces' worth of
    # investigations: the two apps' namespaces plus healthy ones each get an incident).
    peak = rss_mb()
    namespaces = ["shop", "default", "kube-system", *[f"hotel{i}" for i in range(7)]]
    await asyncio.gather(
        *(slack.command("U0BOB", "/stratus", f"investigate {ns}") for ns in namespaces)
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and bot.rt.tasks:
        peak = max(peak, rss_mb())
        await asyncio.sleep(0.05)
    results["rss_10_incidents_peak_mb"] = round(peak, 1)
    results["concurrent_incident_commands"] = len(namespaces) + 1
    await bot.stop()
    playground.stop()
    kube.close()
    lab.stop()
    return results


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main()), indent=2))
