"""Whether this Stratus is ready to take work, judged from named probe outcomes.

Pure: the probes (``operations.probes`` and the bot's Slack probe) act; this module only
decides. Ready means every required check answered and passed — a check that was never probed
fails, so a probe dropped by a bug or a timeout cannot make the process look ready by omission.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# What "ready" is made of (issue 19): the database takes writes, the policy files load, the
# cluster answers, Slack accepts the bot.
REQUIRED = ("database", "policies", "cluster", "slack")
NOT_PROBED = "not probed"
MAX_DETAIL = 300  # a reason is one line for a probe's log, not a traceback

# A probe's outcome: None when fine, the reason when not, or what it raised.
Outcome = str | BaseException | None


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str = ""


def _bounded(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_DETAIL else line[: MAX_DETAIL - 1] + "…"


def check_from(name: str, outcome: Outcome) -> Check:
    """The check a probe's outcome makes."""
    if outcome is None:
        return Check(name, ok=True)
    if isinstance(outcome, TimeoutError):
        return Check(name, ok=False, detail="no answer within the probe's time limit")
    if isinstance(outcome, BaseException):
        return Check(name, ok=False, detail=_bounded(f"{type(outcome).__name__}: {outcome}"))
    return Check(name, ok=False, detail=_bounded(outcome))


@dataclass(frozen=True)
class Readiness:
    checks: tuple[Check, ...]

    @property
    def ready(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def status(self) -> int:
        return 200 if self.ready else 503

    def failed(self) -> list[str]:
        return [check.name for check in self.checks if not check.ok]

    def body(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "checks": {c.name: {"ok": c.ok, "detail": c.detail} for c in self.checks},
        }


def judge(found: Iterable[Check]) -> Readiness:
    """Every required check in its fixed order (missing ones failed), then any others."""
    by_name = {check.name: check for check in found}
    required = [by_name.pop(name, Check(name, ok=False, detail=NOT_PROBED)) for name in REQUIRED]
    return Readiness((*required, *by_name.values()))
