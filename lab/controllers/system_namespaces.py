"""The API server's system-namespaces controller: ``default``, ``kube-system``,
``kube-public`` and ``kube-node-lease`` always exist. The first three may not be deleted at
all (``lab.cluster.namespace_deletion.IMMORTAL``); ``kube-node-lease`` may, and comes back
(a real server recreates it within a minute; the lab on its next reconcile)."""

from __future__ import annotations

from lab.cluster.resources import by_kind
from lab.controllers.context import ControllerContext

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class SystemNamespaces:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        for name in SYSTEM_NAMESPACES:
            if self.ctx.store.get("namespaces", "", name) is None:
                self.ctx.api.create(by_kind("Namespace"), "", {"metadata": {"name": name}})
