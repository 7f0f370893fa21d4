"""Writes made as the approver: the mapping from people to Kubernetes identities, and whom a
write is sent as.

Opt-in (``STRATUS_IMPERSONATION=path``): a YAML file maps Slack users (``U…``/``W…``), Slack
user groups (``S…``, the ids the policies already name) and terminal users (``cli:NAME``) to
Kubernetes users and groups. Each approved write (and undo) is then sent with
``Impersonate-User``/``Impersonate-Group`` of the person accountable for it, so the cluster's
own RBAC decides and the cluster's audit log names them; Stratus's ServiceAccount needs only
``impersonate`` on those users and groups (``cluster_role`` derives that ClusterRole).

Whom a write is sent as (``accountable``), the safest choice in each case:

- people approved it: the approver whose vote completed the approval (the last one bound to
  the plan); with a quorum, every approval before it must also come from a mapped person;
- an "Always allow" grant allowed it: the person who created the grant — they decided it
  may run without asking, so the cluster checks it against their rights, today;
- a policy rule allowed it without asking: the person who requested it; a request by Stratus
  itself (an incident's plan, an automatic TNR undo) is sent as the file's ``automatic``
  identity, and refused when the file names none.

A person with no entry under ``people`` is not mapped (a group entry only adds groups): the
write is refused before anything is sent. A mapping never names ``system:`` users or groups
(``system:masters`` would skip RBAC altogether; a case variant reads as one), nor a name with
``*`` (it reads as everyone, and the ClusterRole would grant ``resourceNames: ['*']``).
``@handles`` are refused: a handle can be renamed, and votes record the user id. The file is
read with the policy files' loader and its errors carry file:line:column.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationError, field_validator

from policies.loader import _locate, located
from policies.model import _Strict
from policies.problems import Problem
from policies.safe_yaml import read_document
from store.errors import Remedy, StratusError
from tools.identity import KubeIdentity

ENV = "STRATUS_IMPERSONATION"
_PERSON = re.compile(r"[UW][A-Z0-9]{1,30}|cli:[A-Za-z0-9][-A-Za-z0-9._]{0,62}")
_GROUP = re.compile(r"S[A-Z0-9]{1,30}")
# A Kubernetes user or group name: any text, but not empty, not padded, no control characters.
_NAME = re.compile(r"[^\s\x00-\x1f\x7f](?:[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f])?")


def _kube_name(value: str, what: str) -> str:
    if not _NAME.fullmatch(value) or len(value) > 253:
        raise ValueError(f"{value!r} is not a Kubernetes {what} name")
    if "*" in value:
        # The cluster takes the name literally, but it reads as "everyone", and the ClusterRole
        # derived from the file would grant ``impersonate`` on ``resourceNames: ['*']``.
        raise ValueError(
            f"{value!r} is not one {what}: a name with `*` reads as a wildcard, and the "
            f"cluster takes it literally; name the Kubernetes {what} itself"
        )
    if value.startswith("system:"):
        raise ValueError(
            f"{value!r} is one of the cluster's own identities (system:…); a person is never "
            "one, and system:masters would skip RBAC altogether"
        )
    if value.lower().startswith("system:"):
        raise ValueError(
            f"{value!r} differs from the cluster's own identities (system:…) only by case; "
            "a person is never one, and it reads as one of them"
        )
    return value


_User = Annotated[str, AfterValidator(lambda v: _kube_name(v, "user"))]
# Each group checked on its own, so a refusal points at the group's own line and column.
_KubeGroup = Annotated[str, AfterValidator(lambda v: _kube_name(v, "group"))]


class KubeTarget(_Strict):
    user: _User
    groups: list[_KubeGroup] = Field(default_factory=list)


class PersonEntry(KubeTarget):
    who: str = Field(description="a Slack user id (U…/W…) or a terminal user (cli:NAME)")

    @field_validator("who")
    @classmethod
    def _who(cls, value: str) -> str:
        if value.startswith("@"):
            raise ValueError(
                f"{value!r} is a handle, which can be renamed; write the Slack user id (U…), "
                "as the votes record it"
            )
        if not _PERSON.fullmatch(value):
            raise ValueError(f"{value!r} is not a person: a Slack user id (U…/W…) or cli:NAME")
        return value


class GroupEntry(_Strict):
    who: str = Field(description="a Slack user-group id (S…)")
    groups: list[_KubeGroup] = Field(min_length=1)

    @field_validator("who")
    @classmethod
    def _who(cls, value: str) -> str:
        if not _GROUP.fullmatch(value):
            raise ValueError(f"{value!r} is not a Slack user-group id (S…)")
        return value


class ImpersonationFile(_Strict):
    apiVersion: Literal["stratus/v1"]  # noqa: N815 - the YAML key
    kind: Literal["Impersonation"]
    people: list[PersonEntry] = Field(default_factory=list)
    groups: list[GroupEntry] = Field(default_factory=list)
    automatic: KubeTarget | None = None


@dataclass(frozen=True)
class Impersonation:
    """A loaded mapping: person → Kubernetes user and groups, Slack group → more groups."""

    people: dict[str, KubeIdentity]
    groups: dict[str, tuple[str, ...]]
    automatic: KubeIdentity | None = None
    source: str = ""

    def identity_of(self, person: str, slack_groups: Sequence[str] = ()) -> KubeIdentity | None:
        """The Kubernetes identity of ``person`` (with their groups' groups), or None."""
        own = self.people.get(person)
        if own is None:
            return None
        extra = [g for s in slack_groups for g in self.groups.get(s, ())]
        groups = tuple(dict.fromkeys([*own.groups, *extra]))
        return KubeIdentity(own.user, groups)

    def users(self) -> list[str]:
        named = [i.user for i in self.people.values()]
        if self.automatic is not None:
            named.append(self.automatic.user)
        return sorted(set(named))

    def kube_groups(self) -> list[str]:
        named = [g for i in self.people.values() for g in i.groups]
        named += [g for gs in self.groups.values() for g in gs]
        if self.automatic is not None:
            named += list(self.automatic.groups)
        return sorted(set(named))


class ImpersonationError(StratusError, code="impersonation", remedy=Remedy.FIX_CONFIG):
    """The mapping file does not load; ``problems`` lists each at file:line:column. Stratus
    does not start on it: writes must not silently go out as the ServiceAccount."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(
            "the impersonation mapping does not load: " + "; ".join(str(p) for p in problems),
            subject=problems[0].path if problems else None,
            details={"problems": [str(p) for p in problems]},
        )
        self.problems = problems


def parse(path: Path) -> Impersonation:
    """Load a mapping file, or raise ImpersonationError with every problem at file:line:column."""
    node, document, problems = read_document(path)
    if problems or node is None:
        raise ImpersonationError(problems)
    try:
        parsed = ImpersonationFile.model_validate(document)
    except ValidationError as error:
        raise ImpersonationError(located(path, node, error)) from error
    seen: dict[str, int] = {}
    duplicates: list[Problem] = []
    named = [("people", i, e.who) for i, e in enumerate(parsed.people)]
    named += [("groups", i, e.who) for i, e in enumerate(parsed.groups)]
    for section, index, who in named:
        line, column = _position(node, (section, index, "who"))
        if who in seen:
            duplicates.append(
                Problem(
                    str(path),
                    line,
                    column,
                    f"{who} is mapped twice (first at line {seen[who]}); "
                    "map each person or group once",
                )
            )
        else:
            seen[who] = line
    if duplicates:
        raise ImpersonationError(duplicates)
    automatic = parsed.automatic
    return Impersonation(
        people={p.who: KubeIdentity(p.user, tuple(p.groups)) for p in parsed.people},
        groups={g.who: tuple(g.groups) for g in parsed.groups},
        automatic=KubeIdentity(automatic.user, tuple(automatic.groups)) if automatic else None,
        source=str(path),
    )


def _position(node: Any, loc: tuple[int | str, ...]) -> tuple[int, int]:
    found = _locate(node, loc) or node
    return found.start_mark.line + 1, found.start_mark.column + 1


def from_env() -> Impersonation | None:
    """The mapping ``$STRATUS_IMPERSONATION`` names (None: impersonation is off). A file that
    does not load stops Stratus: writes must not silently go out as the ServiceAccount."""
    configured = os.environ.get(ENV, "").strip()
    if not configured:
        return None
    path = Path(configured)
    if not path.is_file():
        raise ImpersonationError(
            [Problem(configured, 1, 1, f"no impersonation file here (${ENV} names it)")]
        )
    return parse(path)


# ------------------------------------------------------------ whom a write is sent as


class NotMapped(StratusError, code="not_mapped", remedy=Remedy.FIX_CONFIG):
    """The person accountable for a write has no Kubernetes identity in the mapping; nothing
    was sent. ``details``: ``person`` (empty for Stratus itself) and ``why`` (their part)."""


class ApproverNotMapped(StratusError, code="approver_not_mapped", remedy=Remedy.ASK_APPROVER):
    """A vote refused when it is cast: the approver has no Kubernetes identity, so the write
    could never be sent as them. Nothing changed; the proposal stays open for someone mapped.
    ``details``: ``person`` and ``file``."""


def approver_refusal(
    mapping: Impersonation | None, *, user: str, groups: Sequence[str], subject: str
) -> ApproverNotMapped | None:
    """Why ``user``'s approval cannot count (None: it can, or impersonation is off). Every
    approval names someone the write is sent as, or who must be mapped beside them (a
    quorum; an "Always allow" grant's creator), so an unmapped approval is refused at once,
    not at execution — where it would end the attempt as if the fix had been tried."""
    if mapping is None or mapping.identity_of(user, groups) is not None:
        return None
    return ApproverNotMapped(
        f"the approval of {user} on {subject} was not counted",
        subject=subject,
        details={"person": user, "file": mapping.source},
    )


class ClusterRefused(StratusError, code="cluster_refused", remedy=Remedy.ASK_APPROVER):
    """The cluster refused the write for the person it was sent as; nothing was written.
    ``details``: ``person``, ``user`` (their Kubernetes user) and ``cluster`` (its words)."""


@dataclass(frozen=True)
class Accountable:
    """The person a write is made for, and their part in it."""

    person: str  # U…, W… or cli:NAME; "" for Stratus itself (the ``automatic`` identity)
    groups: tuple[str, ...]
    why: Literal["approved", "granted", "requested", "automatic"]


@dataclass(frozen=True)
class Approval:
    user: str
    groups: tuple[str, ...] = ()


def accountable(
    *,
    outcome: str,
    approvals: Sequence[Approval],
    grant_creator: Approval | None,
    requester: str,
    is_person: bool,
) -> list[Accountable]:
    """Who a write is made for (the first), and who else must be mapped for it to run.
    ``approvals``: the votes bound to the plan, oldest first; ``is_person``: whether the
    requester is a person (not Stratus or an agent)."""
    if approvals and outcome != "allow":
        ordered = [Accountable(a.user, a.groups, "approved") for a in approvals]
        return [ordered[-1], *ordered[:-1]]
    if grant_creator is not None:
        return [Accountable(grant_creator.user, grant_creator.groups, "granted")]
    if approvals:  # allowed, yet people approved (an undo asked, then allowed): theirs
        return [Accountable(approvals[-1].user, approvals[-1].groups, "approved")]
    if is_person:
        return [Accountable(requester, (), "requested")]
    return [Accountable("", (), "automatic")]


def writer(mapping: Impersonation, people: Sequence[Accountable]) -> KubeIdentity:
    """The identity the write is sent as; NotMapped when anyone accountable has none."""
    chosen: KubeIdentity | None = None
    for index, who in enumerate(people):
        identity = (
            mapping.automatic
            if who.why == "automatic"
            else mapping.identity_of(who.person, who.groups)
        )
        if identity is None:
            raise NotMapped(
                (
                    "no Kubernetes identity is mapped for writes Stratus makes on its own "
                    f"(no `automatic` in {mapping.source}); nothing was sent"
                )
                if who.why == "automatic"
                else f"{who.person} has no Kubernetes identity in {mapping.source}; "
                "nothing was sent",
                subject=who.person or "stratus",
                details={"person": who.person, "why": who.why, "file": mapping.source},
            )
        if index == 0:
            chosen = identity
    assert chosen is not None
    return chosen


def previewer(
    mapping: Impersonation | None, *, requester: str, is_person: bool
) -> KubeIdentity | None:
    """Whom a proposal's server dry-run is sent as, before anyone approved it: the requester
    (or Stratus's ``automatic`` identity), so the preview is checked as someone who would be
    accountable. The ServiceAccount itself may write nothing, so a refusal here is no answer
    yet; the approver's own dry-run at execution decides."""
    if mapping is None:
        return None
    return mapping.identity_of(requester) if is_person else mapping.automatic


def refused(who: Accountable, identity: KubeIdentity, cluster: str, subject: str) -> ClusterRefused:
    """The error for a write the cluster refused for ``who`` (sent as ``identity``)."""
    person = who.person or "stratus"
    return ClusterRefused(
        f"the cluster refused this for {person} (as {identity.user}): {cluster}",
        subject=subject,
        details={"person": who.person, "user": identity.user, "cluster": cluster},
    )


# ------------------------------------------------------------ the ServiceAccount's right


def cluster_role(mapping: Impersonation, *, name: str = "stratus-impersonate") -> dict[str, Any]:
    """The ClusterRole Stratus's ServiceAccount needs, and nothing more: ``impersonate`` on
    exactly the mapped users and groups (resourceNames). Never ``serviceaccounts``, ``uids``
    or ``userextras``: Stratus sends none."""
    rules: list[dict[str, Any]] = []
    for resource, names in (("users", mapping.users()), ("groups", mapping.kube_groups())):
        if names:
            rules.append(
                {
                    "apiGroups": [""],
                    "resources": [resource],
                    "verbs": ["impersonate"],
                    "resourceNames": names,
                }
            )
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "stratus"}},
        "rules": rules,
    }
