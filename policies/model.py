"""The approval-policy schema (``apiVersion: stratus/v1``, ``kind: ApprovalPolicy``).

Pydantic models with every key checked: unknown keys, wrong types, unknown action names, bad
globs, bad durations and impossible combinations are errors, so a typo can never turn into a
silently permissive policy. ``schema()`` exports the JSON Schema for editors.
"""

from __future__ import annotations

import re
from datetime import datetime, time
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tools.actions import CATALOG, POLICY_ACTIONS

API_VERSION = "stratus/v1"
Decision = Literal["deny", "ask", "allow"]
RiskLevel = Literal["low", "medium", "high"]
Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
ALL_DAYS: tuple[Day, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAYS = ALL_DAYS
_DURATION = re.compile(r"^(\d+)(s|m|h|d)$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# Slack users (U…/W…), user groups (S…), @handles, '*', and terminal users (cli:NAME).
_APPROVER = re.compile(r"^(\*|[UWS][A-Z0-9]{2,}|@[-a-z0-9._]+|cli:[A-Za-z0-9][-A-Za-z0-9._]*)$")


def parse_duration(text: str) -> int:
    """``30m``, ``8h``, ``7d`` → seconds."""
    match = _DURATION.match(text.strip())
    if not match or int(match[1]) == 0:
        raise ValueError(f"expected a duration such as 30m, 8h or 7d, got {text!r}")
    return int(match[1]) * _UNITS[match[2]]


def check_glob(pattern: str) -> str:
    if not pattern:
        raise ValueError("an empty pattern matches nothing; use '*' for everything")
    depth = 0
    for char in pattern:
        if char == "[":
            depth += 1
        elif char == "]" and depth:
            depth -= 1
    if depth:
        raise ValueError(f"unbalanced '[' in pattern {pattern!r}")
    return pattern


def check_approvers(values: list[str]) -> list[str]:
    if not values:
        raise ValueError(
            "an empty approver list lets nobody approve; name approvers or leave "
            "the key out to use the defaults"
        )
    bad = [v for v in values if not _APPROVER.match(v)]
    if bad:
        raise ValueError(
            "approvers are Slack user IDs (U…/W…), user-group IDs (S…), @handles, "
            f"cli:NAME terminal users or '*'; got {', '.join(bad)}"
        )
    return values


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Window(_Strict):
    """A time window (for example a change freeze); the rule matches only inside it."""

    days: list[Day] = Field(default_factory=lambda: list(ALL_DAYS))
    start: str = "00:00"
    end: str = "24:00"
    timezone: str = "UTC"

    @field_validator("start", "end")
    @classmethod
    def _clock(cls, value: str) -> str:
        if value != "24:00":
            try:
                time.fromisoformat(value)
            except ValueError as exc:
                raise ValueError(f"expected HH:MM, got {value!r}") from exc
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    def contains(self, moment: datetime) -> bool:
        local = moment.astimezone(ZoneInfo(self.timezone))
        if DAYS[local.weekday()] not in self.days:
            return False
        clock = local.strftime("%H:%M")
        if self.start <= self.end:
            return self.start <= clock < self.end
        return clock >= self.start or clock < self.end  # a window across midnight


class Match(_Strict):
    actions: list[str] = Field(default_factory=list, description="catalog names; empty: any")
    namespaces: list[str] = Field(default_factory=list, description="globs; empty: any")
    kinds: list[str] = Field(default_factory=list)
    names: list[str] = Field(default_factory=list, description="globs")
    labels: dict[str, str] = Field(default_factory=dict, description="all must be on the target")
    risk: list[RiskLevel] = Field(default_factory=list)
    reversible: bool | None = None
    window: Window | None = None

    @field_validator("actions")
    @classmethod
    def _known_actions(cls, values: list[str]) -> list[str]:
        unknown = [v for v in values if v not in POLICY_ACTIONS]
        if unknown:
            raise ValueError(
                f"unknown action(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(POLICY_ACTIONS))}"
            )
        return values

    @field_validator("namespaces", "names")
    @classmethod
    def _globs(cls, values: list[str]) -> list[str]:
        return [check_glob(v) for v in values]

    @field_validator("kinds")
    @classmethod
    def _kinds(cls, values: list[str]) -> list[str]:
        known = {kind for action in CATALOG.values() for kind in action.kinds}
        unknown = [v for v in values if v not in known]
        if unknown:
            raise ValueError(
                f"unknown kind(s) {', '.join(unknown)}; Stratus writes {', '.join(sorted(known))}"
            )
        return values


class Rule(_Strict):
    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    description: str = ""
    match: Match = Field(default_factory=Match)
    decision: Decision
    remember: bool = Field(default=False, description="ask: may a human answer Always allow")
    max_grant: str | None = Field(default=None, description="ask+remember: longest grant")
    approvers: list[str] | None = None
    min_approvals: int | None = Field(default=None, ge=1, le=10)
    self_approval: bool | None = None
    allow_irreversible: bool = Field(
        default=False, description="allow: also auto-allow irreversible actions"
    )

    @field_validator("approvers")
    @classmethod
    def _approvers(cls, values: list[str] | None) -> list[str] | None:
        return None if values is None else check_approvers(values)

    @field_validator("max_grant")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @model_validator(mode="after")
    def _coherent(self) -> Rule:
        if self.decision != "ask" and (self.remember or self.max_grant):
            raise ValueError("remember and max_grant only apply to decision: ask")
        if self.remember and not self.max_grant:
            raise ValueError("remember: true needs max_grant, the longest a grant may live")
        if self.decision != "allow" and self.allow_irreversible:
            raise ValueError("allow_irreversible only applies to decision: allow")
        if self.decision != "ask" and (
            self.approvers or self.min_approvals or self.self_approval is not None
        ):
            raise ValueError(
                "approvers, min_approvals and self_approval only apply to decision: ask"
            )
        return self

    @property
    def max_grant_seconds(self) -> int:
        return parse_duration(self.max_grant) if self.max_grant else 0


class Defaults(_Strict):
    approvers: list[str] = Field(default_factory=lambda: ["*"])
    min_approvals: int = Field(default=1, ge=1, le=10)
    self_approval: bool = True
    approval_timeout: str = "30m"

    @field_validator("approval_timeout")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value

    @field_validator("approvers")
    @classmethod
    def _approvers(cls, values: list[str]) -> list[str]:
        return check_approvers(values)


class Metadata(_Strict):
    name: str = Field(min_length=1)


class PolicyFile(_Strict):
    apiVersion: Literal["stratus/v1"]  # noqa: N815 - the YAML key
    kind: Literal["ApprovalPolicy"]
    metadata: Metadata
    defaults: Defaults | None = None
    rules: list[Rule] = Field(default_factory=list)


def schema() -> dict[str, Any]:
    """The JSON Schema of a policy file, for editors."""
    return PolicyFile.model_json_schema()
