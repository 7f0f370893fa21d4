"""The approval gate of the CLI path: every ``stratus act`` and ``stratus undo`` is decided by
the same policy evaluation as the bot. At a terminal the person running the command is the
one human who can answer; ``--yes`` stands for their approval."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from policies.approvals import APPROVED, ApprovalDesk, ApprovalRequest, plan_digest
from policies.evaluate import CompiledPolicy, PolicyDecision, ProposalFacts, evaluate
from policies.grants import GrantBook
from policies.loader import PolicyError, load
from policies.reload import default_directory
from store.audit import AuditLog
from store.db import Store
from store.records import new_id
from tools.actions import CATALOG
from tools.objects import ObjectRef


def load_policy(directory: Path | None = None) -> CompiledPolicy:
    chosen = directory or default_directory()
    try:
        return CompiledPolicy.build(load([chosen] if chosen else []))
    except PolicyError as error:
        raise click.ClickException(
            f"the policy does not load (nothing is allowed until it does):\n{error}"
        ) from error


def confirm(yes: bool, question: str) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.ClickException("refusing to write without --yes: stdin is not a terminal")
    if not click.confirm(question, default=False):
        raise click.ClickException("nothing written")


def gate(
    store: Store,
    *,
    actor: str,
    action_name: str,
    ref: ObjectRef,
    labels: dict[str, str],
    diff: str,
    yes: bool,
    always: bool,
    question: str,
) -> PolicyDecision:
    """Decide; refuse on deny; ask the terminal's human on ask; return the decision."""
    cls = CATALOG[action_name]
    facts = ProposalFacts(
        action_name,
        ref.namespace,
        ref.kind,
        ref.name,
        cls.risk,
        cls.reversible,
        actor,
        tuple(sorted(labels.items())),
    )
    now = datetime.now(UTC)
    decision = evaluate(facts, load_policy(), GrantBook(store).active(now), now)
    AuditLog(store).append(
        actor=actor,
        event="decision",
        subject=str(ref),
        payload={"action": action_name, **decision.to_dict()},
    )
    click.echo(f"policy: {decision.reason}")
    if decision.outcome == "deny":
        raise click.ClickException(decision.reason)
    if decision.outcome == "allow":
        return decision
    if decision.min_approvals > 1:
        raise click.ClickException(
            f"{decision.reason}; a terminal gives one approval: approve it in Slack"
        )
    confirm(yes, question)
    desk = ApprovalDesk(store)
    request = ApprovalRequest(
        new_id("prop"), facts, decision, plan_digest(action_name, str(ref), diff), now
    )
    desk.open(request)
    result = desk.vote(request, user=actor, choice="always" if always else "approve", now=now)
    if not result.accepted or result.state != APPROVED:
        raise click.ClickException(result.message)
    return decision
