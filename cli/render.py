"""The CLI's words: how errors, proposals and events read on a terminal.

Lower layers raise errors with fields (what, which object, a remedy); this module turns a
remedy into what a terminal user types next. Slack has its own words in ``bot/``.
"""

from __future__ import annotations

import click

from agents.incident import Incident
from agents.incident_store import IncidentEnvelope
from agents.telemetry import Telemetry
from agents.telemetry_metrics import Figure
from policies.approvers import describe
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


# Where one remedy means different things by error: a policy that does not load is fixed in
# its files (``policy explain`` cannot even read them), a denial is explained by the rules.
CODE_WORDS: dict[str, str] = {
    "policy": "fix the files; `stratus policy check DIR` lists every problem",
}


def error_line(error: StratusError) -> str:
    hint = CODE_WORDS.get(error.code) or REMEDY_WORDS.get(error.remedy)
    return f"{error.message}" + (f"\n  hint: {hint}" if hint else "")


def plan(proposal: Proposal) -> None:
    click.echo(f"intent: {proposal.intent}")
    click.echo(
        f"risk: {proposal.risk}  reversible: {'yes' if proposal.reversible else 'no'}  "
        f"target: {proposal.target}"
    )
    for warning in proposal.warnings:
        click.echo(f"warning: {warning}")
    click.echo(proposal.plan.diff.rstrip() or "(no change)")


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "%":
        return f"{value:.1%}"
    if unit == "s":
        return f"{value:.3f}s"
    return f"{value:.0f}"


def _figure(figure: Figure, unit: str, ran: bool) -> str:
    if ran:
        return f"{_value(figure.before, unit)} -> {_value(figure.now, unit)}"
    return (
        f"{_value(figure.now, unit)} (start {_value(figure.earlier, unit)}, "
        f"peak {_value(figure.peak, unit)})"
    )


def telemetry(summary: Telemetry) -> None:
    """The target's telemetry: the cluster's signals, then Prometheus' figures (before -> after
    once the proposal ran), or why there are none."""
    click.echo(
        f"telemetry: pods ready {summary.pods}, restarts {summary.restarts}, "
        f"endpoints {summary.endpoints}"
    )
    for line in summary.errors:
        click.echo(f"  error line: {line}")
    for line in summary.events:
        click.echo(f"  event: {line}")
    m = summary.metrics
    if summary.metrics_source == "none":
        click.echo("metrics:   no metrics source (STRATUS_PROMETHEUS_URL is not set)")
        return
    if summary.metrics_source == "not_applicable":
        click.echo("metrics:   none for this kind of object")
        return
    if m is None:
        click.echo(f"metrics:   unavailable ({summary.metrics_reason}); cluster signals only")
        return
    ran = m.executed_at is not None
    click.echo(
        f"metrics:   Prometheus, last {m.window:g}s, services {', '.join(m.services)}"
        + ("; before -> after the change" if ran else "")
    )
    for label, figure, unit in (
        ("error rate", m.error_rate, "%"),
        ("p95", m.p95, "s"),
        ("restarts", m.restarts, ""),
        ("memory/limit", m.memory, "%"),
    ):
        click.echo(f"  {label:<13}{_figure(figure, unit, ran)}")
    for caller in m.callers:
        click.echo(f"  caller {caller.caller}: errors {_figure(caller.figure, '%', ran)}")
    if m.failed:
        click.echo(f"  missing: {m.failed}")


def decision(proposal: Proposal) -> None:
    click.echo(f"policy: {proposal.decision.reason}")


def summary(proposal: Proposal) -> str:
    votes = ", ".join(proposal.approvals())
    state = "TAMPERED" if proposal.tampered else proposal.state.value
    return (
        f"{proposal.id}  {state:<17} {proposal.action:<20} {proposal.target}"
        f"  by {proposal.requester}"
        + (f"  approvals: {votes}" if votes else "")
        + (f"  (edited outside Stratus: {proposal.tampered[0]})" if proposal.tampered else "")
    )


