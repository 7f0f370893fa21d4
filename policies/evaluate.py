"""Policy evaluation: a pure function of the proposal, the rules and the active grants.

The stricter outcome always wins: deny > always-ask > grant > ask > allow; with no matching
rule the answer is ask. An irreversible action is never auto-allowed unless the allowing rule
says ``allow_irreversible: true``. Every decision carries its provenance (the rule or grant
that decided) and one line a person understands.

The facts are built from the action catalog, not from whoever proposes the action: a planner
(or an LLM) cannot declare its own action low-risk or reversible.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from policies.approvers import ApproverLists, conjunction, describe, is_person, satisfies
from policies.clients import PREFIX as MCP_PREFIX
from policies.loader import Policy, SourcedRule
from policies.model import Defaults, Match, Rule, parse_duration
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
    # It puts back the cause a diagnosis found (an undo of the write that fixed it): no grant
    # ever covers it and "Always allow" is never offered for it (issue 18, F1).
    puts_back: bool = False
    # The fleet's cluster it is written to ('': the only, unnamed cluster).
    cluster: str = ""

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

    A grant only counts while the rules matching today would have let its creator create it
    today (see ``evaluate``): tightening a rule, adding a stricter one or removing the rule
    takes effect at once."""

    id: str
    action: str
    namespace: str
    resource: str
    created_by: str
    expires_at: datetime
    rule: str = ""
    revoked_at: datetime | None = None
    created_at: datetime | None = None
    # What today's rules are checked against: the creator's user groups when they answered,
    # and who had asked for the change they answered (None: not recorded, an older grant).
    creator_groups: tuple[str, ...] = ()
    requested_by: str | None = None
    # The fleet's cluster it was given in ('': the only one): "Always allow" in one cluster
    # never allows the same change in another.
    cluster: str = ""

    def matches(self, facts: ProposalFacts, now: datetime) -> bool:
        return (
            self.revoked_at is None
            and now < self.expires_at
            and (self.action, self.namespace, self.resource, self.cluster)
            == (facts.action, facts.namespace, facts.resource, facts.cluster)
        )


class GrantIndex:
    """Grants keyed by their scope: finding the grant for a proposal is one lookup."""

    def __init__(self, grants: Iterable[Grant]) -> None:
        self._by_scope: dict[tuple[str, str, str], list[Grant]] = {}
        for grant in grants:
            scope = (grant.action, grant.namespace, grant.resource)
            self._by_scope.setdefault(scope, []).append(grant)

    def matching(self, facts: ProposalFacts, now: datetime) -> list[Grant]:
        candidates = self._by_scope.get((facts.action, facts.namespace, facts.resource), ())
        return [g for g in candidates if g.matches(facts, now)]


@dataclass(frozen=True, kw_only=True)
class PolicyDecision:
    """What the policy decided, and every constraint on who may answer.

    ``approvers`` is a conjunction (``policies.approvers``): an approver satisfies every list.
    ``rules`` names every rule that contributed, sorted; ``rule`` is the same names joined by
    ", " (what one line of provenance shows)."""

    outcome: DecisionOutcome
    reason: str
    source: str  # "rule", "grant" or "default"
    rule: str | None = None
    grant: str | None = None
    remember: bool = False
    max_grant_seconds: int = 0
    approvers: ApproverLists = ()
    min_approvals: int = 1
    self_approval: bool = True
    approval_timeout_seconds: int = 1800
    rules: tuple[str, ...] = ()
    # Whether one person's "Approve plan" on an attempt's first step may stand for this one.
    approve_plan: bool = False

    @property
    def always_ask(self) -> bool:
        return self.outcome == "ask" and not self.remember

    def to_dict(self) -> dict[str, Any]:
        values = dict(self.__dict__)
        values["approvers"] = [list(names) for names in self.approvers]
        values["rules"] = list(self.rules)
        return values


