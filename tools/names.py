"""Kubernetes names, checked before anything else happens.

A name or namespace that is not a valid Kubernetes name never reaches a URL, a lock key, a
policy match or an audit row: ``hotel/../kube-system``, ``geo/status`` or ``geo?x=1`` would
otherwise select another object than the one that was checked.
"""

from __future__ import annotations

import re

from tools.errors import Invalid

# RFC 1123 label (namespaces, services) and subdomain (most other objects).
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_KINDS = {"Namespace", "Service"}


def check_namespace(namespace: str) -> str:
    if not namespace:
        raise Invalid("the namespace is empty; name one (for example -n default)")
    if len(namespace) > 63 or not _LABEL.fullmatch(namespace):
        raise Invalid(
            f"{namespace!r} is not a valid namespace: lower-case letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters"
        )
    return namespace


def check_name(kind: str, name: str) -> str:
    if not name:
        raise Invalid(f"the {kind.lower()} name is empty; give KIND/NAME, e.g. deployment/web")
    pattern, limit = (_LABEL, 63) if kind in LABEL_KINDS else (_SUBDOMAIN, 253)
    if len(name) > limit or not pattern.fullmatch(name):
        raise Invalid(
            f"{name!r} is not a valid {kind.lower()} name: lower-case letters, digits, '-'"
            f"{'' if kind in LABEL_KINDS else ' and .'}, at most {limit} characters"
        )
    return name
