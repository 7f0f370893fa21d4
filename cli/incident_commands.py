"""``stratus investigate`` and ``stratus incidents``: the incident workflow from a terminal.

The workflow runs here exactly as it runs for the bot: the same state machine, the same
proposals through the same service. The terminal prints the incident's and its proposals'
events as they happen and, where the policy asks a human, asks the person at the terminal
(``--yes`` approves for them). An incident left waiting — the terminal closed, no tty, Ctrl-C —
stays in the store; ``stratus incidents resume ID`` picks it up.
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
from pathlib import Path

import click

from agents import telemetry_queries
from agents.llm.config import LLMConfig, make_client
from agents.llm.postmortem import PostmortemWriter
from agents.planner.offline import OfflinePlanner
from agents.telemetry import summarize
from cli import render
from cli.context import Session, cluster_choice, cluster_options, session
from incidents import continuation, plans, postmortem, postmortem_text
from incidents.model import Incident, IncidentState
from incidents.repository import STREAM as INCIDENT_STREAM
from incidents.repository import IncidentEnvelope, IncidentEvent, IncidentRepository
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow, closed
from proposals.events import STREAM as PROPOSAL_STREAM
from proposals.events import Envelope, ProposalEvent
from store.events import EventStore
from tools.reads import ClusterReader

St = IncidentState
EXIT_ESCALATED = 3


def build_workflow(
    s: Session, *, planner: str, max_attempts: int, settle_seconds: float | None
) -> IncidentWorkflow:
    from agents.llm import planner_from_env  # the model clients: only where a planner runs

    llm = planner_from_env(ClusterReader(s.kube)) if planner in ("auto", "llm") else None
    if planner == "llm" and llm is None:
        raise click.ClickException(
            "--planner llm needs a model: set OPENAI_API_KEY (and OPENAI_BASE_URL, STRATUS_MODEL "
            "for another server)"
        )
    s.service.policy()  # a policy that does not load stops here, before an incident opens
    telemetry_queries.check()  # so does a bad telemetry window
    config = WorkflowConfig(max_attempts=max_attempts)
    if settle_seconds is not None:
        config.settle_timeout = settle_seconds
    return IncidentWorkflow(
        service=s.service,
        kube=s.kube,
        offline=OfflinePlanner(),
        llm=llm,
        config=config,
        prometheus=s.prometheus,
        kubes=s.fleet.clients if s.fleet is not None and s.fleet.named else None,
    )


class Printer:
    """Prints the incident's events and its proposals' events since the last print, in the
    order they happened."""

    def __init__(self, s: Session, incident_id: str) -> None:
        self.rows = EventStore(s.store)
        self.incident_id = incident_id
        self.cursor = 0

    def flush(self) -> None:
        for row in self.rows.since(self.cursor, limit=10_000):
            self.cursor = row.seq
            if row.stream == INCIDENT_STREAM and row.subject == self.incident_id:
                event = IncidentEvent.model_validate(row.payload)
                render.echo(render.incident_event(IncidentEnvelope(row.seq, row.at, event)))
            elif row.stream == PROPOSAL_STREAM and (
                row.payload.get("incident_id") == self.incident_id
            ):
                proposal_event = ProposalEvent.model_validate(row.payload)
                render.echo(render.event(Envelope(row.seq, row.at, proposal_event)))


def _ask(s: Session, flow: IncidentWorkflow, incident: Incident, yes: bool) -> bool:
    """Answer the proposal the incident waits on. False: nobody here can answer now."""
    states = continuation.states_of(incident, s.service.get)
    waiting = continuation.awaiting_answer(incident, states)
    if waiting is None:
        return False
    proposal = s.service.get(waiting)
    render.echo("")
    render.step_of(plans.position(incident, proposal.id))
    render.plan(proposal)
    render.telemetry(summarize(ClusterReader(s.kube), proposal, prometheus=flow.prometheus))
    render.decision(proposal)
    if not yes and not sys.stdin.isatty():
        render.echo(
            f"waiting for approval of {proposal.id}: stratus proposals approve {proposal.id}, "
            f"then stratus incidents resume {incident.id}" + render.in_slack(s.bot is not None)
        )
        return False
    if s.actor in proposal.approvals():
        render.echo(
            f"{len(proposal.approvals())} of {proposal.decision.min_approvals} approvals; "
            f"another approver runs: stratus proposals approve {proposal.id}, then "
            f"stratus incidents resume {incident.id}" + render.in_slack(s.bot is not None)
        )
        return False
    if yes or click.confirm("Approve this change?", default=False):
        s.service.answer(proposal.id, user=s.actor, choice="approve")
    else:
        reason = click.prompt("Why not? (goes back to the planner)", default="declined")
        s.service.answer(proposal.id, user=s.actor, choice="reject", reason=reason)
    return True


def drive(s: Session, flow: IncidentWorkflow, incident_id: str, *, yes: bool) -> Incident:
    printer = Printer(s, incident_id)
    incident = flow.incidents.get(incident_id)
    try:
        while True:
            incident = flow.advance(incident_id)
            printer.flush()
            if not incident.is_open:
                break
            elsewhere = flow.driven_elsewhere(incident_id)
            if elsewhere:
                render.echo(
                    f"another process ({elsewhere.split('/')[0]}) is working on {incident_id}; "
                    f"follow it with: stratus incidents show {incident_id}"
                )
                break
            if incident.state != St.AWAITING_APPROVAL or not _ask(s, flow, incident, yes):
                break
    except (KeyboardInterrupt, click.Abort):
        render.echo(f"\ninterrupted; the incident is kept: stratus incidents resume {incident_id}")
        raise SystemExit(130) from None
    return incident


def finish(incident: Incident) -> None:
    render.echo("")
    render.incident_summary(incident)
    if incident.state == St.ESCALATED:
        render.echo(
            f"when the namespace has changed (or the fault has unfolded): "
            f"stratus incidents look-again {incident.id}"
        )
        raise SystemExit(EXIT_ESCALATED)


_PLANNER = click.option(
    "--planner",
    type=click.Choice(["auto", "offline", "llm"]),
    default="auto",
    show_default=True,
    help="auto: the LLM planner when a model is configured (OPENAI_API_KEY), else offline.",
)
_ATTEMPTS = click.option("--max-attempts", type=click.IntRange(1, 10), default=3, show_default=True)


def _finite(_ctx: click.Context, _param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter("give a number of seconds")
    return value


_SETTLE = click.option(
    "--settle-seconds",
    type=click.FloatRange(0, 3600),
    callback=_finite,
    default=None,
    help="How long to wait for the cluster to settle after an attempt "
    "(default: $STRATUS_SETTLE_SECONDS or 60).",
)
_YES = click.option("--yes", is_flag=True, help="Approve what the policy asks a human for.")


@click.command()
@click.argument("namespace")
@click.argument("question", required=False, default="")
@_YES
@_PLANNER
@_ATTEMPTS
@_SETTLE
@cluster_choice("to investigate")
@cluster_options
def investigate(
    namespace: str,
    question: str,
    yes: bool,
    planner: str,
    max_attempts: int,
    settle_seconds: float | None,
    cluster: str,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """Investigate NAMESPACE: find the fault, propose fixes, verify, undo what made it worse."""
    if not namespace:
        raise click.ClickException(
            "the namespace is empty: name the one to investigate (stratus investigate NAMESPACE)"
        )
    with session(kubeconfig, context) as s:
        flow = build_workflow(
            s, planner=planner, max_attempts=max_attempts, settle_seconds=settle_seconds
        )
        incident, joined = flow.start(
            namespace, requester=s.actor, question=question, cluster=cluster
        )
        how = "opened"
        if joined:
            how = "looking again in the escalated" if _looked_again(incident) else "joined the open"
        where = f" in cluster {incident.cluster}" if incident.cluster else ""
        render.echo(f"{how} incident {incident.id} on {namespace}{where}")
        finish(drive(s, flow, incident.id, yes=yes))


@click.group()
def incidents() -> None:
    """List, show, resume and cancel incidents."""


@incidents.command("list")
@click.option("--open", "open_only", is_flag=True, help="Only incidents still open.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@cluster_options
def list_incidents(
    open_only: bool, limit: int, kubeconfig: Path | None, context: str | None
) -> None:
    with session(kubeconfig, context, recover=False) as s:
        found = IncidentRepository(s.store).recent(limit=limit, open_only=open_only)
        if not found:
            render.echo("no incidents")
        for incident in found:
            render.echo(render.incident_line(incident))


@incidents.command("show")
@click.argument("incident_id")
@cluster_options
def show(incident_id: str, kubeconfig: Path | None, context: str | None) -> None:
    with session(kubeconfig, context, recover=False) as s:
        repo = IncidentRepository(s.store)
        incident = repo.get(incident_id)
        render.incident_summary(incident)
        render.echo("events:")
        for envelope in repo.events(incident_id=incident_id):
            render.echo("  " + render.incident_event(envelope))


@incidents.command("postmortem")
@click.argument("incident_id")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write the Markdown to this file instead of printing it.",
)
@cluster_options
def postmortem_command(
    incident_id: str, output: Path | None, kubeconfig: Path | None, context: str | None
) -> None:
    """A postmortem draft of INCIDENT_ID in Markdown, from its stored events: summary, impact,
    timeline, root cause with evidence, what went well, follow-ups. Each line names the events
    it comes from ([#seq], as `stratus incidents show` lists them)."""
    with session(kubeconfig, context, recover=False) as s:
        draft = postmortem.of_incident(IncidentRepository(s.store), s.service, incident_id)
    config = LLMConfig.from_env(os.environ)
    writer = (
        PostmortemWriter(lambda: make_client(config), model=config.model)
        if config is not None
        else None
    )
    document = (
        asyncio.run(postmortem_text.compose(draft, writer))
        if writer is not None
        else postmortem_text.markdown(draft)
    )
    if output is None:
        render.echo(document.rstrip("\n"))
        return
    output.write_text(document)
    render.echo(f"wrote {output}")


@incidents.command("resume")
@click.argument("incident_id")
@_YES
@_PLANNER
@_SETTLE
@cluster_options
def resume(
    incident_id: str,
    yes: bool,
    planner: str,
    settle_seconds: float | None,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """Pick up an incident where it stopped (after a click elsewhere, a restart, Ctrl-C)."""
    with session(kubeconfig, context) as s:
        flow = build_workflow(s, planner=planner, max_attempts=3, settle_seconds=settle_seconds)
        incident = flow.incidents.get(incident_id)
        if not incident.is_open:
            raise closed(incident)
        finish(drive(s, flow, incident_id, yes=yes))


@incidents.command("look-again")
@click.argument("incident_id")
@_YES
@_PLANNER
@_SETTLE
@cluster_options
def look_again(
    incident_id: str,
    yes: bool,
    planner: str,
    settle_seconds: float | None,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """Look again at an escalated incident: a fresh diagnosis in the same incident, with what
    it learned (the Look again button in Slack)."""
    with session(kubeconfig, context) as s:
        flow = build_workflow(s, planner=planner, max_attempts=3, settle_seconds=settle_seconds)
        incident = flow.reopen(incident_id, actor=s.actor)
        render.echo(f"looking again at incident {incident.id} on {incident.namespace}")
        finish(drive(s, flow, incident_id, yes=yes))


def _looked_again(incident: Incident) -> bool:
    """A new investigation re-opened the namespace's escalated incident (not joined one open)."""
    return incident.reopened > 0 and incident.state == St.DIAGNOSING


@incidents.command("cancel")
@click.argument("incident_id")
@click.option("--reason", default="", help="Why (recorded in the events and the audit log).")
@cluster_options
def cancel(incident_id: str, reason: str, kubeconfig: Path | None, context: str | None) -> None:
    """Cancel an incident; a half-done attempt is undone first."""
    with session(kubeconfig, context) as s:
        flow = build_workflow(s, planner="offline", max_attempts=3, settle_seconds=None)
        incident = flow.incidents.get(incident_id)
        if not incident.is_open:
            raise closed(incident)
        why = flow.cancel_refusal(incident_id, user=s.actor)
        if why is not None:
            raise click.ClickException(render.visible(f"{why}; nothing was cancelled"))
        incident = flow.cancel(incident_id, actor=s.actor, reason=reason)
        render.incident_summary(incident)
