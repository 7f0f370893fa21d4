"""The approval-policy schema (``apiVersion: stratus/v1``, ``kind: ApprovalPolicy``).

Pydantic models with every key checked: unknown keys, wrong types, unknown action names, bad
globs, bad durations and impossible combinations are errors, so a typo can never turn into a
silently permissive policy. So is a rule that can never match (a window that is never open, a
glob or label no Kubernetes object can have): a deny rule that never applies is as dangerous
as a permissive one. ``schema()`` exports the JSON Schema for editors.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tools.actions import CATALOG, POLICY_ACTIONS

API_VERSION = "stratus/v1"
Decision = Literal["deny", "ask", "allow"]
RiskLevel = Literal["low", "medium", "high"]
Day = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
ALL_DAYS: tuple[Day, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAYS = ALL_DAYS
_DURATION = re.compile(r"^([0-9]+)(s|m|h|d)$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# No policy duration needs more than a year, and a bound keeps every ``now + duration`` far
# from datetime's limits (year 9999), so no arithmetic on a policy value can overflow.
MAX_DURATION_SECONDS = 366 * 86400
# Slack users (U…/W…), user groups (S…), @handles, '*', and terminal users (cli:NAME).
_APPROVER = re.compile(r"^(\*|[UWS][A-Z0-9]{2,}|@[-a-z0-9._]+|cli:[A-Za-z0-9][-A-Za-z0-9._]*)$")


def parse_duration(text: str) -> int:
    """``30m``, ``8h``, ``7d`` → seconds."""
    match = _DURATION.fullmatch(text.strip())
    if not match or int(match[1]) == 0:
        raise ValueError(f"expected a duration such as 30m, 8h or 7d, got {text!r}")
    # Digits beyond what a year needs are refused before the multiplication.
    if len(match[1]) > 9 or int(match[1]) * _UNITS[match[2]] > MAX_DURATION_SECONDS:
        raise ValueError(f"{text!r} is longer than the longest duration a policy may set, 366d")
    return int(match[1]) * _UNITS[match[2]]


# What a Kubernetes object or namespace name may contain (DNS-1123). A glob may add only what
# fnmatch gives a meaning to; anything else (a space, an upper-case letter, regex syntax such as
# ``^``, ``+``, ``(…|…)``, ``\d``, ``{a,b}``) can never match a name, and a rule written with it
# would silently never apply.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")
_GLOB_HINT = (
    "names hold a-z, 0-9, '-' and '.'; a pattern adds '*', '?' and classes such as [0-9] or [!a]"
)
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_CLOCK = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]|24:00")
# Who asks: a Slack user (U…/W…), a terminal (cli:NAME), Stratus's own planner (agent:…,
# stratus…) or an MCP client (mcp:NAME); a pattern adds fnmatch's '*', '?' and classes.
_REQUESTER = re.compile(r"^[A-Za-z0-9*?\[\]!][-A-Za-z0-9._:*?\[\]!@]*$")


def check_requester(pattern: str) -> str:
    """A requester glob such as ``mcp:*`` or ``cli:alice``."""
    if not _REQUESTER.fullmatch(pattern):
        raise ValueError(
            f"requester pattern {pattern!r} can never match a requester (mcp:NAME, cli:NAME, "
            "a Slack user ID, agent:…; '*', '?' and classes such as [ab] are patterns)"
        )
    return pattern


def check_glob(pattern: str) -> str:
    """A namespace or name glob that can match some Kubernetes name."""
    if not pattern:
        raise ValueError("an empty pattern matches nothing; use '*' for everything")
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "[":
            index = _class_end(pattern, index)
        elif char not in _NAME_CHARS and char not in "*?":
            raise ValueError(
                f"pattern {pattern!r} can never match a Kubernetes name: {char!r} is not "
                f"allowed ({_GLOB_HINT})"
            )
        index += 1
    return pattern


def _class_end(pattern: str, start: int) -> int:
    """The index of the ``]`` closing the class opened at ``start``, after checking that the
    class holds name characters and ranges only (fnmatch reads ``[^a]`` as a literal caret)."""
    end = pattern.find("]", start + 1)
    if end == -1:
        raise ValueError(f"unbalanced '[' in pattern {pattern!r}")
    body = pattern[start + 1 : end].removeprefix("!")
    if not body:
        raise ValueError(f"empty character class in pattern {pattern!r}; it matches nothing")
    for position, char in enumerate(body):
        if char not in _NAME_CHARS:
            raise ValueError(
                f"pattern {pattern!r}: {char!r} is not allowed in a class ({_GLOB_HINT})"
            )
        if char == "-" and 0 < position < len(body) - 1 and body[position - 1] > body[position + 1]:
            low, high = body[position - 1], body[position + 1]
            raise ValueError(f"pattern {pattern!r}: the range {low}-{high} is empty")
    return end


def check_label_key(key: str) -> str:
    """A Kubernetes label key: an optional DNS-subdomain prefix and a name of 63 characters."""
    prefix, slash, name = key.rpartition("/")
    good_prefix = not slash or (len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix))
    if not good_prefix or not _LABEL_NAME.fullmatch(name):
        raise ValueError(
            f"label key {key!r} is not a Kubernetes label key (an optional lower-case DNS prefix "
            "and '/', then up to 63 letters, digits, '-', '_' or '.', starting and ending "
            "alphanumeric), so no object can carry it"
        )
    return key


def check_label_value(value: str) -> str:
    """A Kubernetes label value: empty, or a name of 63 characters."""
    if value and not _LABEL_NAME.fullmatch(value):
        raise ValueError(
            f"label value {value!r} is not a Kubernetes label value (empty, or up to 63 "
            "letters, digits, '-', '_' or '.', starting and ending alphanumeric), so no object "
            "can carry it"
        )
    return value


# What the shipped default policy names as its approvers (manifests/policies/default): a
# deployment whose installer did not name theirs must not let anyone approve anything.
APPROVERS_PLACEHOLDER = "SET-ME-approver-group"


def check_approvers(values: list[str]) -> list[str]:
    if APPROVERS_PLACEHOLDER in values:
        raise ValueError(
            f"{APPROVERS_PLACEHOLDER} is the shipped policy's placeholder: replace it with the "
            "Slack user-group ID (S…) of the people who may approve (docs/deploy.md, 'The "
            "approvers'); until then this policy does not load and Stratus allows nothing"
        )
    if not values:
        raise ValueError(
            "an empty approver list lets nobody approve; name approvers or leave "
            "the key out to use the defaults"
        )
    bad = [v for v in values if not _APPROVER.fullmatch(v)]
    if bad:
        raise ValueError(
            "approvers are Slack user IDs (U…/W…), user-group IDs (S…), @handles, "
            f"cli:NAME terminal users or '*'; got {', '.join(bad)}"
        )
    return values


Glob = Annotated[str, AfterValidator(check_glob)]
RequesterGlob = Annotated[str, AfterValidator(check_requester)]
LabelKey = Annotated[str, AfterValidator(check_label_key)]
LabelValue = Annotated[str, AfterValidator(check_label_value)]


class _Strict(BaseModel):
    """Unknown keys are refused. Number and boolean fields also say ``strict=True`` each:
    pydantic would otherwise read ``min_approvals: true`` as 1 and ``"2"`` as 2, so a rule
    would enforce something other than what its reviewer read."""

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
        # contains() compares "HH:MM" strings; "9:00", "0900" or "09:00:30" would compare wrong.
        if not _CLOCK.fullmatch(value):
            raise ValueError(f"expected HH:MM (00:00 to 24:00), got {value!r}")
        return value

    @field_validator("days")
    @classmethod
    def _some_days(cls, values: list[Day]) -> list[Day]:
        if not values:
            raise ValueError("an empty day list matches no day; leave days out for every day")
        return values

    @model_validator(mode="after")
    def _ever_open(self) -> Window:
        if self.start == "24:00":
            raise ValueError("start 24:00 is the end of a day; start the window at 00:00")
        if self.start == self.end:
            raise ValueError(
                f"the window starts and ends at {self.start}, so it is never open; for the "
                "whole day use start 00:00 and end 24:00"
            )
        return self

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    def contains(self, moment: datetime) -> bool:
        """Whether ``moment`` (the clock is passed in) falls inside the window. A window across
        midnight (``start`` after ``end``) belongs to the day it opened: ``{days: [fri],
        start: 22:00, end: 06:00}`` covers Friday 22:00 to Saturday 06:00, and Friday's early
        hours belong to Thursday's window."""
        local = moment.astimezone(ZoneInfo(self.timezone))
        clock = local.strftime("%H:%M")
        today, yesterday = DAYS[local.weekday()], DAYS[(local.weekday() - 1) % 7]
        if self.start <= self.end:
            return today in self.days and self.start <= clock < self.end
        if clock >= self.start:
            return today in self.days
        return clock < self.end and yesterday in self.days


