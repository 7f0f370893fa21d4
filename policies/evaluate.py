"""Policy evaluation: a pure function of the proposal, the rules and the active grants.

The stricter outcome always wins: deny > always-ask > grant > ask > allow; with no matching
rule the answer is ask. An irreversible action is never auto-allowed unless the allowing rule
says ``allow_irreversible: true``. Every decision carries its provenance (the rule or grant
that decided) and one line a person understands.

The facts are built from the action catalog, not from whoever proposes the action: a planner
(or an LLM) cannot declare its own action low-risk or reversible.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from policies.loader import Policy, SourcedRule
from policies.model import Rule, parse_duration
from tools.actions import CATALOG, POLICY_ACTIONS, UNDO, Action

DecisionOutcome = Literal["deny", "ask", "allow"]


@dataclass(frozen=True, kw_only=True)
class ProposalFacts:
    """What policy may look at: who asks for which action on what."""

    action: str
    namespace: str
    kind: str
    name: str
    risk: str
    reversible: bool
    requester: str
    labels: tuple[tuple[str, str], ...] = ()
    managed_by: str = ""  # the GitOps controller that owns the object (argocd, flux), if any

    @property
    def resource(self) -> str:
        return f"{self.kind}/{self.name}"


def facts_for(
    action: Action,
    *,
    requester: str,
    labels: dict[str, str] | None = None,
    managed_by: str = "",
) -> ProposalFacts:
    """Facts from the catalog's own metadata for this action class."""
    cls = CATALOG[action.name]
    ref = action.ref()
    return ProposalFacts(
        action=action.name,
        namespace=ref.namespace,
        kind=ref.kind,
        name=ref.name,
        risk=cls.risk,
        reversible=cls.reversible,
        requester=requester,
        labels=tuple(sorted((labels or {}).items())),
        managed_by=managed_by,
    )


def undo_facts(
    *,
    original_action: str,
    kind: str,
    namespace: str,
    name: str,
    requester: str,
    labels: dict[str, str] | None = None,
) -> ProposalFacts:
    """Facts of undoing an earlier write: the action is ``undo``, its risk that of the write
    it reverses, and it is itself reversible (the write can be proposed again)."""
    return ProposalFacts(
        action=UNDO,
        namespace=namespace,
        kind=kind,
        name=name,
        risk=CATALOG[original_action].risk if original_action in CATALOG else "medium",
        reversible=True,
        requester=requester,
        labels=tuple(sorted((labels or {}).items())),
    )


@dataclass(frozen=True, kw_only=True)
class Grant:
    """An "Always allow" answer: one action on one resource in one namespace, until expiry.

    A grant only counts while a current rule still lets this proposal be remembered, and
    never longer than that rule's ``max_grant`` from the grant's creation: cutting
    ``max_grant`` or removing the rule takes effect at once."""

    id: str
    action: str
    namespace: str
    resource: str
    created_by: str
    expires_at: datetime
    rule: str = ""
    revoked_at: datetime | None = None
    created_at: datetime | None = None

    def matches(self, facts: ProposalFacts, now: datetime) -> bool:
        return (
            self.revoked_at is None
            and now < self.expires_at
            and (self.action, self.namespace, self.resource)
            == (facts.action, facts.namespace, facts.resource)
        )


class GrantIndex:
    """Grants keyed by their scope: finding the grant for a proposal is one lookup."""

    def __init__(self, grants: Iterable[Grant]) -> None:
        self._by_scope: dict[tuple[str, str, str], list[Grant]] = {}
        for grant in grants:
            scope = (grant.action, grant.namespace, grant.resource)
            self._by_scope.setdefault(scope, []).append(grant)

    def find(self, facts: ProposalFacts, now: datetime) -> Grant | None:
        candidates = self._by_scope.get((facts.action, facts.namespace, facts.resource), ())
        return next((g for g in candidates if g.matches(facts, now)), None)


@dataclass(frozen=True, kw_only=True)
class PolicyDecision:
    outcome: DecisionOutcome
    reason: str
    source: str  # "rule", "grant" or "default"
    rule: str | None = None
    grant: str | None = None
    remember: bool = False
    max_grant_seconds: int = 0
    approvers: tuple[str, ...] = ()
    min_approvals: int = 1
    self_approval: bool = True
    approval_timeout_seconds: int = 1800

    @property
    def always_ask(self) -> bool:
        return self.outcome == "ask" and not self.remember

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass
class _CompiledRule:
    sourced: SourcedRule
    namespaces: re.Pattern[str] | None
    names: re.Pattern[str] | None
    order: int

    @property
    def rule(self) -> Rule:
        return self.sourced.rule

    def matches(self, facts: ProposalFacts, now: datetime) -> bool:
        match = self.rule.match
        if self.namespaces is not None and not self.namespaces.match(facts.namespace):
            return False
        if self.names is not None and not self.names.match(facts.name):
            return False
        if match.kinds and facts.kind not in match.kinds:
            return False
        if match.risk and facts.risk not in match.risk:
            return False
        if match.reversible is not None and match.reversible != facts.reversible:
            return False
        if match.managed_by and facts.managed_by not in match.managed_by:
            return False
        if match.labels:
            labels = dict(facts.labels)
            if any(labels.get(k) != v for k, v in match.labels.items()):
                return False
        return match.window is None or match.window.contains(now)


