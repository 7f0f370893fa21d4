"""Which clusters this Stratus serves, by name, and a client for each: the fleet registry.

One Stratus may look after several clusters (docs/fleet.md). Each is a kubeconfig context,
named by the context (``STRATUS_CLUSTERS=a,b`` or ``stratus serve --context a --context b``),
or ``local``: the cluster Stratus runs in, from its ServiceAccount. The first one named is the
default (an investigation that names none, and every record from before fleets). Without a
fleet configured there is one cluster and it has no name: nothing shows or stores a name, so
a single-cluster Stratus behaves exactly as it always did.

Deciding what is configured is a pure function of the flags and the environment
(``configured``); ``Fleet.open`` then makes the clients, the only part that touches anything.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from store.db import Store
from tools import errors
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.scope import WriteScope

ENV = "STRATUS_CLUSTERS"
_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LOCAL = "local"  # the cluster Stratus runs in (in-cluster ServiceAccount configuration)


@dataclass(frozen=True)
class ClusterConfig:
    """One cluster of the fleet: its name, and the kubeconfig context that reaches it (None:
    the current context, or the in-cluster configuration for ``local``)."""

    name: str
    context: str | None
    in_cluster: bool = False


def configured(contexts: Sequence[str], env: Mapping[str, str]) -> list[ClusterConfig]:
    """The clusters named by ``--context`` flags, else by ``STRATUS_CLUSTERS`` (comma
    separated). One context on its own, or none, is no fleet: one unnamed cluster, as
    before fleets. Names are checked like namespaces (a bad one is refused, saying which),
    and a name given twice is one cluster."""
    listed = [c.strip() for c in contexts if c.strip()]
    from_env = [c.strip() for c in env.get(ENV, "").split(",") if c.strip()]
    if not listed and not from_env:
        return [ClusterConfig("", None)]
    if len(listed) == 1 and not from_env:
        return [ClusterConfig("", listed[0])]  # `--context a` picks a context, as it did
    chosen = list(dict.fromkeys(listed or from_env))
    for name in chosen:
        check_name(name)
    return [ClusterConfig(name, None if name == LOCAL else name, name == LOCAL) for name in chosen]


class Fleet:
    """The clients of the fleet's clusters, by name; the first is the default."""

    def __init__(self, clients: Mapping[str, KubeClient]) -> None:
        if not clients:
            raise ValueError("a fleet has at least one cluster")
        self.clients = dict(clients)
        self.default = next(iter(self.clients))

    @property
    def named(self) -> bool:
        """Whether the clusters have names (a fleet), or this is the one unnamed cluster."""
        return self.default != ""

    @property
    def names(self) -> list[str]:
        return list(self.clients)

    def client(self, cluster: str = "") -> KubeClient:
        """The client of ``cluster`` ('': the default); an unknown name is refused."""
        return self.clients[self.resolve(cluster)]

    def resolve(self, cluster: str) -> str:
        """The name a request for ``cluster`` means: '' is the default; a name the fleet does
        not hold is refused with the names it does (``UnknownCluster``), never guessed."""
        if not cluster:
            return self.default
        if cluster not in self.clients:
            raise unknown(cluster, known=[n for n in self.clients if n])
        return cluster

    @classmethod
    @contextmanager
    def open(
        cls, chosen: Sequence[ClusterConfig], *, kubeconfig: str | None = None
    ) -> Iterator[Fleet]:
        """Clients for ``chosen`` (see ``configured``), closed when the block ends."""
        clients: dict[str, KubeClient] = {}
        try:
            for cluster in chosen:
                clients[cluster.name] = KubeClient(
                    kubeconfig=None if cluster.in_cluster else kubeconfig,
                    context=cluster.context,
                    # None: in a pod with no kubeconfig, the ServiceAccount (as kubectl)
                    in_cluster=True if cluster.in_cluster else None,
                )
            fleet = cls(clients)
            yield fleet
        finally:
            for kube in clients.values():
                kube.close()


def executors(
    clusters: Fleet, store: Store, *, scope: WriteScope | None = None, lock_wait: float = 10.0
) -> dict[str, Executor]:
    """One executor per cluster, by name: each writes, locks and records in its own cluster
    only; the default one also owns the records from before fleets (they name none)."""
    return {
        name: Executor(
            client,
            store,
            scope=scope,
            cluster=name,
            default=name == clusters.default,
            lock_wait=lock_wait,
        )
        for name, client in clusters.clients.items()
    }


def check_name(name: str) -> str:
    """A cluster name as cards, policies and rows carry it: a DNS label, like a namespace
    (policy globs match it the same way)."""
    if len(name) > 63 or not _NAME.fullmatch(name):
        raise errors.Invalid(
            f"{name!r} is not a usable cluster name: lower-case letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters (name the "
            "kubeconfig context so)",
            subject=name,
            details={"cluster": name},
        )
    return name


def unknown(cluster: str, *, known: Sequence[str]) -> errors.UnknownCluster:
    """The error for a cluster name this Stratus does not serve, with the ones it does."""
    served = ", ".join(known) if known else "one unnamed cluster"
    return errors.UnknownCluster(
        # Cut: the name may be anything someone typed or an alert carried.
        f"cluster {cluster[:64]!r} is not one this Stratus serves (it serves {served})",
        subject=cluster,
        details={"cluster": cluster, "known": list(known)},
    )
