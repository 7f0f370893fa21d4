"""``/stratus policy [namespace]`` and the App Home's grants: the rules in force (those that
can apply to the namespace), the defaults, and the active grants with a Revoke button."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from datetime import datetime

from slack_sdk.models.blocks import Block

from bot import blocks as b
from bot import buttons, text
from bot.runtime import Runtime
from bot.text import card_words, command_words
from policies.evaluate import Grant, listed_standing
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


@dataclass(frozen=True)
class ListedGrant:
    """A live grant as a surface lists it: whether it counts under today's rules, and why
    not (``counts``, ``suspended`` or ``tampered``), as ``stratus policy grants`` says."""

    grant: Grant
    standing: str
    why: str = ""


def listed_grants(runtime: Runtime, now: datetime) -> list[ListedGrant]:
    """Every live grant (not revoked, not expired), the tampered ones included (listed as
    such, never hidden), each with its standing under the policy in force."""
    policy = runtime.policy()
    found = []
    for grant in runtime.grants.all():
        tampered = runtime.grants.problem(grant.id)
        if tampered:
            found.append(ListedGrant(grant, "tampered", tampered))
            continue
        if grant.revoked_at is not None or now >= grant.expires_at:
            continue
        why = listed_standing(grant, policy, now)
        found.append(ListedGrant(grant, "suspended" if why else "counts", why or ""))
    return found


def grant_blocks(grants: list[ListedGrant]) -> list[Block]:
    return [
        b.section(
            command_words.grant_line(
                g.grant.id,
                g.grant.action,
                g.grant.namespace,
                g.grant.resource,
                g.grant.created_by,
                g.grant.expires_at,
                standing=g.standing,
                why=g.why,
            ),
            accessory=None
            if g.standing == "tampered"
            else b.button(
                command_words.REVOKE,
                buttons.REVOKE,
                g.grant.id,
                ask=b.confirm(
                    command_words.REVOKE,
                    command_words.revoke_confirm(g.grant.id),
                    command_words.REVOKE,
                    card_words.CONFIRM_NO,
                ),
            ),
        )
        for g in grants
    ]


def policy_blocks(runtime: Runtime, namespace: str) -> list[Block]:
    policy = runtime.policy().policy
    defaults = policy.defaults
    rules = [s.rule for s in policy.rules if _applies(s.rule, namespace)]
    lines = [
        command_words.policy_rule(r.name, r.decision, _scope(r), _extra(r)) for r in rules
    ] or [command_words.NO_RULES]
    parts: list[Block] = [
        b.section(command_words.policy_title(namespace)),
        b.section(
            command_words.policy_defaults(
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
        parts.append(b.context(command_words.policy_change_rejected(str(rejected))))
    parts += [
        b.section(command_words.GRANTS_TITLE),
    ]
    now = runtime.store.clock.now()
    grants = [
        g for g in listed_grants(runtime, now) if not namespace or g.grant.namespace == namespace
    ]
    parts += grant_blocks(grants[:20]) or [b.context(command_words.NO_GRANTS)]
    return parts