def details(proposal: Proposal) -> None:
    click.echo(f"proposal:  {proposal.id}")
    if proposal.tampered:
        click.echo(
            f"state:     TAMPERED — edited outside Stratus; nothing acts on it (stored as "
            f"{proposal.state.value}; see `stratus audit verify`)"
        )
        for problem in proposal.tampered:
            click.echo(f"tampered:  {problem}")
    else:
        click.echo(
            f"state:     {proposal.state.value}"
            + (f" ({proposal.reason})" if proposal.reason else "")
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
            f"approvers: {describe(d.approver_lists)}; needs {d.min_approvals}; requester may "
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


# ---------------------------------------------------------------------- incidents


def incident_event(envelope: IncidentEnvelope) -> str:
    e = envelope.event
    kind = e.type.value.removeprefix("incident.")
    if kind == "state_changed":
        text = f"{(e.previous_state or '-').replace('_', ' ')} → {e.state.replace('_', ' ')}"
        if e.message:
            text += f": {e.message}"
    else:
        text = f"{kind.replace('_', ' ')}: {e.message}" if e.message else kind
    return f"[{envelope.seq}] {e.incident_id} {text}"


def incident_line(incident: Incident) -> str:
    what = (
        f"{incident.diagnosis.resource}: {incident.diagnosis.mechanism}"
        if (incident.diagnosis)
        else "-"
    )
    return (
        f"{incident.id}  {incident.state.value:<17} {incident.namespace:<20} "
        f"{incident.created_at:%Y-%m-%d %H:%M}  attempts {len(incident.attempts)}  {what}"
        + (f"  [parked: {incident.parked}]" if incident.parked and incident.is_open else "")
    )


def _elapsed(start: object, end: object) -> str:
    if start is None or end is None:
        return "-"
    seconds = (end - start).total_seconds()  # type: ignore[operator]
    return f"{seconds:.1f}s"


def incident_summary(incident: Incident) -> None:
    click.echo(f"incident:  {incident.id} on {incident.namespace} ({incident.state.value})")
    if incident.reason:
        click.echo(f"outcome:   {incident.reason}")
    if incident.parked and incident.is_open and incident.parked_at is not None:
        click.echo(
            f"parked:    since {incident.parked_at:%Y-%m-%d %H:%M:%S} UTC, {incident.parked} "
            "(nothing runs until a retry posts its thread; it ends after the bound)"
        )
    click.echo(f"started:   {incident.created_at:%Y-%m-%d %H:%M:%S} UTC by {incident.requester}")
    if incident.question:
        click.echo(f"question:  {incident.question}")
    d = incident.diagnosis
    if d is not None:
        click.echo(f"diagnosis: {d.resource} — {d.category} ({d.mechanism}); planner {d.source}")
        click.echo(f"           {d.summary}")
        for item in d.evidence[:8]:
            click.echo(f"  evidence [{item.source} {item.ref}] {item.text}")
        for line in d.history:
            click.echo(f"  history: {line}")
    for attempt in incident.attempts:
        verdict = attempt.verdict or "-"
        click.echo(
            f"attempt {attempt.number}: {attempt.candidate.intent} → {attempt.outcome or 'running'}"
            f" (verdict {verdict}; score {attempt.health_before.get('total', '?')} → "
            f"{attempt.health_after.get('total', '?')})"
        )
        for proposal_id in [p for p in attempt.proposals if p]:
            click.echo(f"  proposal {proposal_id}")
        for proposal_id in attempt.undo_proposals:
            click.echo(f"  undo     {proposal_id}")
    rest = [c for c in incident.candidates if c.key() not in incident.tried]
    if incident.is_open and rest:
        click.echo("other options:")
        for candidate in rest[:5]:
            click.echo(f"  - {candidate.intent}")
    health = incident.health_now or incident.health_at_start
    if health:
        click.echo(
            f"health:    score {health.get('total')} "
            f"({'healthy' if health.get('healthy') else 'unhealthy'})"
        )
    click.echo(
        f"time to detect {_elapsed(incident.created_at, incident.detected_at)}, "
        f"to mitigate {_elapsed(incident.created_at, incident.mitigated_at)}"
    )
    if incident.usage.model_calls:
        u = incident.usage
        click.echo(
            f"model:     {u.model_calls} calls, {u.prompt_tokens} prompt + "
            f"{u.completion_tokens} completion tokens"
        )
