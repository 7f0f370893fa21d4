"""The CLI's words: how errors, proposals and events read on a terminal.

An error's words are ``cli.text``'s (keyed on its code and remedy); this module prints them
inert. Slack has its own words in ``bot/``.
"""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime

import click

from agents.health import breakdown
from agents.telemetry import Telemetry
from agents.telemetry_metrics import Figure, Metrics
from cli import text
from incidents import reopening
from incidents.model import Incident
from incidents.repository import IncidentEnvelope
from policies.approvers import describe
from proposals.events import Envelope, EventType
from proposals.model import Decision, Proposal, ProposalState
from store.errors import StratusError
from store.handles import named

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


def error_line(error: StratusError) -> str:
    return text.error_line(error, visible)


def waiting_hint(proposal_id: str, *, in_slack_too: bool) -> str:
    """How a proposal that waits for someone else is answered: by an approver at a terminal,
    and in Slack when a bot serves this database (its App Home and ``/stratus status`` list
    the proposal with Approve / Reject buttons)."""
    return (
        f"proposal {visible(proposal_id)} waits for an approver: an approver runs "
        f"`stratus proposals approve {visible(proposal_id)}`{in_slack(in_slack_too)}"
    )


def waits_its_turn(proposal: Proposal) -> str:
    """An agent's approved change queued in an incident under way (docs/mcp.md)."""
    return (
        f"{visible(proposal.id)} approved; incident {visible(proposal.incident_id or '')} "
        "verifies one change at a time: it runs as the incident's next attempt, carried out by "
        "`stratus serve`, once the change before it has its verdict"
    )


def in_slack(served: bool) -> str:
    """Where else a waiting proposal is answered, when a bot serves this database."""
    return (
        "; it also waits in Slack, where the bot serving this database lists it with Approve "
        "and Reject buttons in its App Home and in `/stratus status`"
        if served
        else ""
    )


def plan(proposal: Proposal) -> None:
    if proposal.cluster:
        echo(f"cluster: {visible(proposal.cluster)}")
    echo(f"intent: {visible(proposal.intent)}")
    echo(
        f"risk: {proposal.risk}  reversible: {'yes' if proposal.reversible else 'no'}  "
        f"target: {visible(proposal.target)}"
    )
    if proposal.risk_reason:
        echo(f"why {proposal.risk}: {visible(proposal.risk_reason)}")
    if proposal.puts_back:
        echo(f"warning: this puts back the cause found: {visible(proposal.puts_back)}")
    for warning in proposal.warnings:
        echo(f"warning: {visible(warning)}")
    if proposal.agent_intent:  # an outside agent's own words: quoted, never obeyed
        said = visible(proposal.agent_intent)
        echo(f'{proposal.requester} says it is for (untrusted): "{said}"')
    echo(visible_lines(proposal.plan.diff.rstrip()) or "(no change)")


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "%":
        return f"{value:.1%}"
    if unit == "s":
        return f"{value:.3f}s"
    return f"{value:.0f}"


def _figure(figure: Figure, unit: str, m: Metrics, *, own: bool = True) -> str:
    """One figure; ``own``: the target's (none while it has no pods), not a caller's."""
    if m.executed_at is not None:
        before = "no pods" if own and m.no_pods_before() else _value(figure.before, unit)
        if m.pending:
            after = "pending"
        elif own and m.no_pods_now():
            after = "no pods"
        else:
            after = _value(figure.now, unit)
        return f"{before} -> {after}"
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
    if m.pending and m.settles_at is not None:
        again = datetime.fromtimestamp(m.settles_at, UTC)
        _line(f"  after:       pending until {again:%H:%M:%S} UTC, when the change can show")
    if not ran and m.no_pods_now():
        _line(
            "  no pods:     nothing to measure"
            " (figures from before its pods went away are not shown)"
        )
    else:
        for label, figure, unit in (
            ("error rate", m.error_rate, "%"),
            ("p95", m.p95, "s"),
            ("restarts", m.restarts, ""),
            ("memory/limit", m.memory, "%"),
        ):
            _line(f"  {label:<13}{_figure(figure, unit, m)}")
    for caller in m.callers:
        _line(f"  caller {caller.caller}: errors {_figure(caller.figure, '%', m, own=False)}")
    if m.failed:
        _line(f"  missing: {m.failed}")


def decision(proposal: Proposal) -> None:
    echo(f"policy: {visible(proposal.decision.reason)}")


def dry_run_line(
    decision: Decision, *, done: str = "written", handles: dict[str, str] | None = None
) -> str:
    """What a dry run found, said from the policy's decision: what it *would* do and who it
    would ask — never "accepted", which an ask reads as permission (issue 18 §6). ``handles``:
    the Slack handles the bot serving this database read (``store.handles``): "asks @sre"."""
    why = visible(decision.rule or decision.grant or decision.source)
    if decision.outcome == "deny":
        would = f"would deny it ({why})"
    elif decision.outcome == "allow":
        would = f"would allow it without asking ({why})"
    else:
        who = describe(tuple(tuple(group) for group in decision.approvers))
        who = visible(named(who, handles) if handles else who)
        count = decision.min_approvals
        would = f"would ask for {count} approval{'s' if count != 1 else ''} from {who} ({why})"
    return (
        f"dry run: the API server's dry run passed and the policy {would}; nothing was "
        f"{done} or stored"
    )


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
    if proposal.cluster:
        echo(f"cluster:   {visible(proposal.cluster)}")
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
    line = visible(f"[{envelope.seq}] {e.incident_id} {text}")  # one line
    steps = (e.data.get("plan") or []) if kind == "attempt" else []
    if len(steps) > 1:  # a plan of several steps, shown whole once, as in the Slack thread
        line += "\n" + plan_lines(steps)
    return line


def plan_lines(steps: list[dict[str, object]]) -> str:
    """An attempt's plan: one indented line per step (``incidents.plans``)."""
    lines = [f"  plan ({len(steps)} steps):"]
    for step in steps:
        note = f" (not planned yet: {step['note']}; asked on its own)" if step.get("note") else ""
        lines.append(visible(f"    {step.get('number', '?')}. {step.get('intent', '')}{note}"))
    return "\n".join(lines)


def step_of(position: tuple[int, int] | None) -> None:
    """Print "step k of n" above a proposal that is one step of an attempt of several."""
    if position is not None:
        echo(f"step {position[0]} of {position[1]}")


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
    if incident.cluster:
        _line(f"cluster:   {incident.cluster}")
    if incident.reason:
        _line(f"outcome:   {incident.reason}")
    if incident.fix_undone is not None:
        _line(f"undone:    {reopening.sentence(incident.fix_undone)}")
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
            + (f" (stopped: {attempt.stopped})" if attempt.stopped else "")
            + f" (verdict {verdict}; score {attempt.health_before.get('total', '?')} → "
            f"{attempt.health_after.get('total', '?')})"
        )
        for proposal_id in attempt.proposals:
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
        parts = ", ".join(f"{p.name.replace('_', ' ')} {p.count}" for p in breakdown(health))
        _line(
            f"health:    score {health.get('total')} "
            f"({'healthy' if health.get('healthy') else 'unhealthy'})"
            + (f": {parts}" if parts else "")
            + (
                "; healthy: only warnings and request rates, which lag a fix, remain"
                if health.get("healthy") and health.get("total")
                else ""
            )
        )
        _line("           (0 means nothing wrong; each problem adds its weight)")
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
