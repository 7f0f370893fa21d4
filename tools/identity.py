"""Whom a write is sent as: a Kubernetes user and groups the API server impersonates.

With impersonation configured, an approved write carries ``Impersonate-User`` and one
``Impersonate-Group`` per group, so the cluster's own RBAC decides it for the person who
approved it and the cluster's audit log names them. ``None`` where an identity is expected
means Stratus's own credentials (its ServiceAccount or kubeconfig user).
"""

from __future__ import annotations

from dataclasses import dataclass

IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_GROUP = "Impersonate-Group"


@dataclass(frozen=True)
class KubeIdentity:
    user: str
    groups: tuple[str, ...] = ()

    def headers(self) -> list[tuple[str, str]]:
        """The request headers, in order; the group header repeats, one per group (the API
        server reads every occurrence, and a comma in one value would be one group)."""
        return [(IMPERSONATE_USER, self.user)] + [(IMPERSONATE_GROUP, g) for g in self.groups]

    def __str__(self) -> str:
        return self.user + (f" (groups {', '.join(self.groups)})" if self.groups else "")