@dataclass(frozen=True)
class _CompiledMatch:
    """A ``match`` (or ``unless``) with its globs compiled."""

    match: Match
    namespaces: re.Pattern[str] | None
    names: re.Pattern[str] | None
    clusters: re.Pattern[str] | None

    @classmethod
    def of(cls, match: Match) -> _CompiledMatch:
        return cls(match, _globs(match.namespaces), _globs(match.names), _globs(match.clusters))

    def matches(self, facts: ProposalFacts, now: datetime) -> bool:
        match = self.match
        if match.actions and facts.action not in match.actions:
            return False
        if self.namespaces is not None and not self.namespaces.match(facts.namespace):
            return False
        if self.clusters is not None and not self.clusters.match(facts.cluster):
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
        if match.requesters and not any(
            fnmatch.fnmatchcase(facts.requester, p) for p in match.requesters
        ):
            return False
        if match.labels:
            labels = dict(facts.labels)
            if any(labels.get(k) != v for k, v in match.labels.items()):
                return False
        return match.window is None or match.window.contains(now)


@dataclass
class _CompiledRule:
    sourced: SourcedRule
    match: _CompiledMatch
    order: int
    # The rule's exception: it does not apply where ``unless`` matches (docs/policies.md).
    unless: _CompiledMatch | None = None

    @property
    def rule(self) -> Rule:
        return self.sourced.rule

    def matches(self, facts: ProposalFacts, now: datetime) -> bool:
        if not self.match.matches(facts, now):
            return False
        return self.unless is None or not self.unless.matches(facts, now)


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
            unless = sourced.rule.unless
            entry = _CompiledRule(
                sourced,
                _CompiledMatch.of(sourced.rule.match),
                order,
                _CompiledMatch.of(unless) if unless is not None else None,
            )
            # An action named twice in one rule is still one rule to match.
            targets: list[str | None] = list(dict.fromkeys(sourced.rule.match.actions)) or [None]
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


def _names(rules: Iterable[Rule]) -> tuple[str, ...]:
    # Sorted, so that which files hold the rules and in what order never changes a decision.
    return tuple(sorted({rule.name for rule in rules}))


def _rules_text(names: tuple[str, ...]) -> str:
    return ("rule " if len(names) == 1 else "rules ") + ", ".join(names)


def _combined_ask(
    asks: list[Rule],
    defaults: Defaults,
    timeout: int,
    *,
    reason_prefix: str = "",
    reversible: bool = True,
) -> PolicyDecision:
    """Every matching ask rule at once, on the floor of the defaults: an approver satisfies
    the defaults' approvers and every rule's, every ``self_approval: false`` (the defaults'
    included) holds, the largest quorum (the defaults' included), "Always allow" only if every
    rule allows it, for the shortest ``max_grant``. No rules: the defaults alone.

    The defaults are a floor rather than a fallback so that adding an ask rule never lets
    anyone approve what the defaults would not have let them approve."""
    lists = [defaults.approvers, *(rule.approvers for rule in asks if rule.approvers)]
    approvers = conjunction(lists)
    count = max([defaults.min_approvals, *(rule.min_approvals or 1 for rule in asks)])
    own = defaults.self_approval and all(rule.self_approval is not False for rule in asks)
    # "Always allow" is one person's answer standing for later ones: never for a quorum, and
    # never for an action that cannot be undone (a grant would auto-allow it, which only an
    # allow rule saying allow_irreversible may). The defaults never offer it: no max_grant.
    remember = bool(asks) and all(rule.remember for rule in asks) and count <= 1 and reversible
    longest = min(rule.max_grant_seconds for rule in asks) if remember else 0
    # "Approve plan" is one person's answer too, given before the step is proposed: only when
    # every matching ask rule opts in (a rule that does not, an always-ask one for instance,
    # keeps its step asked alone), for one approval, and for steps that can be undone should
    # the attempt go wrong.
    plan = bool(asks) and all(rule.approve_plan for rule in asks) and count <= 1 and reversible
    names = _names(asks)
    if not reason_prefix:
        # Name the defaults where they hold more than the rules say on their own, so that the
        # reason accounts for every approver, the quorum and the self-approval ban it states.
        rules_alone = (
            conjunction(rule.approvers or ["*"] for rule in asks),
            max([1, *(rule.min_approvals or 1 for rule in asks)]),
            not any(rule.self_approval is False for rule in asks),
        )
        floor = " and the defaults" if rules_alone != (approvers, count, own) else ""
        verb = "requires" if len(names) == 1 and not floor else "require"
        reason_prefix = f"{'asks' if remember else 'always asks'}: {_rules_text(names)}{floor}"
    else:
        verb = "requires" if len(names) <= 1 else "require"
    plural = "approval" if count == 1 else "approvals"
    reason = f"{reason_prefix} {verb} {count} {plural} from {describe(approvers)}"
    if not own:
        reason += " (not the requester)"
    return PolicyDecision(
        outcome="ask",
        reason=reason,
        source="rule" if asks else "default",
        rule=", ".join(names) or None,
        rules=names,
        remember=remember,
        max_grant_seconds=longest,
        approvers=approvers,
        min_approvals=count,
        self_approval=own,
        approval_timeout_seconds=timeout,
        approve_plan=plan,
    )


