"""``stratus policy …``: check policy files, explain a decision, list and revoke grants."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click

from cli.context import load_policy, open_store, record_identity
from cli.identity import current
from cli.targets import KIND_ALIASES
from policies.approvers import describe
from policies.evaluate import ProposalFacts
from policies.grants import GrantBook
from policies.loader import PolicyError, load
from policies.model import schema
from policies.reload import ENV
from proposals.core import decide
from tools.actions import CATALOG, POLICY_ACTIONS
from tools.params import parse_labels


def _policy_dir(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    # Path("") is ".": an empty option would quietly read the current directory.
    if value is not None and not value.strip():
        raise click.BadParameter("is empty; name the policy directory", ctx=ctx, param=param)
    return None if value is None else Path(value)


_POLICY_DIR = click.option(
    "--policy-dir",
    type=click.Path(),
    default=None,
    callback=_policy_dir,
    help=f"Policy directory (default: ${ENV}; unset: no policy, ask for everything).",
)


def _grants() -> GrantBook:
    return GrantBook(open_store())


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
    type=click.Choice(sorted(POLICY_ACTIONS)),
    help="The catalog action.",
)
@click.option("--namespace", "-n", required=True)
@click.option("--resource", required=True, help="KIND/NAME, e.g. deployment/web.")
@click.option("--requester", default=None, help="Who asks (default: you, cli:<user>).")
@click.option("--label", "labels", multiple=True, help="Target label KEY=VALUE (repeatable).")
@_POLICY_DIR
def explain(
    action_name: str,
    namespace: str,
    resource: str,
    requester: str | None,
    labels: tuple[str, ...],
    policy_dir: Path | None,
) -> None:
    """Print the decision for an action and which rule (or grant) made it."""
    kind_text, sep, name = resource.partition("/")
    kind = KIND_ALIASES.get(kind_text.lower()) if sep else None
    if kind is None or not name:
        raise click.BadParameter("expected KIND/NAME, e.g. deployment/web", param_hint="--resource")
    cls = CATALOG.get(action_name)
    facts = ProposalFacts(
        action=action_name,
        namespace="" if kind == "Node" else namespace,
        kind=kind,
        name=name,
        risk=cls.risk if cls else "medium",
        reversible=cls.reversible if cls else True,
        requester=requester or current().actor,
        labels=tuple(sorted(parse_labels(labels).items())),
    )
    now = datetime.now(UTC)
    decision = decide(facts, policy=load_policy(policy_dir), store=open_store(), now=now)
    click.echo(f"{decision.outcome}: {decision.reason}")
    if decision.outcome == "ask":
        remember = (
            f"yes, up to {decision.max_grant_seconds // 60} min" if decision.remember else "no"
        )
        click.echo(
            f"  approvers: {describe(decision.approvers)}; min approvals: "
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
def revoke(grant_id: str) -> None:
    """Revoke a grant; it stops matching at once (audited, by you)."""
    identity = current()
    book = _grants()
    record_identity(book.store, identity)
    book.revoke(grant_id, by=identity.actor)
    click.echo(f"revoked {grant_id}")


@policy.command("schema")
def print_schema() -> None:
    """Print the JSON Schema of a policy file (for editors)."""
    click.echo(json.dumps(schema(), indent=2))
