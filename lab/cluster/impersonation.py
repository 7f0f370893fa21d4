"""Impersonation: a request's ``Impersonate-*`` headers, checked and applied.

``kubectl --as``/``--as-group`` and the Python client's impersonation send these headers; the
request then runs as the identity they name when the sender may ``impersonate`` each part of
it, as the real impersonation filter checks it. Split from ``lab.cluster.rbac`` (whose
authorizer it asks): that module decides who may do what, this one who a request runs as.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from lab.cluster.errors import ApiError
from lab.cluster.rbac import (
    ANONYMOUS,
    AUTHENTICATED,
    MASTERS,
    AccessControl,
    Attributes,
    UserInfo,
    forbidden_error,
)

IMPERSONATE_USER = "Impersonate-User"
IMPERSONATE_GROUP = "Impersonate-Group"
IMPERSONATE_UID = "Impersonate-Uid"
IMPERSONATE_EXTRA = "Impersonate-Extra-"
_AUTHENTICATION_GROUP = "authentication.k8s.io"
_SERVICEACCOUNT_PREFIX = "system:serviceaccount:"


def _impersonation_attributes(kind: str, value: str, extra_key: str = "") -> Attributes:
    """What asking to act as ``value`` needs (``impersonate`` on users, groups,
    serviceaccounts, uids or userextras/KEY), as the real impersonation filter builds it."""
    if kind == "users" and value.startswith(_SERVICEACCOUNT_PREFIX):
        namespace, _, name = value[len(_SERVICEACCOUNT_PREFIX) :].partition(":")
        return Attributes("impersonate", "", "serviceaccounts", "", namespace, name)
    if kind in ("uids", "userextras"):
        return Attributes("impersonate", _AUTHENTICATION_GROUP, kind, extra_key, "", value)
    return Attributes("impersonate", "", kind, "", "", value)


def impersonation_headers(headers: Any) -> tuple[str, list[str], str, dict[str, list[str]]]:
    """(user, groups, uid, extra) from a request's ``Impersonate-*`` headers (a multidict:
    ``Impersonate-Group`` and each ``Impersonate-Extra-KEY`` may repeat). Extra keys are
    percent-decoded and lower-cased, as the real server reads them."""
    user = str(headers.get(IMPERSONATE_USER) or "")
    groups = [str(g) for g in headers.getall(IMPERSONATE_GROUP, [])]
    uid = str(headers.get(IMPERSONATE_UID) or "")
    extra: dict[str, list[str]] = {}
    for name, value in headers.items():
        if name.lower().startswith(IMPERSONATE_EXTRA.lower()):
            key = unquote(name[len(IMPERSONATE_EXTRA) :]).lower()
            extra.setdefault(key, []).append(str(value))
    return user, groups, uid, extra


def impersonate(access: AccessControl, requester: UserInfo, headers: Any) -> UserInfo:
    """The user a request runs as: ``requester``, or the identity its ``Impersonate-*``
    headers ask for when ``requester`` may impersonate each part of it (checked only with
    RBAC on; with it off the identity is still swapped, so ``kubectl auth whoami --as``
    answers as on a cluster that allows everything). Refused with the real server's 403;
    groups, a uid or extras without a user is the real server's error."""
    user, groups, uid, extra = impersonation_headers(headers)
    if not user:
        if groups or uid or extra:
            asked = ", ".join(
                [f"{IMPERSONATE_GROUP}={g}" for g in groups]
                + ([f"{IMPERSONATE_UID}={uid}"] if uid else [])
                + [f"{IMPERSONATE_EXTRA}{k}={v}" for k, vs in extra.items() for v in vs]
            )
            raise ApiError(
                500,
                "InternalError",
                f"Internal error occurred: requested [{asked}] without impersonating a user",
            )
        return requester
    wanted = [_impersonation_attributes("users", user)]
    wanted += [_impersonation_attributes("groups", g) for g in groups]
    if uid:
        wanted.append(_impersonation_attributes("uids", uid))
    wanted += [_impersonation_attributes("userextras", v, k) for k, vs in extra.items() for v in vs]
    if access.enabled and MASTERS not in requester.groups:
        for attrs in wanted:
            decision = access.authz.decide(requester, attrs)
            if not decision.allowed:
                raise forbidden_error(requester, attrs, decision.reason)
    as_groups = list(groups)
    if user.startswith(_SERVICEACCOUNT_PREFIX) and not groups:
        namespace = user[len(_SERVICEACCOUNT_PREFIX) :].partition(":")[0]
        as_groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    marker = "system:unauthenticated" if user == ANONYMOUS.username else AUTHENTICATED
    if marker not in as_groups:
        as_groups.append(marker)
    return UserInfo(user, tuple(as_groups), uid=uid, extra=extra)
