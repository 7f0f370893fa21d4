"""Remedies: from a finding to candidate actions from the catalog.

Each module in this package exports ``REMEDIES``, a dict from a finding's ``mechanism`` to a
function ``(Finding, Snapshot) -> list[Candidate]``; ``remedies_for`` looks one up. A remedy
proposes only catalog actions and says why each candidate ranks where it does: the least
risky and most reversible first (roll back the change that broke it before restarting things).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

from agents.model import Candidate, Finding
from agents.snapshot import Snapshot

Remedy = Callable[[Finding, Snapshot], list[Candidate]]


def all_remedies() -> dict[str, Remedy]:
    found: dict[str, Remedy] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for mechanism, remedy in getattr(module, "REMEDIES", {}).items():
            if mechanism in found:
                raise RuntimeError(f"two remedies for mechanism {mechanism!r}")
            found[mechanism] = remedy
    return found


def remedies_for(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    remedy = all_remedies().get(finding.mechanism)
    return remedy(finding, snapshot) if remedy else []
