"""Where Stratus may write: namespaces by glob, never kube-system or its own namespace unless
named explicitly."""

from __future__ import annotations

import os
from dataclasses import dataclass
from fnmatch import fnmatchcase

from tools.errors import OutOfScope
from tools.objects import ObjectRef

PROTECTED = ("kube-system",)


@dataclass(frozen=True)
class WriteScope:
    namespaces: tuple[str, ...] = ("*",)
    own_namespace: str = "stratus"
    nodes: bool = True

    @classmethod
    def from_env(cls) -> WriteScope:
        """``STRATUS_WRITE_NAMESPACES`` (comma-separated globs), ``STRATUS_NAMESPACE``,
        ``STRATUS_WRITE_NODES`` (true/false). Unset means the default; set but empty is a
        mistake (an unexpanded shell variable, say) and is refused, never read as "all"."""
        raw = os.environ.get("STRATUS_WRITE_NAMESPACES", "*")
        globs = tuple(p.strip() for p in raw.split(",") if p.strip())
        if not globs:
            raise OutOfScope(
                f"STRATUS_WRITE_NAMESPACES is set but empty ({raw!r}); name the namespaces "
                "Stratus may write (comma-separated globs, '*' for all) or unset it"
            )
        own = os.environ.get("STRATUS_NAMESPACE", "stratus").strip()
        if not own:
            raise OutOfScope(
                "STRATUS_NAMESPACE is set but empty; name the namespace Stratus runs in (it "
                "is protected from writes) or unset it for 'stratus'"
            )
        raw_nodes = os.environ.get("STRATUS_WRITE_NODES", "true").strip().lower()
        if raw_nodes not in ("1", "true", "yes", "0", "false", "no"):
            # A typo must not widen the scope: refuse rather than guess.
            raise OutOfScope(
                f"STRATUS_WRITE_NODES={os.environ.get('STRATUS_WRITE_NODES')!r}: expected true "
                "or false"
            )
        nodes = raw_nodes in ("1", "true", "yes")
        return cls(globs, own, nodes)

    def check(self, ref: ObjectRef) -> None:
        if not ref.namespace:
            if ref.kind == "Node" and self.nodes:
                return
            raise OutOfScope(
                f"{ref}: Stratus is not configured to write cluster-scoped objects"
                " (STRATUS_WRITE_NODES)"
            )
        namespace = ref.namespace
        if namespace in (*PROTECTED, self.own_namespace):
            if namespace in self.namespaces:  # only an exact name opens a protected namespace
                return
            raise OutOfScope(
                f"{ref}: namespace {namespace} is protected; name it explicitly in "
                "STRATUS_WRITE_NAMESPACES to allow writes there"
            )
        if not any(fnmatchcase(namespace, glob) for glob in self.namespaces):
            raise OutOfScope(
                f"{ref}: namespace {namespace} is outside the write scope "
                f"({', '.join(self.namespaces)})"
            )
