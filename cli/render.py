"""The CLI's words: how errors, proposals and events read on a terminal.

Lower layers raise errors with fields (what, which object, a remedy); this module turns a
remedy into what a terminal user types next. Slack has its own words in ``bot/``.
"""

from __future__ import annotations

import unicodedata

import click

from agents.incident import Incident
from agents.incident_store import IncidentEnvelope
from agents.telemetry import Telemetry
from agents.telemetry_metrics import Figure
from policies.approvers import describe
from proposals.events import Envelope, EventType
from proposals.model import Proposal, ProposalState
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


# Characters a terminal may act on instead of showing: controls (ESC starts a sequence that can
# retitle the window or clear the screen, CR overwrites a line, LF forges one), format
# characters (bidirectional overrides reorder what is read), separators and lone surrogates
# (bytes that were not UTF-8, which would also crash the write).
_ACTING = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escaped(ch: str, keep: str) -> str:
    if ch in keep or unicodedata.category(ch) not in _ACTING:
        return ch
    return repr(ch)[1:-1]  # \x1b, \x07, \r, \n, \u202e, \udcff


def visible(text: object) -> str:
    """Text that came from a person, the store or the cluster, as it may be printed: every
    character a terminal would act on is written as its escape, a newline included, so the
    text stays on its line and shows what it holds."""
    return "".join(_escaped(ch, "") for ch in str(text))


def visible_lines(text: object) -> str:
    """Like ``visible`` but keeping line breaks and tabs: for what the CLI lays out over
    several lines itself (a diff, a message with its hint)."""
    return "".join(_escaped(ch, "\n\t") for ch in str(text))


def echo(message: object = "", *, err: bool = False) -> None:
    """Every line the CLI prints goes through here, so that whatever a caller did not pass
    through ``visible`` still reaches the terminal inert (only its line breaks act)."""
    click.echo(visible_lines(message), err=err)


# Where one remedy means different things by error: a policy that does not load is fixed in
# its files (``policy explain`` cannot even read them), a denial is explained by the rules.
CODE_WORDS: dict[str, str] = {
    "policy": "fix the files; `stratus policy check DIR` lists every problem",
}


def error_line(error: StratusError) -> str:
    hint = CODE_WORDS.get(error.code) or REMEDY_WORDS.get(error.remedy)
    return visible(error.message) + (f"\n  hint: {hint}" if hint else "")


def plan(proposal: Proposal) -> None:
    echo(f"intent: {visible(proposal.intent)}")
    echo(
        f"risk: {proposal.risk}  reversible: {'yes' if proposal.reversible else 'no'}  "
        f"target: {visible(proposal.target)}"
    )
    for warning in proposal.warnings:
        echo(f"warning: {visible(warning)}")
    echo(visible_lines(proposal.plan.diff.rstrip()) or "(no change)")


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
    _line(
        f"telemetry: pods ready {summary.pods}, restarts {summary.restarts}, "
        f"endpoints {summary.endpoints}"
    )
    for line in summary.errors:
        _line(f"  error line: {line}")
    for line in summary.events:
        _line(f"  event: {line}")
    m = summary.metrics
    if summary.metrics_source == "none":
        _line("metrics:   no metrics source (STRATUS_PROMETHEUS_URL is not set)")
        return
    if summary.metrics_source == "not_applicable":
        _line("metrics:   none for this kind of object")
        return
    if m is None:
        _line(f"metrics:   unavailable ({summary.metrics_reason}); cluster signals only")
        return
    ran = m.executed_at is not None
    _line(
        f"metrics:   Prometheus, last {m.window:g}s, services {', '.join(m.services)}"
        + ("; before -> after the change" if ran else "")
    )
    for label, figure, unit in (
        ("error rate", m.error_rate, "%"),
        ("p95", m.p95, "s"),
        ("restarts", m.restarts, ""),
        ("memory/limit", m.memory, "%"),
    ):
        _line(f"  {label:<13}{_figure(figure, unit, ran)}")
    for caller in m.callers:
        _line(f"  caller {caller.caller}: errors {_figure(caller.figure, '%', ran)}")
    if m.failed:
        _line(f"  missing: {m.failed}")


def decision(proposal: Proposal) -> None:
    echo(f"policy: {visible(proposal.decision.reason)}")


def summary(proposal: Proposal) -> str:
    votes = ", ".join(visible(user) for user in proposal.approvals())
    state = "TAMPERED" if proposal.tampered else proposal.state.value
    return (
        f"{visible(proposal.id)}  {state:<17} {visible(proposal.action):<20} "
        f"{visible(proposal.target)}  by {visible(proposal.requester)}"
        + (f"  approvals: {votes}" if votes else "")
        + (
            f"  (edited outside Stratus: {visible(proposal.tampered[0])})"
            if proposal.tampered
            else ""
        )
    )


def _state(proposal: Proposal) -> str:
    approvals = len(proposal.approvals())
    if proposal.state == ProposalState.EXPIRED and approvals:
        # Said from the votes, not the stored reason: rows expired before it was worded so.
        return f"expired with {approvals} of {proposal.decision.min_approvals} approvals"
    return proposal.state.value + (f" ({visible(proposal.reason)})" if proposal.reason else "")


