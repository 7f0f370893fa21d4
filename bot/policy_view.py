"""``/stratus policy [namespace]`` and the App Home's grants: the rules in force (those that
can apply to the namespace), the defaults, and the active grants with a Revoke button."""

from __future__ import annotations

import fnmatch

from slack_sdk.models.blocks import Block

from bot import blocks as b
from bot import cards, text
from bot.runtime import Runtime
from policies.evaluate import Grant
from policies.model import Rule


def _applies(rule: Rule, namespace: str) -> bool:
    patterns = rule.match.namespaces
    return not namespace or not patterns or any(fnmatch.fnmatch(namespace, p) for p in patterns)


def _scope(rule: Rule) -> str:
    match = rule.match
    parts = []
    if match.actions:
        parts.append("actions " + ", ".join(match.actions))
    if match.namespaces:
        parts.append("namespaces " + ", ".join(match.namespaces))
    if match.kinds:
        parts.append("kinds " + ", ".join(match.kinds))
    if match.names:
        parts.append("names " + ", ".join(match.names))
    if match.risk:
        parts.append("risk " + ", ".join(match.risk))
    return "(" + "; ".join(parts) + ")" if parts else "(everything)"


def _extra(rule: Rule) -> str:
    bits = []
    if rule.decision == "ask":
        bits.append(f"Always allow up to {rule.max_grant}" if rule.remember else "always asks")
        if rule.approvers:
            bits.append("approvers " + text.approvers(rule.approvers))
        if rule.min_approvals and rule.min_approvals > 1:
            bits.append(f"{rule.min_approvals} approvals")
        if rule.self_approval is False:
            bits.append("not the requester")
    return ", ".join(bits) or rule.description


def grant_blocks(grants: list[Grant]) -> list[Block]:
    return [
        b.section(
            text.grant_line(g.id, g.action, g.namespace, g.resource, g.created_by, g.expires_at),
            accessory=b.button(
                text.REVOKE,
                cards.REVOKE,
                g.id,
                ask=b.confirm(text.REVOKE, text.revoke_confirm(g.id), text.REVOKE, text.CONFIRM_NO),
            ),
        )
        for g in grants
    ]


def policy_blocks(runtime: Runtime, namespace: str) -> list[Block]:
    policy = runtime.policy().policy
    defaults = policy.defaults
    rules = [s.rule for s in policy.rules if _applies(s.rule, namespace)]
    lines = [text.policy_rule(r.name, r.decision, _scope(r), _extra(r)) for r in rules] or [
        text.NO_RULES
    ]
    parts: list[Block] = [
        b.section(text.policy_title(namespace)),
        b.section(
            text.policy_defaults(
                list(defaults.approvers),
                defaults.min_approvals,
                defaults.self_approval,
                defaults.approval_timeout,
            )
        ),
        *b.sections("\n".join(lines)),
    ]
    rejected = getattr(runtime.policy, "last_error", None)
    if rejected is not None:  # a live policy whose latest file change did not load
        parts.append(b.context(text.policy_change_rejected(str(rejected))))
    parts += [
        b.section(text.GRANTS_TITLE),
    ]
    now = runtime.store.clock.now()
    grants = [g for g in runtime.grants.active(now) if not namespace or g.namespace == namespace]
    parts += grant_blocks(grants[:20]) or [b.context(text.NO_GRANTS)]
    return parts
