"""``stratus mcp``: the MCP gateway over stdio, for an agent that starts Stratus itself, and
``stratus mcp token NAME`` to make a client's token (docs/mcp.md).

The stdio process is one client: the token its agent's configuration passes in
``STRATUS_MCP_TOKEN`` must be one of the clients file's (``STRATUS_MCP_CLIENTS``), checked at
start and again on every call. It opens the same store, cluster and policy as every other
command; approvals happen in Slack, where the bot serving this database executes them.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import anyio
import click

from cli.context import cluster_options, session
from cli.incident_commands import build_workflow
from policies.clients import ENV_TOKEN, Registry, hash_token
from store.errors import StratusError


@click.group(invoke_without_command=True)
@click.option("--read-only", is_flag=True, help="Offer the read tools only (no proposals).")
@cluster_options
@click.pass_context
def mcp(ctx: click.Context, read_only: bool, kubeconfig: Path | None, context: str | None) -> None:
    """Serve the MCP gateway over stdio (STRATUS_MCP_TOKEN names the client)."""
    if ctx.invoked_subcommand is not None:
        return
    registry = Registry.from_env()
    token = os.environ.get(ENV_TOKEN, "").strip()
    try:
        client = registry.authenticate(token or None)
    except StratusError as exc:
        raise click.ClickException(
            f"{exc.message}; set {ENV_TOKEN} to a client's token (stratus mcp token NAME)"
        ) from exc
    from gateway import server  # the MCP SDK: imported by the command that serves it only

    with session(kubeconfig, context) as s:
        gateway = server.Gateway(
            service=s.service,
            kube=s.kube,
            registry=registry,
            token=token,
            read_only=read_only or not client.may_propose,
            # A proposal with no open incident opens one, verified like any attempt; Stratus
            # plans nothing in it, so the offline planner is never asked (docs/mcp.md).
            workflow=build_workflow(s, planner="offline", max_attempts=3, settle_seconds=None),
        )
        anyio.run(server.build(gateway).run_stdio_async)


@mcp.command("token")
@click.argument("name")
def token(name: str) -> None:
    """Make a new client token: prints it once, and the clients-file entry with its hash."""
    made = secrets.token_urlsafe(32)
    click.echo(f"token (give it to the client; it is not stored): {made}")
    click.echo("clients-file entry:")
    click.echo(f"  - name: {name}\n    token_sha256: {hash_token(made)}")
