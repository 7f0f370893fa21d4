"""Rule-based analyzers: pure functions from a ``Snapshot`` to ``Finding``s.

Each module in this package exports ``ANALYZERS``, a list of functions
``(Snapshot) -> list[Finding]``; ``all_analyzers()`` collects them, so adding a mechanism is
adding a module. Analyzers look for *causes* by mechanism (an OOM kill, a targetPort nothing
listens on), never by a scenario's names or values.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from agents.model import Finding
from agents.snapshot import Snapshot

Analyzer = Callable[[Snapshot], list[Finding]]


def all_analyzers() -> list[Analyzer]:
    found: list[Analyzer] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.extend(getattr(module, "ANALYZERS", []))
    return found


def analyze(snapshot: Snapshot) -> list[Finding]:
    """Every analyzer's findings, in a stable order."""
    findings: list[Finding] = []
    for analyzer in all_analyzers():
        findings.extend(analyzer(snapshot))
    return sorted(
        findings, key=lambda f: (-f.severity, -f.confidence, f.mechanism, str(f.resource))
    )
