"""Who may approve, when several rules name approvers: a conjunction of approver lists.

The defaults name a list and each matching ``ask`` rule may name another (the defaults' list
is a floor no rule replaces), and an approver must satisfy *every* list: be named in it,
directly or through one of their user groups. With user groups
the intersection of two lists cannot be computed without asking Slack who is in which group,
so the lists are carried as they are, simplified only where that is exact: a list holding
``*`` asks nothing, and a list that contains another is implied by it. The canonical form
(sorted, deduplicated) makes two decisions comparable whatever the order of the files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A conjunction: an approver satisfies every inner list (an empty conjunction: anyone).
ApproverLists = tuple[tuple[str, ...], ...]
ANYONE: ApproverLists = (("*",),)

# Identities that are never a human: the agents, and Stratus's own processes.
MACHINE_ACTORS = ("agent:", "stratus")


# The identities of people: a Slack user (U… or W…, upper-case letters and digits, as Slack
# writes them) and a terminal user (``cli:NAME``, see cli/identity.py). A user-group ID, ``*``,
# an @handle, a channel or a bot is a name an approver list may hold, never who is asking.
_SLACK_USER = re.compile(r"[UW][A-Z0-9]{1,30}")
_TERMINAL_USER = re.compile(r"cli:[A-Za-z0-9][-A-Za-z0-9._]{0,62}")


def is_machine(user: str) -> bool:
    return not user or user.startswith(MACHINE_ACTORS)


def is_person(user: str) -> bool:
    """Whether ``user`` is the identity of a person: only a person answers, undoes, cancels,
    revokes or pauses, whatever the approver lists say (a list naming a group names its
    members, never someone whose id is the group's)."""
    if _SLACK_USER.fullmatch(user):
        return True
    return bool(_TERMINAL_USER.fullmatch(user)) and not user[4:].lower().startswith("stratus")


def conjunction(lists: Iterable[Iterable[str]]) -> ApproverLists:
    """The canonical conjunction of these lists: without lists that ask nothing (``*``) or
    that a smaller list in the conjunction already implies; ``(("*",),)`` when nothing is left."""
    unique = {tuple(sorted(set(names))) for names in lists}
    restricting = [names for names in unique if names and "*" not in names]
    kept = [
        names
        for names in restricting
        if not any(other != names and set(other) <= set(names) for other in restricting)
    ]
    return tuple(sorted(kept)) or ANYONE


def satisfies(lists: ApproverLists, user: str, groups: Iterable[str]) -> bool:
    """Whether ``user`` (a member of ``groups``) satisfies every list."""
    mine = {user, *groups}
    return all("*" in names or mine.intersection(names) for names in lists)


def implies(stricter: ApproverLists, looser: ApproverLists) -> bool:
    """Whether everyone who satisfies ``stricter`` also satisfies ``looser`` (statically: each
    list of ``looser`` is open to anyone or contains a list of ``stricter``)."""
    return all(
        "*" in names or any(set(strict) <= set(names) for strict in stricter) for names in looser
    )


def named(lists: ApproverLists) -> tuple[str, ...]:
    """Every identity or group some list names: what to look a user's groups up among."""
    return tuple(sorted({name for names in lists for name in names}))


def describe(lists: ApproverLists) -> str:
    """``anyone``, ``S0SRE, U0LEAD`` (one of them), or ``someone who is one of S0SRE, U0LEAD
    and also cli:sre`` (every list at once)."""
    if not lists or all("*" in names for names in lists):
        return "anyone"
    if len(lists) == 1:
        return ", ".join(lists[0])
    parts = [names[0] if len(names) == 1 else "one of " + ", ".join(names) for names in lists]
    return "someone who is " + " and also ".join(parts)
