"""``stratus policy …``: check policy files, explain a decision, list and revoke grants."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import click

from cli import text
from cli.context import load_policy, open_store, record_identity
from cli.identity import PREFIX, current
from cli.targets import parse_target
from incidents.workflow import AGENT
from policies import authority
from policies.approvers import describe
from policies.evaluate import CompiledPolicy, ProposalFacts, listed_standing, undo_facts
from policies.grants import GrantBook, GrantError
from policies.loader import PolicyError, load
from policies.model import check_label_key, check_label_value, schema
from policies.reload import ENV
from proposals import risk as risk_of
from proposals.core import decide
from proposals.repository import ProposalRepository
from proposals.undoing import cause_put_back
from store.db import Store
from tools import fleet
from tools.actions import CATALOG, POLICY_ACTIONS, UNDO
from tools.errors import Invalid
from tools.objects import CLUSTER_SCOPED, ObjectRef
from tools.params import parse_labels
from undo.entries import UndoEntries
from undo.stack import check_record


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


# Who can ask for a write: a terminal user, a Slack user, or the incident workflow's agent.
_SLACK_USER = re.compile(r"^[UW][A-Z0-9]{2,}$")
_TERMINAL_NAME = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9._]{0,62}$")


def _requester(value: str | None) -> str:
    """The requester to explain for, checked like the identities that really propose: a
    typo must not explain a request nobody can make."""
    if value is None:
        return current().actor
    name = value.removeprefix(PREFIX)
    terminal = value.startswith(PREFIX) and _TERMINAL_NAME.fullmatch(name) is not None
    if (terminal and not name.lower().startswith("stratus")) or value == AGENT:
        return value
    if _SLACK_USER.fullmatch(value):
        return value
    raise Invalid(
        f"--requester {value!r} is not someone who can ask for a write: give cli:NAME (a "
        f"terminal user), a Slack user ID (U… or W…) or {AGENT} (the incident workflow)"
    )


def _labels(pairs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    labels = parse_labels(pairs)
    try:
        for key, value in labels.items():
            check_label_key(key)
            check_label_value(value)
    except ValueError as error:
        raise Invalid(f"--label: {error}") from error
    return tuple(sorted(labels.items()))


def _target(action: str, resource: str, namespace: str) -> ObjectRef:
    """KIND/NAME in NAMESPACE, checked as ``act`` checks its target: a known kind the action
    writes, valid Kubernetes names (a cluster-scoped kind has no namespace)."""
    if "/" not in resource:
        raise Invalid(f"--resource {resource!r}: expected KIND/NAME, e.g. deployment/web")
    kind, name = parse_target(resource, "")
    writable = sorted({k for cls in CATALOG.values() for k in cls.kinds})
    kinds = CATALOG[action].kinds if action in CATALOG else writable
    if kind not in kinds:
        raise Invalid(f"{action} acts on {', '.join(kinds)}, not {kind}")
    return ObjectRef(kind, name, "" if kind in CLUSTER_SCOPED else namespace)


def _undo_risk(store: Store, ref: ObjectRef, risk: str | None) -> tuple[str, str]:
    """The risk an undo of ``ref`` is decided with, and where it came from: ``--risk``, or —
    as the real undo does — the write its newest active undo entry reverses."""
    if risk is not None:
        return risk, "given with --risk"
    entries = [
        entry
        for entry in UndoEntries(store).active()
        if (entry.execution.kind, entry.execution.namespace, entry.execution.name)
        == (ref.kind, ref.namespace, ref.name)
    ]
    if not entries:
        raise Invalid(
            f"no active undo entry for {ref}: there is nothing to undo there, so the risk of "
            "the write an undo would reverse is unknown; give --risk low|medium|high to "
            "explain undoing a write of that risk",
            subject=str(ref),
        )
    execution = entries[0].execution
    check_record(execution, store)  # a real undo refuses an edited record, and so does this
    facts = undo_facts(
        original_action=execution.action,
        kind=ref.kind,
        namespace=ref.namespace,
        name=ref.name,
        requester="",
    )
    source = (
        f"of {execution.action}, the write undo entry {entries[0].id} reverses: the newest "
        f"active one for {ref}"
    )
    # As the real undo: one that puts back the diagnosed cause is decided as high.
    put_back = cause_put_back(ProposalRepository(store), execution.proposal_id)
    if not put_back:
        return facts.risk, source
    assessed = risk_of.assess(
        risk_of.RiskFacts(
            action=UNDO,
            floor=risk_of.level(facts.risk),
            kind=ref.kind,
            name=ref.name,
            before=None,
            after=None,
            puts_back=put_back,
        )
    )
    return assessed.level, f"{source}; it {assessed.reason}"


@policy.command()
@click.option(
    "--action",
    "action_name",
    required=True,
    type=click.Choice(sorted(POLICY_ACTIONS)),
    help="The catalog action, or undo.",
)
@click.option("--namespace", "-n", required=True)
@click.option("--resource", required=True, help="KIND/NAME, e.g. deployment/web.")
@click.option("--requester", default=None, help="Who asks (default: you, cli:<user>).")
@click.option("--label", "labels", multiple=True, help="Target label KEY=VALUE (repeatable).")
@click.option(
    "--cluster",
    default="",
    help="The fleet's cluster it would be written to (docs/fleet.md; default: none named).",
)
@click.option(
    "--risk",
    type=click.Choice(["low", "medium", "high"]),
    default=None,
    help="undo only: the risk of the write it reverses (default: that of the newest active "
    "undo entry for the resource, as the real undo).",
)
@_POLICY_DIR
def explain(
    action_name: str,
    namespace: str,
    resource: str,
    requester: str | None,
    labels: tuple[str, ...],
    cluster: str,
    risk: str | None,
    policy_dir: Path | None,
) -> None:
    """Print the decision for an action and which rule (or grant) made it."""
    if cluster:
        fleet.check_name(cluster)
    ref = _target(action_name, resource, namespace)
    asker = _requester(requester)
    target_labels = _labels(labels)
    store = open_store()
    if action_name == UNDO:
        risk, source = _undo_risk(store, ref, risk)
        reversible = True
    elif risk is not None:
        cls = CATALOG[action_name]
        raise Invalid(
            f"--risk is only for --action undo: the risk of {action_name} comes from the "
            f"catalog ({cls.risk}), never from the request"
        )
    else:
        cls = CATALOG[action_name]
        risk, reversible, source = cls.risk, cls.reversible, "the catalog's"
    facts = ProposalFacts(
        action=action_name,
        namespace=ref.namespace,
        kind=ref.kind,
        name=ref.name,
        risk=risk,
        reversible=reversible,
        requester=asker,
        labels=target_labels,
        cluster=cluster,
    )
    try:
        policy_in_force = load_policy(policy_dir, store=store)
    except PolicyError as error:
        click.echo(error.message.partition("\n")[0], err=True)
        for problem in error.problems:
            click.echo(f"  {problem}", err=True)
        click.echo(f"  hint: {text.hint(error)}", err=True)
        raise SystemExit(1) from error
    decision = decide(facts, policy=policy_in_force, store=store, now=datetime.now(UTC))
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
    click.echo(
        f"  facts: {action_name} on {ref}, risk {risk} ({source}), "
        f"{'reversible' if reversible else 'irreversible'}, requester {asker}"
        + (f", labels {', '.join(f'{k}={v}' for k, v in target_labels)}" if target_labels else "")
    )


@policy.command()
@click.option("--all", "show_all", is_flag=True, help="Include expired and revoked grants.")
@_POLICY_DIR
def grants(show_all: bool, policy_dir: Path | None) -> None:
    """List "Always allow" grants, and whether each counts under today's rules."""
    now = datetime.now(UTC)
    book = _grants()
    try:
        in_force: CompiledPolicy | None = load_policy(policy_dir, store=book.store)
    except PolicyError as error:
        in_force = None
        click.echo(
            f"{error.message.partition(chr(10))[0]} (`stratus policy check` lists why); no "
            "grant counts until it does",
            err=True,
        )
    listed = 0
    for grant in book.all():
        tampered = book.problem(grant.id)
        live = grant.revoked_at is None and now < grant.expires_at
        if not (show_all or live or tampered):
            continue
        listed += 1
        why_not: str | None = None
        if tampered:
            state, why_not = "TAMPERED", f"allows nothing: {tampered}"
        elif grant.revoked_at:
            state = "revoked"
        elif not live:
            state = "expired"
        else:
            reason = (
                "the policy does not load"
                if in_force is None
                else listed_standing(grant, in_force, now)
            )
            state = "counts" if reason is None else "suspended"
            if reason is not None:
                why_not = f"does not count under today's rules: {reason}"
        click.echo(
            f"{grant.id}  {state:<9} {grant.action} {grant.namespace}/{grant.resource}"
            f"  by {grant.created_by}  until {grant.expires_at:%Y-%m-%d %H:%M} UTC"
            + (f"  ({why_not})" if why_not else "")
        )
    if not listed:
        click.echo("no grants")


@policy.command()
@click.argument("grant_id")
def revoke(grant_id: str) -> None:
    """Revoke a grant; it stops matching at once (audited, by you)."""
    identity = current()
    book = _grants()
    record_identity(book.store, identity)
    grant = next((g for g in book.all() if g.id == grant_id), None)
    if grant is not None:
        try:
            admins = authority.admins(load_policy())
        except PolicyError:
            admins = ()  # no policy names the admins: only the grant's creator may
        why = authority.revoke_refusal(
            authority.Asker(user=identity.actor), created_by=grant.created_by, admins=admins
        )
        if why is not None:
            raise GrantError(f"{grant_id}: {why}; nothing was revoked", subject=grant_id)
    book.revoke(grant_id, by=identity.actor)
    click.echo(f"revoked {grant_id}")


@policy.command("schema")
def print_schema() -> None:
    """Print the JSON Schema of a policy file (for editors)."""
    click.echo(json.dumps(schema(), indent=2))