def details(proposal: Proposal) -> None:
    echo(f"proposal:  {visible(proposal.id)}")
    if proposal.tampered:
        echo(
            f"state:     TAMPERED — edited outside Stratus; nothing acts on it (stored as "
            f"{proposal.state.value}; see `stratus audit verify`)"
        )
        for problem in proposal.tampered:
            echo(f"tampered:  {visible(problem)}")
    else:
        echo(f"state:     {_state(proposal)}")
    echo(f"requester: {visible(proposal.requester)}")
    if proposal.incident_id:
        echo(f"incident:  {visible(proposal.incident_id)}")
    echo(
        f"created:   {proposal.created_at:%Y-%m-%d %H:%M:%S} UTC; expires "
        f"{proposal.expires_at:%Y-%m-%d %H:%M:%S} UTC"
    )
    d = proposal.decision
    echo(f"policy:    {visible(d.reason)} [{d.source}{': ' + visible(d.rule) if d.rule else ''}]")
    if d.outcome == "ask":
        echo(
            f"approvers: {visible(describe(d.approver_lists))}; needs {d.min_approvals}; "
            f"requester may approve: {'yes' if d.self_approval else 'no'}"
        )
    for vote in proposal.votes:
        counted = "" if vote.digest == proposal.plan.digest else " (for an earlier plan)"
        echo(
            f"vote:      {visible(vote.user)} {vote.choice} at {vote.at:%H:%M:%S}{counted}"
            + (f": {visible(vote.reason)}" if vote.reason else "")
        )
    if proposal.execution_id:
        echo(f"execution: {proposal.execution_id}")
    if proposal.undo_id:
        echo(f"undo:      stratus undo {proposal.undo_id}")
    if proposal.superseded_by:
        echo(f"replaced by: {visible(proposal.superseded_by)}")
    if proposal.previous_diff:
        echo("diff of the proposal this one replaces:")
        echo(visible_lines(proposal.previous_diff.rstrip()))
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
    return visible(f"[{envelope.seq}] {e.proposal_id} {text} ({e.actor})")  # one line


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
    return visible(f"[{envelope.seq}] {e.incident_id} {text}")  # one line


def incident_line(incident: Incident) -> str:
    what = (
        f"{incident.diagnosis.resource}: {incident.diagnosis.mechanism}"
        if (incident.diagnosis)
        else "-"
    )
    return visible(
        f"{incident.id}  {incident.state.value:<17} {incident.namespace:<20} "
        f"{incident.created_at:%Y-%m-%d %H:%M}  attempts {len(incident.attempts)}  {what}"
        + (f"  [parked: {incident.parked}]" if incident.parked and incident.is_open else "")
    )


def _elapsed(start: object, end: object) -> str:
    if start is None or end is None:
        return "-"
    seconds = (end - start).total_seconds()  # type: ignore[operator]
    return f"{seconds:.1f}s"


def _line(text: str) -> None:
    """One line of the summary: every field in it may hold text from the cluster, the model or
    a person, none of it ever a line break."""
    echo(visible(text))


def incident_summary(incident: Incident) -> None:
    _line(f"incident:  {incident.id} on {incident.namespace} ({incident.state.value})")
    if incident.reason:
        _line(f"outcome:   {incident.reason}")
    if incident.parked and incident.is_open and incident.parked_at is not None:
        _line(
            f"parked:    since {incident.parked_at:%Y-%m-%d %H:%M:%S} UTC, {incident.parked} "
            "(nothing runs until a retry posts its thread; it ends after the bound)"
        )
    _line(f"started:   {incident.created_at:%Y-%m-%d %H:%M:%S} UTC by {incident.requester}")
    if incident.question:
        _line(f"question:  {incident.question}")
    d = incident.diagnosis
    if d is not None:
        _line(f"diagnosis: {d.resource} — {d.category} ({d.mechanism}); planner {d.source}")
        _line(f"           {d.summary}")
        for item in d.evidence[:8]:
            _line(f"  evidence [{item.source} {item.ref}] {item.text}")
        for line in d.history:
            _line(f"  history: {line}")
    for attempt in incident.attempts:
        verdict = attempt.verdict or "-"
        _line(
            f"attempt {attempt.number}: {attempt.candidate.intent} → {attempt.outcome or 'running'}"
            f" (verdict {verdict}; score {attempt.health_before.get('total', '?')} → "
            f"{attempt.health_after.get('total', '?')})"
        )
        for proposal_id in [p for p in attempt.proposals if p]:
            _line(f"  proposal {proposal_id}")
        for proposal_id in attempt.undo_proposals:
            _line(f"  undo     {proposal_id}")
    rest = [c for c in incident.candidates if c.key() not in incident.tried]
    if incident.is_open and rest:
        _line("other options:")
        for candidate in rest[:5]:
            _line(f"  - {candidate.intent}")
    health = incident.health_now or incident.health_at_start
    if health:
        _line(
            f"health:    score {health.get('total')} "
            f"({'healthy' if health.get('healthy') else 'unhealthy'})"
        )
    _line(
        f"time to detect {_elapsed(incident.created_at, incident.detected_at)}, "
        f"to mitigate {_elapsed(incident.created_at, incident.mitigated_at)}"
    )
    if incident.usage.model_calls:
        u = incident.usage
        _line(
            f"model:     {u.model_calls} calls, {u.prompt_tokens} prompt + "
            f"{u.completion_tokens} completion tokens"
        )