def _globs(patterns: list[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


@dataclass
class CompiledPolicy:
    """Rules indexed by action, so evaluation stays fast with thousands of rules."""

    policy: Policy
    by_action: dict[str, list[_CompiledRule]] = field(default_factory=dict)
    approval_timeout_seconds: int = 1800

    @classmethod
    def build(cls, policy: Policy) -> CompiledPolicy:
        compiled = cls(
            policy, approval_timeout_seconds=parse_duration(policy.defaults.approval_timeout)
        )
        any_action: list[_CompiledRule] = []
        for order, sourced in enumerate(policy.rules):
            entry = _CompiledRule(
                sourced,
                _globs(sourced.rule.match.namespaces),
                _globs(sourced.rule.match.names),
                order,
            )
            targets: list[str | None] = list(sourced.rule.match.actions) or [None]
            for action in targets:
                if action is None:
                    any_action.append(entry)
                else:
                    compiled.by_action.setdefault(action, []).append(entry)
        for action in POLICY_ACTIONS:
            rules = compiled.by_action.get(action, []) + any_action
            compiled.by_action[action] = sorted(rules, key=lambda r: r.order)
        return compiled

    def matching(self, facts: ProposalFacts, now: datetime) -> list[Rule]:
        return [r.rule for r in self.by_action.get(facts.action, []) if r.matches(facts, now)]


def _who(approvers: Iterable[str]) -> str:
    names = list(approvers)
    return "anyone" if "*" in names else ", ".join(names)


def _usable_grant(grant: Grant | None, remembering: list[Rule], now: datetime) -> Grant | None:
    """The grant, if a rule in force today still permits remembering it, within today's
    ``max_grant`` counted from when it was made."""
    if grant is None or not remembering:
        return None
    longest = max(rule.max_grant_seconds for rule in remembering)
    if grant.created_at is not None and now >= grant.created_at + timedelta(seconds=longest):
        return None
    return grant


def evaluate(
    facts: ProposalFacts,
    policy: CompiledPolicy,
    grants: GrantIndex | Iterable[Grant],
    now: datetime,
) -> PolicyDecision:
    """The decision for one proposal. Pass a GrantIndex when there are many grants."""
    defaults = policy.policy.defaults
    timeout = policy.approval_timeout_seconds
    matched = policy.matching(facts, now)

    def ask(rule: Rule | None, reason_prefix: str) -> PolicyDecision:
        approvers = tuple(rule.approvers if rule and rule.approvers else defaults.approvers)
        count = rule.min_approvals if rule and rule.min_approvals else defaults.min_approvals
        own = (
            rule.self_approval
            if rule and rule.self_approval is not None
            else defaults.self_approval
        )
        plural = "approval" if count == 1 else "approvals"
        who = _who(approvers)
        reason = f"{reason_prefix} requires {count} {plural} from {who}"
        if not own:
            reason += " (not the requester)"
        return PolicyDecision(
            outcome="ask",
            reason=reason,
            source="rule" if rule else "default",
            rule=rule.name if rule else None,
            remember=bool(rule and rule.remember),
            max_grant_seconds=rule.max_grant_seconds if rule else 0,
            approvers=approvers,
            min_approvals=count,
            self_approval=own,
            approval_timeout_seconds=timeout,
        )

    deny = next((r for r in matched if r.decision == "deny"), None)
    if deny is not None:
        why = f": {deny.description}" if deny.description else ""
        return PolicyDecision(
            outcome="deny",
            reason=f"denied: rule {deny.name}{why}",
            source="rule",
            rule=deny.name,
            approval_timeout_seconds=timeout,
        )
    asks = [r for r in matched if r.decision == "ask"]
    always = [r for r in asks if not r.remember]
    if always:
        strictest = max(always, key=lambda r: r.min_approvals or defaults.min_approvals)
        return ask(strictest, f"always asks: rule {strictest.name}")
    index = grants if isinstance(grants, GrantIndex) else GrantIndex(grants)
    grant = _usable_grant(index.find(facts, now), [r for r in asks if r.remember], now)
    if grant is not None:
        return PolicyDecision(
            outcome="allow",
            reason=f"allowed: grant {grant.id} by {grant.created_by} until "
            f"{grant.expires_at:%Y-%m-%d %H:%M} UTC",
            source="grant",
            grant=grant.id,
            rule=grant.rule or None,
            approval_timeout_seconds=timeout,
        )
    if asks:
        strictest = max(asks, key=lambda r: r.min_approvals or defaults.min_approvals)
        return ask(strictest, f"asks: rule {strictest.name}")
    allow = next((r for r in matched if r.decision == "allow"), None)
    if allow is not None:
        if not facts.reversible and not allow.allow_irreversible:
            return ask(
                None,
                f"asks: rule {allow.name} allows it, but {facts.action} cannot be "
                "undone and the rule does not say allow_irreversible; the default",
            )
        return PolicyDecision(
            outcome="allow",
            reason=f"allowed: rule {allow.name}",
            source="rule",
            rule=allow.name,
            approval_timeout_seconds=timeout,
        )
    return ask(None, "asks: no rule matches; the default")
