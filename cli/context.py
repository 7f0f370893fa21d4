"""Opening what a command needs: the store, the cluster, the policy, the proposal service.

This is the composition root's wiring for one command. It also finishes what a crash left
behind (recovery runs before anything else) and records an overridden identity in the audit
log.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import click

from cli import render
from cli.identity import Identity, current
from policies.evaluate import CompiledPolicy
from policies.loader import load
from policies.reload import LivePolicy, audit_reporter, default_directory
from proposals.service import ProposalService
from store.audit import AuditLog
from store.db import Store
from tools.executor import Executor
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


def cluster_options(func: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(CLUSTER_OPTIONS):
        func = option(func)
    return func


def load_policy(directory: Path | None = None) -> CompiledPolicy:
    """The policy in force; a policy that does not load raises (nothing is allowed)."""
    chosen = directory or default_directory()
    return CompiledPolicy.build(load([chosen] if chosen else []))


@dataclass
class Session:
    store: Store
    kube: KubeClient
    service: ProposalService
    identity: Identity
    policy: LivePolicy

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


@contextmanager
def session(
    kubeconfig: Path | None, context: str | None, *, recover: bool = True
) -> Iterator[Session]:
    """Open the store and the cluster, and finish what a crash may have left pending."""
    identity = current()
    store = open_store()
    kube = KubeClient(kubeconfig=str(kubeconfig) if kubeconfig else None, context=context)
    try:
        executor = Executor(kube, store, scope=WriteScope.from_env())
        # The files are read on first use and followed after that: a rule added while a
        # long-running command (the bot, an investigation waiting for approval) runs decides
        # the next proposal. A later bad change keeps the last good policy and is audited.
        policy = LivePolicy(default_directory(), on_error=audit_reporter(store))
        service = ProposalService(store=store, executor=executor, policy=policy)
        record_identity(store, identity)
        if recover:
            for line in service.reconcile():
                if ": cannot tell yet" in line:
                    render.echo(
                        f"an interrupted write is not settled yet: {render.visible(line)}", err=True
                    )
                else:
                    render.echo(f"recovered an interrupted write: {render.visible(line)}", err=True)
        opened = Session(store, kube, service, identity, policy)
        yield opened
    finally:
        metrics = opened.__dict__.get("prometheus") if "opened" in locals() else None
        if metrics is not None:
            metrics.close()
        kube.close()
        store.close()
