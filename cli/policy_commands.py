"""``stratus policy …``: check policy files, explain a decision, list and revoke grants."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click

from cli.policy_gate import load_policy
from cli.write_commands import KIND_ALIASES, parse_params
from policies.evaluate import ProposalFacts, evaluate
from policies.grants import GrantBook, GrantError
from policies.loader import PolicyError, load
from policies.model import schema
from policies.reload import ENV
from store.db import Store, StoreError
from tools.actions import CATALOG

_POLICY_DIR = click.option(
    "--policy-dir",
    type=click.Path(path_type=Path),
    default=None,
    help=f"Policy directory (default: ${ENV}; none: ask for everything).",
)


def _grants() -> GrantBook:
    try:
        return GrantBook(Store())
    except StoreError as error:
        raise click.ClickException(str(error)) from error


@click.group()
def policy() -> None:
    """Approval policies: what needs a human, what is denied, what is allowed."""


@policy.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def check(paths: tuple[Path, ...]) -> None:
    """Validate policy files and directories; print every error as file:line:column."""
    try:
        loaded = load(list(paths))
    except PolicyError as error:
        for problem in error.problems:
            click.echo(str(problem), err=True)
        raise SystemExit(1) from error
    click.echo(f"ok: {len(loaded.rules)} rules in {len(loaded.files)} file(s)")


@policy.command()
@click.option(
    "--action",
    "action_name",
    required=True,
    type=click.Choice(sorted(CATALOG)),
    help="The catalog action.",
)
@click.option("--namespace", "-n", required=True)
@click.option("--resource", required=True, help="KIND/NAME, e.g. deployment/web.")
@click.option("--requester", default="cli", show_default=True)
@click.option("--label", "labels", multiple=True, help="Target label KEY=VALUE (repeatable).")
@_POLICY_DIR
def explain(
    action_name: str,
    namespace: str,
    resource: str,
    requester: str,
    labels: tuple[str, ...],
    policy_dir: Path | None,
) -> None:
    """Print the decision for an action and which rule (or grant) made it."""
    kind_text, sep, name = resource.partition("/")
    kind = KIND_ALIASES.get(kind_text.lower()) if sep else None
    if kind is None or not name:
        raise click.BadParameter("expected KIND/NAME, e.g. deployment/web", param_hint="--resource")
    cls = CATALOG[action_name]
    facts = ProposalFacts(
        action_name,
        "" if kind == "Node" else namespace,
        kind,
        name,
        cls.risk,
        cls.reversible,
        requester,
        tuple(sorted((k, str(v)) for k, v in parse_params(labels).items())),
    )
    now = datetime.now(UTC)
    decision = evaluate(facts, load_policy(policy_dir), _grants().active(now), now)
    click.echo(f"{decision.outcome}: {decision.reason}")
    if decision.outcome == "ask":
        remember = (
            f"yes, up to {decision.max_grant_seconds // 60} min" if decision.remember else "no"
        )
        click.echo(
            f"  approvers: {', '.join(decision.approvers)}; min approvals: "
            f"{decision.min_approvals}; requester may approve: "
            f"{'yes' if decision.self_approval else 'no'}; 'Always allow': {remember}"
        )


@policy.command()
@click.option("--all", "show_all", is_flag=True, help="Include expired and revoked grants.")
def grants(show_all: bool) -> None:
    """List "Always allow" grants."""
    now = datetime.now(UTC)
    book = _grants()
    found = book.all() if show_all else book.active(now)
    if not found:
        click.echo("no grants")
    for grant in found:
        state = (
            "revoked" if grant.revoked_at else ("expired" if grant.expires_at <= now else "active")
        )
        click.echo(
            f"{grant.id}  {state:<7} {grant.action} {grant.namespace}/{grant.resource}"
            f"  by {grant.created_by}  until {grant.expires_at:%Y-%m-%d %H:%M} UTC"
        )


@policy.command()
@click.argument("grant_id")
@click.option("--by", "revoked_by", default="cli", show_default=True)
def revoke(grant_id: str, revoked_by: str) -> None:
    """Revoke a grant; it stops matching at once."""
    try:
        _grants().revoke(grant_id, by=revoked_by)
    except GrantError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"revoked {grant_id}")


@policy.command("schema")
def print_schema() -> None:
    """Print the JSON Schema of a policy file (for editors)."""
    click.echo(json.dumps(schema(), indent=2))
