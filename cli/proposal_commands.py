"""``stratus proposals …``: list, show, approve, reject and cancel proposals from any terminal.

A proposal is stored whole, so it can be answered from another process, after a restart:
a rule that needs two approvals is met by two people at two terminals.
"""

from __future__ import annotations

import os
import socket
from typing import Any

import click

from agents.telemetry import summarize
from cli import render
from cli.context import Session, cluster_options, session
from cli.write_commands import approve_and_execute, note_undone, print_events
from incidents import plans
from incidents.repository import IncidentRepository
from proposals.model import Proposal, ProposalState
from store.clock import parse_stamp
from tools.reads import ClusterReader

# The largest integer SQLite stores: a cursor past it is refused by click, not by sqlite3.
SQLITE_MAX_INT = 2**63 - 1

S = ProposalState


@click.group()
def proposals() -> None:
    """Proposed writes: what waits for whom, and answering them."""


@proposals.command("list")
@click.option("--all", "show_all", is_flag=True, help="Recent proposals in every state.")
@click.option("--incident", default=None, help="Only this incident's proposals.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@cluster_options
def list_proposals(
    show_all: bool, incident: str | None, limit: int, kubeconfig: Any, context: str | None
) -> None:
    """Proposals waiting for approval or execution (--all: every recent one)."""
    with session(kubeconfig, context, recover=False) as s:
        if incident:
            found = s.service.by_incident(incident)
        elif show_all:
            found = s.service.recent(limit=limit)
        else:
            found = s.service.pending()
        if not found:
            render.echo("no proposals" if show_all or incident else "nothing is waiting")
        for proposal in found[:limit]:
            render.echo(render.summary(proposal))


@proposals.command()
@click.argument("proposal_id")
@cluster_options
def show(proposal_id: str, kubeconfig: Any, context: str | None) -> None:
    """Everything about one proposal: plan, decision, votes, state."""
    with session(kubeconfig, context, recover=False) as s:
        proposal = s.service.get(proposal_id)
        render.details(proposal)
        render.telemetry(summarize(ClusterReader(s.kube), proposal, prometheus=s.prometheus))


@proposals.command()
@click.argument("proposal_id")
@click.option("--always", is_flag=True, help="Answer 'Always allow' where the policy allows.")
@click.option("--no-execute", is_flag=True, help="Only vote; leave execution to someone else.")
@click.option(
    "--plan",
    "whole_plan",
    is_flag=True,
    help="Approve plan: this first step of an incident's attempt and, while unchanged, the "
    "later steps the policy lets a plan approval cover.",
)
@cluster_options
def approve(
    proposal_id: str,
    always: bool,
    no_execute: bool,
    whole_plan: bool,
    kubeconfig: Any,
    context: str | None,
) -> None:
    """Approve a proposal; once approved by enough people, execute it."""
    with session(kubeconfig, context) as s:
        cursor = s.service.events.last_seq()
        proposal = s.service.get(proposal_id)
        if proposal.state in (S.EXECUTED, S.UNDONE):
            raise click.ClickException(already_executed(s, proposal))
        incident = (
            IncidentRepository(s.service.store).get(proposal.incident_id)
            if proposal.incident_id
            else None
        )
        render.step_of(plans.position(incident, proposal.id))
        render.plan(proposal)
        render.decision(proposal)
        if whole_plan:
            if always:
                raise click.UsageError("--plan and --always are two different answers; pick one")
            proposal = plans.approve_plan(
                s.service, incident, proposal, user=s.actor, groups=(), now=s.service.clock.now()
            )
        if no_execute and whole_plan:
            print_events(s, cursor, {proposal_id})
            render.echo(f"{render.visible(proposal.id)}: {proposal.state.value.replace('_', ' ')}")
            return
        if no_execute:
            voted = s.service.answer(
                proposal_id, user=s.actor, choice="always" if always else "approve"
            )
            print_events(s, cursor, {proposal_id})
            render.echo(f"{render.visible(voted.id)}: {voted.state.value.replace('_', ' ')}")
            return
        if proposal.state in (S.AWAITING_APPROVAL, S.APPROVED):
            done = approve_and_execute(s, proposal, yes=True, always=always, question="")
        else:
            done = s.service.execute(proposal_id, actor=s.actor)  # says why it cannot
        print_events(s, cursor, {proposal_id})
        if done is not None and not executed_here(done):
            # Another process executed it between our read and our call: not our write.
            raise click.ClickException(already_executed(s, done))
        if done is not None:
            undo = f" (undo: stratus undo {done.undo_id})" if done.undo_id else ""
            render.echo(f"applied: {render.visible(done.intent)}{undo}")
            note_undone(s, done)


def executed_here(proposal: Proposal) -> bool:
    """Whether this process executed it (its lock holder id names host and pid)."""
    place = (proposal.executor or "").rpartition("@")[2].split("/", 1)[0]
    return place == f"{socket.gethostname()}:{os.getpid()}"


def already_executed(s: Session, proposal: Proposal) -> str:
    """When and by whom an executed proposal ran, for a second approval that does nothing."""
    execution = s.service.executions.get(proposal.execution_id or "")
    at = parse_stamp(execution.updated_at) if execution and execution.updated_at else None
    who = execution.actor if execution else (proposal.executor or "").rpartition("@")[0]
    when = f" at {at:%Y-%m-%d %H:%M:%S} UTC" if at else ""
    by = f" by {who}" if who else ""
    undone = f"; it was undone since ({proposal.undone_by})" if proposal.state == S.UNDONE else ""
    return render.visible(
        f"{proposal.id} was already executed{when}{by} ({proposal.intent}){undone}; "
        "nothing was done"
    )


@proposals.command()
@click.argument("proposal_id")
@click.option("--reason", default="", help="Why (goes back to the requester and the agent).")
@cluster_options
def reject(proposal_id: str, reason: str, kubeconfig: Any, context: str | None) -> None:
    """Reject a proposal; nothing is written."""
    with session(kubeconfig, context, recover=False) as s:
        rejected = s.service.answer(proposal_id, user=s.actor, choice="reject", reason=reason)
        render.echo(f"rejected {rejected.id}: {render.visible(reason) or 'no reason given'}")


@proposals.command()
@click.argument("proposal_id")
@click.option("--reason", default="", help="Why.")
@cluster_options
def cancel(proposal_id: str, reason: str, kubeconfig: Any, context: str | None) -> None:
    """Withdraw a proposal that has not been executed."""
    with session(kubeconfig, context, recover=False) as s:
        cancelled = s.service.cancel(proposal_id, actor=s.actor, reason=reason)
        render.echo(f"cancelled {cancelled.id}")


@proposals.command()
@click.option(
    "--since",
    "cursor",
    type=click.IntRange(0, SQLITE_MAX_INT),
    default=0,
    show_default=True,
    help="Print events after this sequence number.",
)
@click.option("--proposal", "proposal_id", default=None, help="Only this proposal's events.")
@cluster_options
def events(cursor: int, proposal_id: str | None, kubeconfig: Any, context: str | None) -> None:
    """The event stream: every state change of every proposal, in order."""
    with session(kubeconfig, context, recover=False) as s:
        for envelope in s.service.events.since(cursor, proposal_id=proposal_id):
            render.echo(render.event(envelope))
