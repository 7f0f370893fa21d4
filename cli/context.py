"""Opening what a command needs: the store, the cluster, the policy, the proposal service.

This is the composition root's wiring for one command. It also finishes what a crash left
behind (recovery runs before anything else) and records an overridden identity in the audit
log.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import click

from cli import render
from cli.identity import Identity, current
from policies import impersonation, served
from policies.clients import ENV_FILE, Registry
from policies.evaluate import CompiledPolicy
from policies.loader import load
from policies.reload import LivePolicy, audit_reporter, default_directory
from proposals.service import ProposalService
from store.audit import AuditLog
from store.db import Store
from tools import fleet
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient
from tools.prometheus import from_env as prometheus_from_env
from tools.scope import WriteScope

CLUSTER_OPTIONS = [
    click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Kubeconfig file (default: $KUBECONFIG or ~/.kube/config).",
    ),
    click.option("--context", default=None, help="Kubeconfig context."),
]


def _named_cluster(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    # Left out, the default cluster; given, a name: ``--cluster ""`` (an unset shell
    # variable) must not quietly mean the default cluster (docs/fleet.md).
    if value is None:
        return ""
    if not value.strip():
        raise click.UsageError(
            "--cluster needs a cluster's name (leave it out for the default cluster)", ctx
        )
    return value


def cluster_choice(what: str) -> Callable[[click.decorators.FC], click.decorators.FC]:
    """The ``--cluster NAME`` option of a command that acts on one cluster of a fleet."""
    return click.option(
        "--cluster",
        default=None,
        metavar="NAME",
        callback=_named_cluster,
        help=f"The fleet's cluster {what} (docs/fleet.md; default: the first configured).",
    )


# ``stratus serve`` may serve a fleet: several contexts, each a named cluster (docs/fleet.md).
FLEET_OPTIONS = [
    CLUSTER_OPTIONS[0],
    click.option(
        "--context",
        "context",
        multiple=True,
        help="Kubeconfig context; give it again for each cluster of a fleet "
        "(default: $STRATUS_CLUSTERS, else the current context).",
    ),
]


def cluster_options(func: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(CLUSTER_OPTIONS):
        func = option(func)
    return func


def fleet_options(func: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(FLEET_OPTIONS):
        func = option(func)
    return func


def load_policy(directory: Path | None = None, *, store: Store | None = None) -> CompiledPolicy:
    """The policy in force; a policy that does not load raises (nothing is allowed). With the
    store it is for: the policy that database's bot serves (``policy_directory``)."""
    chosen = directory or default_directory()
    if store is not None:
        chosen = policy_directory(store, chosen)
    return CompiledPolicy.build(load([chosen] if chosen else []))


def policy_directory(store: Store, configured: Path | None) -> Path | None:
    """The policy directory a command on ``store`` runs under: the one the database's bot
    serves when nothing else is configured (saying so when its files changed since), the
    configured one when no bot ever served it; another than the bot's is refused."""
    choice = served.choose(store, configured)
    if choice.changed and choice.served is not None:
        render.echo(
            f"note: the policy files in {choice.directory} changed since this database's bot "
            f"recorded them ({choice.served.recorded_at}); using them as they are now, as the "
            "bot does",
            err=True,
        )
    return choice.directory


@dataclass
class Session:
    store: Store
    kube: KubeClient  # the default cluster's
    service: ProposalService
    identity: Identity
    policy: LivePolicy
    bot: served.ServedPolicy | None = None  # a bot serves this database (its record)
    fleet: fleet.Fleet | None = None  # every cluster by name (one unnamed cluster without a fleet)

    @property
    def actor(self) -> str:
        return self.identity.actor

    @cached_property
    def prometheus(self) -> PrometheusClient | None:
        """The Prometheus STRATUS_PROMETHEUS_URL names (read on first use), or None."""
        return prometheus_from_env()


def open_store() -> Store:
    return Store()


def record_identity(store: Store, identity: Identity) -> None:
    if identity.claimed:
        AuditLog(store).append(
            actor=identity.actor,
            event="identity",
            subject=identity.actor,
            payload={"os_user": identity.os_user, "via": "STRATUS_ACTOR"},
        )


def recover_writes(service: ProposalService) -> None:
    """Finish what a crash left behind (the write-ahead records still pending), saying so."""
    for line in service.reconcile():
        if ": cannot tell yet" in line:
            render.echo(
                f"an interrupted write is not settled yet: {render.visible(line)}", err=True
            )
        else:
            render.echo(f"recovered an interrupted write: {render.visible(line)}", err=True)


@contextmanager
def session(
    kubeconfig: Path | None,
    context: str | Sequence[str] | None,
    *,
    recover: bool = True,
    serving: bool = False,
) -> Iterator[Session]:
    """Open the store and the cluster, and finish what a crash may have left pending.

    ``serving``: this process is the bot for the store: it runs under the configured policy,
    which ``serve`` records for every other process once Slack accepted the bot
    (``policies.served``); any other process runs under the recorded policy."""
    identity = current()
    contexts = [context] if isinstance(context, str) else list(context or ())
    chosen = fleet.configured(contexts, os.environ)  # a bad cluster name stops here
    store = open_store()
    with contextlib.ExitStack() as stack:
        stack.enter_context(closing(store))
        clusters = stack.enter_context(
            fleet.Fleet.open(chosen, kubeconfig=str(kubeconfig) if kubeconfig else None)
        )
        yield from _opened(store, clusters, identity, recover=recover, serving=serving)


def _opened(
    store: Store, clusters: fleet.Fleet, identity: Identity, *, recover: bool, serving: bool
) -> Iterator[Session]:
    kube = clusters.client()
    try:
        executors = fleet.executors(clusters, store, scope=WriteScope.from_env())
        executor = executors[clusters.default]
        # The files are read on first use and followed after that: a rule added while a
        # long-running command (the bot, an investigation waiting for approval) runs decides
        # the next proposal. A later bad change keeps the last good policy and is audited.
        configured = default_directory()
        directory = configured if serving else policy_directory(store, configured)
        policy = LivePolicy(directory, on_error=audit_reporter(store))
        if serving:
            # A policy that does not load stops the bot here. It is recorded for the other
            # processes only once Slack accepted the bot (``serve``): a terminal user running
            # ``stratus serve`` with a made-up token must not re-point the database's policy.
            policy()
        service = ProposalService(
            store=store,
            executor=executor,
            policy=policy,
            impersonation=impersonation.from_env(),
            executors=executors,
            # Its MCP clients: a revoked one's proposals are withdrawn and never approved.
            clients=Registry.from_env() if os.environ.get(ENV_FILE, "").strip() else None,
        )
        record_identity(store, identity)
        if recover:
            recover_writes(service)
        opened = Session(
            store, kube, service, identity, policy, served.recorded(store), fleet=clusters
        )
        yield opened
    finally:
        metrics = opened.__dict__.get("prometheus") if "opened" in locals() else None
        if metrics is not None:
            metrics.close()
