"""``stratus serve``: the Slack bot against a real Slack (or the playground) and a cluster.

Wires the bot like every other command: the store, the cluster, the policy and the proposal
service from ``cli.context``, the incident workflow from ``cli.incident_commands``, and the
Slack configuration from the environment (``bot.config``). Runs until interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path

import click

from agents.llm.questions import answerer_from_env
from bot.app import StratusBot
from bot.config import BotConfig
from bot.runtime import Runtime
from cli.context import cluster_options, session
from cli.incident_commands import build_workflow


@click.command()
@click.option(
    "--mode",
    type=click.Choice(["socket", "http"]),
    default=None,
    help="Socket Mode (SLACK_APP_TOKEN) or HTTP (SLACK_SIGNING_SECRET); default: socket when "
    "an app token is set.",
)
@click.option("--host", default=None, help="HTTP mode: the address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="HTTP mode: the port (default 3000).",
)
@click.option(
    "--planner",
    type=click.Choice(["auto", "offline", "llm"]),
    default="auto",
    show_default=True,
    help="auto: the LLM planner when a model is configured, else offline.",
)
@cluster_options
def serve(
    mode: str | None,
    host: str | None,
    port: int | None,
    planner: str,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """Run the Slack bot (slash commands, proposal cards, undo, thread summaries)."""
    config = BotConfig.from_env(mode=mode, host=host, port=port)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    with session(kubeconfig, context) as s:
        flow = build_workflow(s, planner=planner, max_attempts=3, settle_seconds=None)
        answerer = answerer_from_env() if planner in ("auto", "llm") else None
        runtime = Runtime(service=s.service, workflow=flow, policy=s.policy, answerer=answerer)
        asyncio.run(_run(StratusBot(runtime, config)))


async def _run(bot: StratusBot) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await bot.start()
    click.echo(f"stratus bot running ({bot.config.mode} mode) {bot.url}".rstrip())
    alerts = bot.alerts_url if bot.config.alerts.enabled else "off (STRATUS_ALERTS_TOKEN unset)"
    click.echo(f"  alertmanager webhook: {alerts}")
    await stop.wait()
    await bot.stop()