PUTS_BACK = "it puts back the cause found"
# A grant is scoped to an action and an object, not to its values nor to who asks: made from
# an outside agent's card it let every MCP client write any value there with no human (an
# outside tester's finding). A team that wants agents to act alone says so in a rule
# (``requesters: ["mcp:…"]``, decision allow), where a reviewer reads it.
FROM_AN_AGENT = "an outside agent (MCP) proposed it, and a grant would stand for every agent"


def never_remembered(asked: PolicyDecision, why: str = PUTS_BACK) -> PolicyDecision:
    """``asked`` asked every time, as an always-ask rule would: for a proposal that puts the
    diagnosed cause back (a grant someone made for the object's other undos must not let
    Stratus re-break a fix with no human), and for one an outside agent made. No grant
    answers it, and no grant can be made from its card."""
    if not asked.remember:
        return asked
    return dataclasses.replace(
        asked,
        remember=False,
        max_grant_seconds=0,
        reason=f"{asked.reason}; always asked: {why}",
    )


def grant_refusal(
    grant: Grant, asked: PolicyDecision, facts: ProposalFacts, now: datetime
) -> str | None:
    """Why ``grant`` does not stand for a human answer under today's combined decision
    ``asked``, or None when it does: its creator could create it today and for this request."""
    # A quorum rules out "Always allow" too; it is named first, as the more telling reason.
    if asked.min_approvals > 1:
        return f"the rules in force need {asked.min_approvals} approvals"
    if not asked.remember:
        return "the rules in force do not allow 'Always allow'"
    if not is_person(grant.created_by) or not satisfies(
        asked.approvers, grant.created_by, grant.creator_groups
    ):
        return f"{grant.created_by} is not an approver under the rules in force"
    # Under a self-approval ban the creator may not have answered their own request (unknown
    # for a grant older than the record of who asked), nor may the grant answer theirs now.
    own = grant.requested_by is None or grant.created_by in (grant.requested_by, facts.requester)
    if not asked.self_approval and own:
        return "the rules in force do not let the requester approve"
    if grant.created_at is None or now >= grant.created_at + timedelta(
        seconds=asked.max_grant_seconds
    ):
        return "it is older than the rules' max_grant"
    return None


def grant_standing(
    grant: Grant, policy: CompiledPolicy, facts: ProposalFacts, now: datetime
) -> str | None:
    """Why ``grant`` would not allow ``facts`` under ``policy`` at ``now``, or None when it
    would: the steps ``evaluate`` takes (a deny wins, a grant stands only for an answer the
    matching ask rules ask for, ``grant_refusal`` under their combined decision), for surfaces
    that list grants."""
    if grant.revoked_at is not None:
        return "it was revoked"
    if now >= grant.expires_at:
        return "it expired"
    if not grant.matches(facts, now):
        return "it is for another action or resource"
    matched = policy.matching(facts, now)
    denies = _names(r for r in matched if r.decision == "deny")
    if denies:
        return f"{_rules_text(denies)} {'denies' if len(denies) == 1 else 'deny'} it"
    asks = [r for r in matched if r.decision == "ask"]
    if not asks:
        return (
            "no ask rule matches it today (a grant stands only for an answer a rule asks for; "
            "an allow rule or the default decides instead)"
        )
    asked = _combined_ask(
        asks,
        policy.policy.defaults,
        policy.approval_timeout_seconds,
        reversible=facts.reversible,
    )
    return grant_refusal(grant, asked, facts, now)


