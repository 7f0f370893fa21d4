"""``stratus serve``: the Slack bot against a real Slack (or the playground) and a cluster.

Wires the bot like every other command: the store, the cluster, the policy and the proposal
service from ``cli.context``, the incident workflow from ``cli.incident_commands``, and the
Slack configuration from the environment (``bot.config``). Runs until interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from bot.config import BotConfig
from bot.health import HealthConfig, HealthServer
from bot.runtime import Runtime
from cli import render, text
from cli.context import fleet_options, recover_writes, session
from cli.incident_commands import build_workflow
from operations import logs
from policies import clients, served
from policies.clients import ENV_FILE, Registry
from policies.reload import default_directory
from proposals.service import ProposalService
from tools import leader
from tools.k8s import context_namespace

if TYPE_CHECKING:
    from bot.app import StratusBot
    from gateway import http as mcp_http


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
@fleet_options
def serve(
    mode: str | None,
    host: str | None,
    port: int | None,
    planner: str,
    kubeconfig: Path | None,
    context: tuple[str, ...],
) -> None:
    """Run the Slack bot (slash commands, proposal cards, undo, thread summaries)."""
    config = BotConfig.from_env(mode=mode, host=host, port=port)
    health = HealthConfig.from_env()
    leading = leader.Settings.from_env()
    logs.configure()  # JSON in a cluster, text otherwise; redacted either way
    # Recovery waits for the lease when there is one: a standby must not write.
    with session(kubeconfig, context, serving=True, recover=False) as s:
        elector = leading.elector(
            s.kube,
            fallback_namespace=context_namespace(
                str(kubeconfig) if kubeconfig else None, context[0] if context else None
            ),
        )
        if elector is not None:  # a write starts only while this process holds the Lease
            for executor in (s.service.executor, *s.service.deps.executors.values()):
                executor.fence = elector.ensure_leading  # every cluster of a fleet
        # Imported here, not at the top: the bot, the model clients and the MCP SDK take about
        # a second to import, which every other ``stratus`` command would pay at start.
        from agents.llm.questions import answerer_from_env
        from bot.app import StratusBot

        flow = build_workflow(s, planner=planner, max_attempts=3, settle_seconds=None)
        answerer = answerer_from_env() if planner in ("auto", "llm") else None
        runtime = Runtime(service=s.service, workflow=flow, policy=s.policy, answerer=answerer)
        if elector is not None:  # the door and the reconciler act only while leading
            runtime.acting = elector.acting

        def record_policy() -> None:
            served.record(s.store, default_directory(), served_by=s.identity.actor)

        bot = StratusBot(runtime, config)
        gateway = None
        if os.environ.get(ENV_FILE, "").strip():  # the MCP gateway, on its own listener
            registry = Registry.from_env()
            clients.load(registry.path)  # a file that does not load stops the bot here
            from gateway import http as mcp_http
            from gateway import server as mcp_server

            try:
                gateway = mcp_http.from_env(
                    mcp_server.Gateway(
                        service=s.service, kube=s.kube, registry=registry, workflow=flow
                    )
                )
            except ValueError as exc:
                raise click.ClickException(str(exc)) from exc
        life = Lifecycle(s.service, elector, health, gateway)
        stopped = asyncio.run(_run(bot, record_policy, life))
        if stopped.in_flight:
            render.echo(text.calls_left(stopped.in_flight, stopped.within), err=True)
        if stopped.lost and not stopped.in_flight:
            raise click.ClickException(stopped.lost)
        if stopped.in_flight:
            # A worker thread cannot be stopped mid-write and would hold the process past
            # the pod's grace period: leave now, as a crash would, with the write-ahead
            # record that recovery settles (``tools.crashpoints`` proves every step).
            if stopped.lost:
                render.echo(f"Error: {stopped.lost}", err=True)
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1 if stopped.lost else 0)


@dataclass(frozen=True)
class Stopped:
    """How serving ended: writes left running at the bound, and the lost lease's words."""

    in_flight: int = 0
    within: float = 0.0
    lost: str = ""


@dataclass
class Lifecycle:
    """What ``_run`` needs besides the bot: recovery, the lease when electing, and the
    health listener's settings."""

    service: ProposalService
    elector: leader.Elector | None
    health: HealthConfig
    mcp: mcp_http.HttpGateway | None = None

    @property
    def where(self) -> str:
        return f"{self.elector.namespace}/{self.elector.name}" if self.elector else ""


async def _run(bot: StratusBot, record_policy: Callable[[], None], life: Lifecycle) -> Stopped:
    """Serve until SIGTERM/SIGINT, or until the lease is lost."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    health = HealthServer(bot.rt, slack=bot.slack_connected, config=life.health)
    # First: the kubelet's liveness probe answers while the bot waits for the lease and starts
    # (readiness stays false until Slack is connected).
    await health.start()
    try:
        return await _serve(bot, record_policy, life, stop, health.url)
    finally:
        if life.mcp is not None:
            await life.mcp.stop()
        await health.stop()


async def _serve(
    bot: StratusBot,
    record_policy: Callable[[], None],
    life: Lifecycle,
    stop: asyncio.Event,
    health_url: str,
) -> Stopped:
    elector = life.elector
    if elector is not None:
        if not await asyncio.to_thread(elector.try_once):
            click.echo(text.lease_waiting(life.where, elector.holder))
            if not await elector.acquire(stop):
                return Stopped()  # stopped standing by: nothing was taken, nothing to finish
        click.echo(text.lease_held(life.where, elector.identity))
    # The writes a previous leader (or a crash) left pending, before anything new.
    await asyncio.to_thread(recover_writes, life.service)
    await bot.start()
    # Only a bot Slack accepts speaks for this database's policy (``policies.served``).
    why = await bot.rejected()
    if why is not None:
        await bot.stop()
        if elector is not None:
            await asyncio.to_thread(elector.release)
        raise click.ClickException(
            f"Slack did not accept the bot ({render.visible(why)[:200]}); its policy was not "
            "recorded and the bot stopped"
        )
    record_policy()
    click.echo(f"stratus bot running ({bot.config.mode} mode) {bot.url}".rstrip())
    alerts = bot.alerts_url if bot.config.alerts.enabled else "off (STRATUS_ALERTS_TOKEN unset)"
    click.echo(f"  alertmanager webhook: {alerts}")
    click.echo(f"  health: {health_url} (/healthz /readyz /metrics)")
    if life.mcp is not None:
        try:
            listening = await life.mcp.start()
        except OSError as exc:
            await bot.stop()
            if elector is not None:
                await asyncio.to_thread(elector.release)
            raise click.ClickException(
                f"the MCP gateway cannot listen on {life.mcp.host}:{life.mcp.port} ({exc})"
            ) from exc
        click.echo(f"  mcp gateway: {listening} (streamable HTTP, bearer tokens)")
    else:
        click.echo(f"  mcp gateway: off ({ENV_FILE} unset)")
    within = bot.config.shutdown_seconds
    if elector is None:
        await stop.wait()
        return Stopped(await bot.stop(within=within), within)
    if await elector.hold(stop):
        in_flight = await bot.stop(within=within)
        await asyncio.to_thread(elector.release)
        return Stopped(in_flight, within)
    # Lost: another may take over once the lease expires, the lease duration after the last
    # renewal, that is (lease duration - renew deadline) from now: stop within that.
    timing = elector.timing
    within = min(within, max(timing.lease_duration - timing.renew_deadline, 1.0))
    in_flight = await bot.stop(within=within)
    return Stopped(in_flight, within, text.lease_lost(life.where, elector.why_not_leading()))
