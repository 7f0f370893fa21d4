"""``stratus act`` and ``stratus undo``: writes from a terminal, through the proposal service.

Every write is proposed (planned, server-dry-run, decided by policy), shown with its intent,
risk, exact diff and decision, approved by the person at the terminal where the policy asks
(``--yes`` stands for that approval), and executed by the service — the same path a Slack
click takes. What happened is printed from the service's event stream.
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import click

from cli import render
from cli.context import Session, cluster_choice, cluster_options, session
from cli.targets import parse_target
from incidents import continuation, reopening
from incidents.repository import IncidentRepository
from proposals.errors import AnswerRefused, Denied
from proposals.model import Proposal, ProposalState
from proposals.service import Superseded, UndoRequest
from store import handles
from store.errors import Remedy
from tools import errors, fleet, k8s, params
from tools.actions import CATALOG, Action

S = ProposalState


def confirm(yes: bool, question: str) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise click.ClickException("refusing to write without --yes: stdin is not a terminal")
    with _leaving_aborts():
        if not click.confirm(question, default=False):
            raise click.ClickException("nothing written")


@contextmanager
def _leaving_aborts() -> Iterator[None]:
    """Closing the terminal (SIGHUP) or being told to stop (SIGTERM) at the prompt is an
    answer like Ctrl-C: the caller withdraws the proposal instead of dying with it open."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return

    def leave(signum: int, frame: FrameType | None) -> None:
        raise click.Abort()

    previous = {number: signal.signal(number, leave) for number in (signal.SIGHUP, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def print_events(s: Session, cursor: int, proposal_ids: set[str]) -> None:
    for envelope in s.service.events.since(cursor):
        if envelope.event.proposal_id in proposal_ids:
            render.echo(render.event(envelope), err=True)


def approve_and_execute(
    s: Session, proposal: Proposal, *, yes: bool, always: bool, question: str
) -> Proposal | None:
    """Answer for the person at the terminal where the policy asks; execute once approved.
    Returns None while more approvals are needed."""
    if proposal.state == S.DENIED:
        target = proposal.target
        raise Denied(
            proposal.decision.reason,
            subject=proposal.id,
            details={
                "action": proposal.action,
                "namespace": target.namespace,
                "resource": f"{target.kind.lower()}/{target.name}",
            },
        )
    if proposal.state == S.AWAITING_APPROVAL:
        try:
            confirm(yes, question)
        except (click.ClickException, click.Abort):
            # Declined at the terminal: withdraw it, so nobody else can approve it later.
            s.service.cancel(proposal.id, actor=s.actor, reason="declined at the terminal")
            raise
        try:
            proposal = s.service.answer(
                proposal.id, user=s.actor, choice="always" if always else "approve"
            )
        except AnswerRefused as refused:
            # Not theirs to approve: the proposal stays for someone who may, and the person
            # is told exactly who answers it where (never left an orphan no one sees).
            if refused.remedy != Remedy.ASK_APPROVER:
                raise
            hint = render.waiting_hint(proposal.id, in_slack_too=s.bot is not None)
            raise click.ClickException(f"{refused.message}\n  hint: {hint}") from refused
    try:
        # A terminal runs no incident workflow: it executes the approved write itself, and
        # the incident's next advance finds that step executed.
        incidents = IncidentRepository(s.service.store)
        done = continuation.carry_on(
            proposal,
            incidents=incidents,
            # The service's own method, bound to the person: no call back into the surface.
            execute=functools.partial(s.service.execute, actor=s.actor),
        )
    except Superseded as superseded:
        render.echo(f"the plan you approved ({superseded.old.id}):", err=True)
        render.echo(render.visible_lines(superseded.old.plan.diff.rstrip()), err=True)
        if superseded.new is not None:
            render.echo(
                f"the plan now ({superseded.new.id}, {superseded.new.state.value}):", err=True
            )
            render.echo(render.visible_lines(superseded.new.plan.diff.rstrip()), err=True)
        raise
    if isinstance(done, Proposal) and continuation.next_after(done, incidents) == (
        continuation.Next.QUEUED
    ):
        render.echo(render.waits_its_turn(done))
        return None
    if done is None:
        render.echo(
            f"{len(proposal.approvals())} of {proposal.decision.min_approvals} approvals; "
            + render.waiting_hint(proposal.id, in_slack_too=s.bot is not None)
        )
        return None
    assert isinstance(done, Proposal)  # no workflow is advanced from here
    return done


def note_undone(s: Session, done: Proposal) -> None:
    """An undo executed here: the incident whose write it undid says so — re-opened, or left
    closed and why (``incidents.reopening``, the rule the bot follows too)."""
    if done.undo_entry is None or done.state != S.EXECUTED:
        return
    noted = reopening.after_undo(IncidentRepository(s.service.store), s.service, done.id)
    if noted is not None and noted.fix_undone is not None:
        said = reopening.sentence(noted.fix_undone)
        render.echo(render.visible(f"incident {noted.id}: {said}"))


def _help_text(cls: type[Action]) -> str:
    lines = [f"{cls.__doc__.strip() if cls.__doc__ else ''}".strip()]
    lines.append(
        f"Acts on: {', '.join(cls.kinds)}. Risk: {cls.risk}. "
        f"Reversible: {'yes' if cls.reversible else 'no'}."
    )
    lines.append("\b\nParameters (KEY=VALUE):")
    for spec in params.specs(cls):
        need = "required" if spec.required else "optional"
        text = f"  {spec.name}: {spec.type}, {need}"
        if spec.description:
            text += f" — {spec.description}"
        lines.append(text)
    if not params.specs(cls):
        lines.append("  (none)")
    if cls.example:
        lines.append(f"\b\nExample:\n  stratus act {cls.name} {cls.example} -n NAMESPACE")
    return "\n\n".join(line for line in lines if line)


def _run_act(
    action_name: str,
    target: str,
    pairs: tuple[str, ...],
    namespace: str,
    dry_run: bool,
    yes: bool,
    always: bool,
    kubeconfig: Any,
    context: str | None,
    cluster: str = "",
) -> None:
    cls = CATALOG[action_name]
    kind, name = parse_target(target, cls.kinds[0])
    values = params.parse(cls, pairs)
    with session(kubeconfig, context) as s:
        cursor = s.service.events.last_seq()
        proposal = s.service.propose(
            action=action_name,
            kind=kind,
            name=name,
            namespace="" if kind == "Node" else namespace,
            params=values,
            requester=s.actor,
            dry_run=dry_run,
            cluster=cluster,
        )
        render.plan(proposal)
        render.decision(proposal)
        if dry_run:
            said = render.dry_run_line(proposal.decision, handles=handles.known(s.store))
            render.echo(said)
            return
        done = approve_and_execute(
            s, proposal, yes=yes, always=always, question="Apply this change?"
        )
        print_events(s, cursor, {proposal.id})
        if done is not None:
            undo = f" (undo: stratus undo {done.undo_id})" if done.undo_id else ""
            render.echo(f"applied: {render.visible(done.intent)}{undo}")


def _action_command(cls: type[Action]) -> click.Command:
    @click.command(name=cls.name, help=_help_text(cls))
    @click.argument("target")
    @click.argument("pairs", nargs=-1, metavar="[KEY=VALUE]...")
    @click.option(
        "-n",
        "--namespace",
        default=None,
        help="Namespace (default: the kubeconfig context's, else default — as kubectl).",
    )
    @click.option(
        "--dry-run", is_flag=True, help="Plan, server-dry-run and decide; write and store nothing."
    )
    @click.option("--yes", is_flag=True, help="Do not ask; stands for your approval.")
    @click.option(
        "--always",
        is_flag=True,
        help="Answer 'Always allow' (a grant, where the policy allows one).",
    )
    @cluster_choice("to change")
    @cluster_options
    def command(
        target: str,
        pairs: tuple[str, ...],
        namespace: str | None,
        dry_run: bool,
        yes: bool,
        always: bool,
        cluster: str,
        kubeconfig: Any,
        context: str | None,
    ) -> None:
        if namespace is None:
            # A fleet's cluster is a kubeconfig context: its namespace, as kubectl --context.
            named = context or (cluster if cluster and cluster != fleet.LOCAL else None)
            namespace = k8s.context_namespace(str(kubeconfig) if kubeconfig else None, named)
        _run_act(
            cls.name, target, pairs, namespace, dry_run, yes, always, kubeconfig, context, cluster
        )

    return command


class ActionGroup(click.Group):
    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            raise click.UsageError(
                f"unknown action {args[0]!r}; known actions: {', '.join(sorted(CATALOG))}"
            )
        return super().resolve_command(ctx, args)


@click.group(cls=ActionGroup)
def act() -> None:
    """Propose and apply one typed write ACTION to TARGET ([KIND/]NAME) with KEY=VALUE
    parameters. `stratus act ACTION --help` lists an action's parameters and options:
    -n/--namespace, --dry-run, --yes, --always, and in a fleet --cluster NAME (the cluster to
    change; default: the first configured, docs/fleet.md)."""


for _cls in CATALOG.values():
    act.add_command(_action_command(_cls))


@click.command()
@click.argument("entry_id", required=False)
@click.option(
    "--last",
    is_flag=True,
    help="Undo the most recent write on the undo stack (irreversible writes are not on it).",
)
@click.option("--list", "list_entries", is_flag=True, help="List what can be undone.")
@click.option("--force", is_flag=True, help="Undo even if the object changed since.")
@click.option(
    "--drop", is_flag=True, help="Take ENTRY_ID off the stack without undoing it (audited)."
)
@click.option("--reason", default="", help="Why (for --drop).")
@click.option("--dry-run", is_flag=True, help="Show the undo and its decision; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask.")
@cluster_options
def undo(
    entry_id: str | None,
    last: bool,
    list_entries: bool,
    force: bool,
    drop: bool,
    reason: str,
    dry_run: bool,
    yes: bool,
    kubeconfig: Any,
    context: str | None,
) -> None:
    """Undo a write Stratus made (by undo ID, or --last); --list shows the stack.

    An undo is a proposal of its own (policy action `undo`), approved and executed like any
    other write; `--last` always means the most recent write, so two people who ask at once
    undo the same one."""
    if sum(bool(x) for x in (entry_id, last, list_entries)) != 1:
        raise click.UsageError("give exactly one of ID, --last or --list")
    if drop and not entry_id:
        raise click.UsageError("--drop needs an undo ID")
    with session(kubeconfig, context) as s:
        if list_entries:
            entries = s.service.undo_entries()
            if not entries:
                render.echo("nothing to undo")
            for entry in entries:
                # In a fleet each entry says its cluster: the undo goes back there, whichever
                # cluster is the default ('' is a record from before the fleet: the default).
                clusters = s.fleet
                where = ""
                if clusters is not None and clusters.named:
                    where = f"{entry.execution.cluster or clusters.default:<12} "
                render.echo(
                    render.visible(
                        f"{entry.id}  {entry.created_at[:19]}  {where}"
                        f"{entry.execution.actor:<16} {entry.execution.intent}"
                    )
                )
            return
        if drop:
            assert entry_id is not None
            if not reason:
                raise click.UsageError("--drop needs --reason: the audit log records why")
            confirm(yes, f"Drop {entry_id} from the undo stack without undoing it?")
            dropped = s.service.drop_undo_entry(entry_id, actor=s.actor, reason=reason)
            render.echo(render.visible(f"dropped {dropped.id}: {dropped.execution.intent}"))
            return
        # The entry is resolved once and checked with the Undo button's rule; the proposal
        # then names that entry, so "--last" cannot move to another write in between.
        entry = s.service.undo_target(UndoRequest(entry_id=entry_id, last=last))
        why = s.service.undo_refusal(entry, actor=s.actor)
        if why is not None:
            # The line names who may; "ask an approver to approve" would name a proposal
            # that does not exist.
            raise AnswerRefused(
                f"{entry.id}: {why}; nothing was undone", subject=entry.id, remedy=Remedy.NONE
            )
        cursor = s.service.events.last_seq()
        try:
            proposal = s.service.propose_undo(
                UndoRequest(entry_id=entry.id, force=force),
                requester=s.actor,
                dry_run=dry_run,
            )
        except errors.UndoConflict as conflict:
            render.echo(render.visible_lines(conflict.diff.rstrip()), err=True)
            raise
        render.plan(proposal)
        render.decision(proposal)
        if dry_run:
            said = render.dry_run_line(
                proposal.decision, done="undone", handles=handles.known(s.store)
            )
            render.echo(said)
            return
        done = approve_and_execute(s, proposal, yes=yes, always=False, question="Undo this change?")
        print_events(s, cursor, {proposal.id})
        if done is not None:
            render.echo(f"undone: {render.visible(done.intent.removeprefix('Undo: '))}")
            note_undone(s, done)