# For editors: a match list, when given, names something (an empty one is refused on load).
_SOME: dict[str, Any] = {"minItems": 1}


class Match(_Strict):
    """Every key is optional: a missing key matches any value, and an empty list is refused
    (it reads as "none" but would match any)."""

    actions: list[str] = Field(
        default_factory=list, description="catalog names; leave out: any", json_schema_extra=_SOME
    )
    namespaces: list[Glob] = Field(
        default_factory=list, description="globs; leave out: any", json_schema_extra=_SOME
    )
    # Cluster names of a fleet (docs/fleet.md), globs like namespaces; a cluster name is a
    # kubeconfig context name, checked the same way as a namespace.
    clusters: list[Glob] = Field(
        default_factory=list,
        description="cluster-name globs (docs/fleet.md); leave out: any",
        json_schema_extra=_SOME,
    )
    kinds: list[str] = Field(
        default_factory=list, description="leave out: any", json_schema_extra=_SOME
    )
    names: list[Glob] = Field(
        default_factory=list, description="globs; leave out: any", json_schema_extra=_SOME
    )
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        description="all must be on the target; leave out: any",
        json_schema_extra={"minProperties": 1},
    )
    risk: list[RiskLevel] = Field(
        default_factory=list, description="leave out: any", json_schema_extra=_SOME
    )
    reversible: bool | None = Field(default=None, strict=True)
    managed_by: list[Literal["argocd", "flux"]] = Field(
        default_factory=list,
        description="objects a GitOps controller owns; leave out: any",
        json_schema_extra=_SOME,
    )
    # Who asked (docs/mcp.md): ``mcp:*`` is every MCP client, ``cli:*`` every terminal.
    requesters: list[RequesterGlob] = Field(
        default_factory=list,
        description="requester globs (mcp:NAME, cli:NAME, Slack user IDs); leave out: any",
        json_schema_extra=_SOME,
    )
    window: Window | None = None

    @field_validator(
        "actions",
        "namespaces",
        "clusters",
        "kinds",
        "names",
        "risk",
        "managed_by",
        "labels",
        "requesters",
    )
    @classmethod
    def _not_empty(cls, values: Any, info: ValidationInfo) -> Any:
        # Runs only for keys that are present: a missing key is "any", an empty one an error.
        if not values:
            empty = "{}" if info.field_name == "labels" else "[]"
            raise ValueError(
                f"{empty} would match anything, not nothing; "
                "leave the key out to match anything, or list what it should match"
            )
        return values

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
    # Where the rule does not apply, inside what ``match`` matches: "deny everything from
    # agents unless it is a restart or a scale in staging" (policies have no negated globs).
    unless: Match | None = Field(
        default=None, description="the rule does not apply where this matches"
    )
    decision: Decision
    remember: bool = Field(
        default=False, strict=True, description="ask: may a human answer Always allow"
    )
    max_grant: str | None = Field(default=None, description="ask+remember: longest grant")
    approvers: list[str] | None = None
    min_approvals: int | None = Field(default=None, ge=1, le=10, strict=True)
    self_approval: bool | None = Field(default=None, strict=True)
    allow_irreversible: bool = Field(
        default=False, strict=True, description="allow: also auto-allow irreversible actions"
    )
    approve_plan: bool = Field(
        default=False,
        strict=True,
        description="ask: may one approval of an attempt's whole plan stand for this step",
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
        if self.unless is not None and self.unless == Match():
            raise ValueError(
                "unless: {} matches anything, so the rule would never apply; leave unless out, "
                "or say where the rule does not apply"
            )
        if self.decision != "ask" and (self.remember or self.max_grant):
            raise ValueError("remember and max_grant only apply to decision: ask")
        if self.remember and not self.max_grant:
            raise ValueError("remember: true needs max_grant, the longest a grant may live")
        if self.decision != "allow" and self.allow_irreversible:
            raise ValueError("allow_irreversible only applies to decision: allow")
        if self.decision != "ask" and self.approve_plan:
            # An allow runs without anyone and a deny never runs: neither has an answer that
            # a plan approval could give in advance.
            raise ValueError("approve_plan only applies to decision: ask")
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
    min_approvals: int = Field(default=1, ge=1, le=10, strict=True)
    self_approval: bool = Field(default=True, strict=True)
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