def listed_standing(grant: Grant, policy: CompiledPolicy, now: datetime) -> str | None:
    """``grant_standing`` for a surface that lists grants (``stratus policy grants``, the bot's
    ``/stratus policy`` and App Home): why the grant does not count under ``policy`` now, or
    None. An undo's risk is that of the write it reverses, unknown here: the grant counts
    only if it counts whatever that risk is."""
    kind, _, name = grant.resource.partition("/")
    action = CATALOG.get(grant.action)
    levels = [action.risk] if action is not None else ["low", "medium", "high"]
    reasons: dict[str, str] = {}
    for level in levels:
        facts = ProposalFacts(
            action=grant.action,
            namespace=grant.namespace,
            kind=kind,
            name=name,
            risk=level,
            reversible=action.reversible if action is not None else True,
            requester="",  # someone else than its creator: see grant_refusal
            cluster=grant.cluster,
        )
        reason = grant_standing(grant, policy, facts, now)
        if reason is not None:
            reasons.setdefault(reason, level)
    if not reasons:
        return None
    if action is not None:
        return next(iter(reasons))
    return "; ".join(f"undoing a {level}-risk write: {why}" for why, level in reasons.items())


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

    denies = [r for r in matched if r.decision == "deny"]
    if denies:
        names = _names(denies)
        if len(names) == 1:
            why = f": {denies[0].description}" if denies[0].description else ""
        else:
            said = sorted(f"{r.name}: {r.description}" for r in denies if r.description)
            why = f" ({'; '.join(said)})" if said else ""
        return PolicyDecision(
            outcome="deny",
            reason=f"denied: {_rules_text(names)}{why}",
            source="rule",
            rule=", ".join(names),
            rules=names,
            approval_timeout_seconds=timeout,
        )
    asks = [r for r in matched if r.decision == "ask"]
    if asks:
        asked = _combined_ask(asks, defaults, timeout, reversible=facts.reversible)
        if facts.puts_back:
            return never_remembered(asked)
        if facts.requester.startswith(MCP_PREFIX):
            return never_remembered(asked, FROM_AN_AGENT)
        if asked.remember:
            index = grants if isinstance(grants, GrantIndex) else GrantIndex(grants)
            usable = [
                g for g in index.matching(facts, now) if grant_refusal(g, asked, facts, now) is None
            ]
            if usable:
                grant = min(usable, key=lambda g: g.id)
                assert grant.created_at is not None  # grant_refusal refuses one without
                until = min(
                    grant.expires_at,
                    grant.created_at + timedelta(seconds=asked.max_grant_seconds),
                )
                return PolicyDecision(
                    outcome="allow",
                    reason=f"allowed: grant {grant.id} by {grant.created_by} until "
                    f"{until:%Y-%m-%d %H:%M} UTC",
                    source="grant",
                    grant=grant.id,
                    rule=asked.rule,
                    rules=asked.rules,
                    approval_timeout_seconds=timeout,
                )
        return asked
    allows = [r for r in matched if r.decision == "allow"]
    if not facts.reversible:
        explicit = [r for r in allows if r.allow_irreversible]
        if allows and not explicit:
            names = _names(allows)
            return _combined_ask(
                [],
                defaults,
                timeout,
                reason_prefix=f"asks: {_rules_text(names)} "
                f"{'allows' if len(names) == 1 else 'allow'} it, but {facts.action} cannot be "
                "undone and no allowing rule says allow_irreversible; the default",
            )
        allows = explicit
    if allows:
        names = _names(allows)
        return PolicyDecision(
            outcome="allow",
            reason=f"allowed: {_rules_text(names)}",
            source="rule",
            rule=", ".join(names),
            rules=names,
            approval_timeout_seconds=timeout,
        )
    return _combined_ask([], defaults, timeout, reason_prefix="asks: no rule matches; the default")
