"""The CLI's words: how errors, proposals and events read on a terminal.

Lower layers raise errors with fields (what, which object, a remedy); this module turns a
remedy into what a terminal user types next. Slack has its own words in ``bot/``.
"""

from __future__ import annotations

import click

from proposals.events import Envelope, EventType
from proposals.model import Proposal
from store.errors import Remedy, StratusError

REMEDY_WORDS: dict[Remedy, str] = {
    Remedy.FORCE: "to overwrite that change anyway, run the command again with --force",
    Remedy.RETRY: "try again in a moment",
    Remedy.FIX_POLICY: "see the policy with `stratus policy explain`",
    Remedy.ASK_APPROVER: "ask an approver to run `stratus proposals approve ID`",
    Remedy.PROPOSE_AGAIN: "look at the new plan and run the command again",
    Remedy.RECONCILE: "run `stratus undo --list` in a moment: recovery reads the object and "
    "records the outcome",
}


def error_line(error: StratusError) -> str:
    hint = REMEDY_WORDS.get(error.remedy)
    return f"{error.message}" + (f"\n  hint: {hint}" if hint else "")


def plan(proposal: Proposal) -> None:
    click.echo(f"intent: {proposal.intent}")
    click.echo(
        f"risk: {proposal.risk}  reversible: {'yes' if proposal.reversible else 'no'}  "
        f"target: {proposal.target}"
    )
    click.echo(proposal.plan.diff.rstrip() or "(no change)")


def decision(proposal: Proposal) -> None:
    click.echo(f"policy: {proposal.decision.reason}")


def summary(proposal: Proposal) -> str:
    votes = ", ".join(proposal.approvals())
    return (
        f"{proposal.id}  {proposal.state.value:<17} {proposal.action:<20} {proposal.target}"
        f"  by {proposal.requester}" + (f"  approvals: {votes}" if votes else "")
    )


def details(proposal: Proposal) -> None:
    click.echo(f"proposal:  {proposal.id}")
    click.echo(
        f"state:     {proposal.state.value}" + (f" ({proposal.reason})" if proposal.reason else "")
    )
    click.echo(f"requester: {proposal.requester}")
    if proposal.incident_id:
        click.echo(f"incident:  {proposal.incident_id}")
    click.echo(
        f"created:   {proposal.created_at:%Y-%m-%d %H:%M:%S} UTC; expires "
        f"{proposal.expires_at:%Y-%m-%d %H:%M:%S} UTC"
    )
    d = proposal.decision
    click.echo(f"policy:    {d.reason} [{d.source}{': ' + d.rule if d.rule else ''}]")
    if d.outcome == "ask":
        click.echo(
            f"approvers: {', '.join(d.approvers)}; needs {d.min_approvals}; requester may "
            f"approve: {'yes' if d.self_approval else 'no'}"
        )
    for vote in proposal.votes:
        counted = "" if vote.digest == proposal.plan.digest else " (for an earlier plan)"
        click.echo(
            f"vote:      {vote.user} {vote.choice} at {vote.at:%H:%M:%S}{counted}"
            + (f": {vote.reason}" if vote.reason else "")
        )
    if proposal.execution_id:
        click.echo(f"execution: {proposal.execution_id}")
    if proposal.undo_id:
        click.echo(f"undo:      stratus undo {proposal.undo_id}")
    if proposal.superseded_by:
        click.echo(f"replaced by: {proposal.superseded_by}")
    if proposal.previous_diff:
        click.echo("diff of the proposal this one replaces:")
        click.echo(proposal.previous_diff.rstrip())
    plan(proposal)


def event(envelope: Envelope) -> str:
    e = envelope.event
    if e.type == EventType.PROPOSED:
        text = f"proposed {e.action} on {e.target}"
    elif e.type == EventType.VOTED:
        text = e.message or f"{e.actor} voted"
    elif e.type == EventType.UNDO_DROPPED:
        text = e.message
    else:
        text = f"{(e.previous_state or '-').replace('_', ' ')} → {e.state.replace('_', ' ')}"
        if e.message:
            text += f": {e.message}"
    return f"[{envelope.seq}] {e.proposal_id} {text} ({e.actor})"
