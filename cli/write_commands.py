"""``stratus act``, ``stratus undo`` and ``stratus audit``: writes from a terminal.

Every write shows its intent and exact diff first and asks on a terminal (``--yes`` stands for
the human). Policy evaluation joins this path with the policies issue; until then the human at
the terminal decides. Errors are one line and exit 1.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml

from cli.policy_gate import gate
from store.audit import AuditLog
from store.db import Store, StoreError
from tools import actions, errors
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from tools.scope import WriteScope
from undo.stack import UndoStack, plan_inverse

KIND_ALIASES = {
    "deploy": "Deployment",
    "deployment": "Deployment",
    "deployments": "Deployment",
    "sts": "StatefulSet",
    "statefulset": "StatefulSet",
    "statefulsets": "StatefulSet",
    "ds": "DaemonSet",
    "daemonset": "DaemonSet",
    "daemonsets": "DaemonSet",
    "svc": "Service",
    "service": "Service",
    "services": "Service",
    "cm": "ConfigMap",
    "configmap": "ConfigMap",
    "configmaps": "ConfigMap",
    "no": "Node",
    "node": "Node",
    "nodes": "Node",
    "po": "Pod",
    "pod": "Pod",
    "pods": "Pod",
    "netpol": "NetworkPolicy",
    "networkpolicy": "NetworkPolicy",
    "networkpolicies": "NetworkPolicy",
    "hpa": "HorizontalPodAutoscaler",
    "horizontalpodautoscaler": "HorizontalPodAutoscaler",
}

_CLUSTER = [
    click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Kubeconfig file (default: $KUBECONFIG or ~/.kube/config).",
    ),
    click.option("--context", default=None, help="Kubeconfig context."),
]


def _cluster_options(func: Any) -> Any:
    for option in reversed(_CLUSTER):
        func = option(func)
    return func


@dataclass
class Session:
    store: Store
    executor: Executor
    actor: str


def _actor() -> str:
    return os.environ.get("STRATUS_ACTOR") or f"cli:{os.environ.get('USER', 'unknown')}"


@contextmanager
def session(kubeconfig: Path | None, context: str | None) -> Iterator[Session]:
    """Open the store and the cluster, and finish what a crash may have left pending."""
    try:
        store = Store()
        kube = KubeClient(kubeconfig=str(kubeconfig) if kubeconfig else None, context=context)
        executor = Executor(kube, store, scope=WriteScope.from_env())
        for line in executor.reconcile(actor=_actor()):
            click.echo(f"recovered an interrupted write: {line}", err=True)
        yield Session(store, executor, _actor())
    except (errors.ToolError, StoreError) as error:
        raise click.ClickException(str(error)) from error


def parse_target(target: str, default_kind: str) -> tuple[str, str]:
    kind_text, sep, name = target.partition("/")
    if not sep:
        return default_kind, target
    kind = KIND_ALIASES.get(kind_text.lower())
    if kind is None:
        raise click.BadParameter(f"unknown kind {kind_text!r}", param_hint="TARGET")
    return kind, name


def parse_params(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``key=value`` pairs; values are YAML (numbers, lists, maps, null), keys use - or _."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="PARAMS")
        try:
            parsed = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            parsed = value
        if isinstance(parsed, dt.date | dt.datetime):
            parsed = value  # timestamps stay text
        params[key.replace("-", "_")] = parsed
    return params


def _show_plan(intent: str, risk: str, reversible: bool, diff: str) -> None:
    click.echo(f"intent: {intent}")
    click.echo(f"risk: {risk}  reversible: {'yes' if reversible else 'no'}")
    click.echo(diff.rstrip() or "(no change)")


@click.command(context_settings={"ignore_unknown_options": False})
@click.argument("action_name", metavar="ACTION")
@click.argument("target")
@click.argument("params", nargs=-1, metavar="[PARAMS]...")
@click.option("-n", "--namespace", default="default", show_default=True)
@click.option("--dry-run", is_flag=True, help="Plan and server-dry-run only; write nothing.")
@click.option("--yes", is_flag=True, help="Do not ask; apply (stands for the human's approval).")
@click.option(
    "--always", is_flag=True, help="Answer 'Always allow' (a grant, where the policy allows one)."
)
@_cluster_options
def act(
    action_name: str,
    target: str,
    params: tuple[str, ...],
    namespace: str,
    dry_run: bool,
    yes: bool,
    always: bool,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """Apply one typed write ACTION to TARGET ([KIND/]NAME), with KEY=VALUE parameters.

    Actions: scale, rollout-restart, rollout-undo, set-image, set-env, set-resources,
    set-command, set-node-selector, patch-service, patch-configmap-key, patch-hpa, cordon,
    uncordon, delete-pod, delete-networkpolicy.
    """
    cls = actions.CATALOG.get(action_name)
    if cls is None:
        raise click.ClickException(
            f"unknown action {action_name!r}; known actions: {', '.join(sorted(actions.CATALOG))}"
        )
    kind, name = parse_target(target, cls.kinds[0])
    values = {"kind": kind, "target": name, "namespace": namespace, **parse_params(params)}
    if cls is actions.RolloutRestart:
        values.setdefault("restarted_at", dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    with session(kubeconfig, context) as s:
        try:
            action = actions.build(action_name, values)
            preview = s.executor.preview(action)
            _show_plan(preview.intent, cls.risk, cls.reversible, preview.plan.diff)
            if not preview.plan.changes_anything:
                click.echo("nothing to do: the object already looks like that")
                return
            if dry_run:
                click.echo("dry run: the API server accepted the change; nothing was written")
                return
            labels = ((preview.plan.before or {}).get("metadata") or {}).get("labels") or {}
            gate(
                s.store,
                actor=s.actor,
                action_name=action.name,
                ref=action.ref(),
                labels=labels,
                diff=preview.plan.diff,
                yes=yes,
                always=always,
                question="Apply this change?",
            )
            outcome = s.executor.execute(action, actor=s.actor)
        except errors.ToolError as error:
            raise click.ClickException(error.message) from error
        undo = f" (undo: stratus undo {outcome.undo_id})" if outcome.undo_id else ""
        click.echo(f"applied: {outcome.intent}{undo}")


@click.command()
@click.argument("entry_id", required=False)
@click.option("--last", is_flag=True, help="Undo the most recent write.")
@click.option("--list", "list_entries", is_flag=True, help="List what can be undone.")
@click.option("--force", is_flag=True, help="Undo even if the object changed since.")
@click.option("--yes", is_flag=True, help="Do not ask.")
@_cluster_options
def undo(
    entry_id: str | None,
    last: bool,
    list_entries: bool,
    force: bool,
    yes: bool,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """Undo a write Stratus made (by undo ID, or --last); --list shows the stack."""
    if sum(bool(x) for x in (entry_id, last, list_entries)) != 1:
        raise click.UsageError("give exactly one of ID, --last or --list")
    with session(kubeconfig, context) as s:
        stack = UndoStack(s.executor)
        if list_entries:
            entries = stack.entries.active()
            if not entries:
                click.echo("nothing to undo")
            for entry in entries:
                click.echo(
                    f"{entry.id}  {entry.created_at[:19]}  {entry.execution.actor:<16} "
                    f"{entry.execution.intent}"
                )
            return
        try:
            chosen = (
                stack.entries.active()[0]
                if last and stack.entries.active()
                else (stack.entries.get(entry_id) if entry_id else None)
            )
            if chosen is None:
                raise errors.NotFound("nothing to undo" if last else f"no undo entry {entry_id}")
            execution = chosen.execution
            current = s.executor.kube.find(
                ObjectRef(execution.kind, execution.name, execution.namespace)
            )
            try:
                inverse = plan_inverse(execution, current, force=force)
            except errors.UndoConflict as conflict:
                click.echo(conflict.diff.rstrip(), err=True)
                raise
            _show_plan(f"Undo: {execution.intent}", "-", True, inverse.diff)
            labels = ((current or {}).get("metadata") or {}).get("labels") or {}
            gate(
                s.store,
                actor=s.actor,
                action_name=execution.action,
                ref=ObjectRef(execution.kind, execution.name, execution.namespace),
                labels=labels,
                diff=inverse.diff,
                yes=yes,
                always=False,
                question="Undo this change?",
            )
            stack.undo(chosen.id, actor=s.actor, force=force)
        except errors.ToolError as error:
            raise click.ClickException(error.message) from error
        click.echo(f"undone: {execution.intent}")


@click.group()
def audit() -> None:
    """The tamper-evident audit log."""


@audit.command()
def verify() -> None:
    """Check the hash chain; exit 1 and name every edited, removed or reordered row."""
    try:
        log = AuditLog(Store())
    except StoreError as error:
        raise click.ClickException(str(error)) from error
    problems = log.verify()
    if problems:
        for problem in problems:
            click.echo(f"audit log tampered: {problem}", err=True)
        raise SystemExit(1)
    click.echo(f"audit log intact: {log.count()} rows")


@audit.command()
@click.option("--limit", type=click.IntRange(1, 10_000), default=20, show_default=True)
def show(limit: int) -> None:
    """Print the most recent audit rows."""
    try:
        log = AuditLog(Store())
    except StoreError as error:
        raise click.ClickException(str(error)) from error
    for record in log.records(limit=limit):
        intent = record.payload.get("intent") or record.payload.get("verdict") or ""
        click.echo(
            f"{record.seq:>6}  {record.at[:19]}  {record.actor:<16} {record.event:<9} "
            f"{record.subject}  {intent}"
        )
