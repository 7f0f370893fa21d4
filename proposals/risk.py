"""Risk with its reason: the level a proposal is decided and shown at, and one line saying why.

The catalog rates each action (``tools.actions``, ``cls.risk``), and that level stays the
floor: what the plan does and what depends on its target may raise it, never lower it. A
plain level ("medium") told people nothing they could check; the reason names the effect
("scales to 0 a Deployment that service/recommendation routes to") so the level can be
judged by whoever approves it. An undo that puts back the cause the diagnosis found is high
whatever its floor, and says so (issue 18: an undo of a fix re-broke it, rated medium).

A pure function of facts read before (``proposals.core.routes_to``), so it is tested without a
cluster; the level it returns is what the policy sees (``ProposalFacts.risk``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools.actions import UNDO, Risk

LEVELS: tuple[Risk, ...] = ("low", "medium", "high")
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")
_SHOWN_PATHS = 2  # changed fields named in a reason; more are counted


@dataclass(frozen=True, kw_only=True)
class RiskFacts:
    """What the assessment looks at: the action and its catalog level, the object before and
    after the plan, the Services routing to the target's pods, and — for an undo — the
    diagnosed cause it would put back ("" when none)."""

    action: str
    floor: Risk
    kind: str
    name: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    reversible: bool = True
    routed_by: tuple[str, ...] = ()
    puts_back: str = ""


@dataclass(frozen=True)
class RiskAssessment:
    level: Risk
    reason: str

    def line(self) -> str:
        return f"{self.level}: {self.reason}"


def assess(facts: RiskFacts) -> RiskAssessment:
    """The level (never below ``facts.floor``) and why."""
    if facts.puts_back:
        return RiskAssessment("high", f"puts back the cause found: {facts.puts_back}")
    effect, raise_to = _effect(facts)
    if not facts.reversible:
        effect += ", and cannot be undone"
    return RiskAssessment(_max(facts.floor, raise_to), effect)


def level(value: str) -> Risk:
    """A stored or policy-facing level as a ``Risk`` (an unknown one counts as medium)."""
    for known in LEVELS:
        if value == known:
            return known
    return "medium"


def routed_by(services: list[dict[str, Any]], workload: dict[str, Any] | None) -> tuple[str, ...]:
    """The Services whose selector picks the workload's pods (by its pod template's labels)."""
    if not workload or workload.get("kind") not in WORKLOAD_KINDS:
        return ()
    template = ((workload.get("spec") or {}).get("template") or {}).get("metadata") or {}
    labels = template.get("labels") or {}
    found = []
    for service in services:
        selector = (service.get("spec") or {}).get("selector") or {}
        if selector and all(labels.get(k) == v for k, v in selector.items()):
            found.append(str((service.get("metadata") or {}).get("name", "")))
    return tuple(sorted(n for n in found if n))


# ------------------------------------------------------------------ helpers


def _effect(facts: RiskFacts) -> tuple[str, Risk]:
    """What the plan does, in words, and the level that effect alone deserves."""
    noun = f"{facts.kind.lower()}/{facts.name}"
    routes = _routes(facts.routed_by)
    if facts.after is None and facts.before is not None:
        return f"deletes {noun}{routes}", "low"
    if facts.before is None:
        return f"creates {noun}", "low"
    replicas = _replicas(facts.before), _replicas(facts.after)
    if None not in replicas and replicas[0] != replicas[1]:
        old, new = replicas
        assert old is not None and new is not None
        if new == 0:
            # Whatever routes to it has nothing left to route to.
            return f"scales to 0 a {facts.kind}{_that(facts.routed_by)}", (
                "medium" if facts.routed_by else "low"
            )
        way = "down" if new < old else "up"
        return f"scales {noun} {way} from {old} to {new} replicas{routes}", "low"
    if facts.action == "rollout-restart":
        return f"restarts every pod of {noun}{routes}", "low"
    changed = _changed_paths(facts.before, facts.after)
    what = ", ".join(changed[:_SHOWN_PATHS]) + (
        f" and {len(changed) - _SHOWN_PATHS} more" if len(changed) > _SHOWN_PATHS else ""
    )
    if facts.action == UNDO:
        undoing = f"puts {what} of {noun} back" if what else f"puts {noun} back"
        return f"{undoing} as before Stratus changed it{routes}", "low"
    return (f"changes {what} of {noun}" if what else f"changes {noun}") + routes, "low"


def _routes(services: tuple[str, ...]) -> str:
    return (
        f" ({_listed(services)} {'routes' if len(services) == 1 else 'route'} to it)"
        if (services)
        else ""
    )


def _that(services: tuple[str, ...]) -> str:
    if not services:
        return " that no Service routes to"
    return f" that {_listed(services)} {'routes' if len(services) == 1 else 'route'} to"


def _listed(services: tuple[str, ...]) -> str:
    return ", ".join(f"service/{s}" for s in services)


def _replicas(obj: dict[str, Any] | None) -> int | None:
    if not obj or obj.get("kind") not in WORKLOAD_KINDS:
        return None
    value = (obj.get("spec") or {}).get("replicas", 1)
    return value if isinstance(value, int) else None


def _changed_paths(before: Any, after: Any, path: str = "") -> list[str]:
    """The leaf fields that differ (metadata and status left out: the server sets them)."""
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            if not path and key in ("metadata", "status", "apiVersion", "kind"):
                continue
            inner = f"{path}.{key}" if path else str(key)
            found += _changed_paths(before.get(key), after.get(key), inner)
        return found
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        found = []
        for index, (one, other) in enumerate(zip(before, after, strict=True)):
            name = one.get("name") if isinstance(one, dict) else None
            found += _changed_paths(one, other, f"{path}[{name or index}]")
        return found
    return [] if before == after else [path or "the object"]


def _max(one: Risk, other: Risk) -> Risk:
    return max(one, other, key=LEVELS.index)
