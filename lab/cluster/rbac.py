"""Who is asking, and may they: bearer-token authentication and the RBAC authorizer.

Identities, as on a kubeadm cluster:

- the lab's admin token is ``kubernetes-admin`` in ``system:masters`` (allowed everything,
  whatever the bindings say, as the real privileged-group authorizer does);
- a ServiceAccount token from the TokenRequest subresource (``kubectl create token SA``) is
  ``system:serviceaccount:NS:SA`` in ``system:serviceaccounts``,
  ``system:serviceaccounts:NS`` and ``system:authenticated``. Tokens are JWTs signed by the
  lab; one stops working when it expires or when its ServiceAccount is deleted (or re-created
  with another uid);
- a request without a token is ``system:anonymous`` in ``system:unauthenticated``.

With RBAC off (the default) every request is allowed and an unknown token is the admin, so
any kubeconfig works; ServiceAccount tokens are still recognised (``kubectl auth whoami``).
With RBAC on, an unknown token is 401 Unauthorized and every request is checked against the
Roles, ClusterRoles and their bindings in the store, with the rule matching of the real
authorizer (``*``, ``resource/subresource``, ``*/subresource``, resourceNames,
nonResourceURLs with a trailing ``*``), and refused with the real server's 403 message.

The review objects and TokenRequest that ask it are ``lab.cluster.access_reviews``; who a
request runs as under ``Impersonate-*`` headers is ``lab.cluster.impersonation``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lab.cluster.errors import ApiError
from lab.cluster.store import ObjectStore

ADMIN_USER = "kubernetes-admin"
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
ISSUER = "https://kubernetes.default.svc.cluster.local"
_RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class UserInfo:
    username: str
    groups: tuple[str, ...]
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict, compare=False, hash=False)

    def as_dict(self) -> dict[str, Any]:
        info: dict[str, Any] = {"username": self.username}
        if self.uid:
            info["uid"] = self.uid
        info["groups"] = list(self.groups)
        if self.extra:
            info["extra"] = self.extra
        return info


ADMIN = UserInfo(ADMIN_USER, (MASTERS, AUTHENTICATED))
ANONYMOUS = UserInfo("system:anonymous", ("system:unauthenticated",))


@dataclass(frozen=True)
class Attributes:
    """What a request does, as the authorizer sees it (a resource request or a path)."""

    verb: str
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def resource_request(self) -> bool:
        return bool(self.resource)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden_error(user: UserInfo, attrs: Attributes, reason: str = "") -> ApiError:
    """403 worded as kube-apiserver words it (responsewriters.forbiddenMessage)."""
    if not attrs.resource_request:
        message = f'User "{user.username}" cannot {attrs.verb} path "{attrs.path}"'
    else:
        resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
        where = (
            f' in the namespace "{attrs.namespace}"' if attrs.namespace else " at the cluster scope"
        )
        message = (
            f'User "{user.username}" cannot {attrs.verb} resource "{resource}" '
            f'in API group "{attrs.api_group}"{where}'
        )
    if reason:
        message = f"{message}: {reason}"
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    if not attrs.resource_request:
        text = f"forbidden: {message}"
    elif attrs.name:
        text = f'{qualified} "{attrs.name}" is forbidden: {message}'
    else:
        text = f"{qualified} is forbidden: {message}"
    return ApiError(
        403, "Forbidden", text, kind=attrs.resource, name=attrs.name, group=attrs.api_group
    )


# ------------------------------------------------------------ tokens


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Authenticator:
    """Maps bearer tokens to users; mints ServiceAccount tokens."""

    def __init__(self, store: ObjectStore, admin_tokens: tuple[str, ...] = ()) -> None:
        self.store = store
        self.admin_tokens = set(admin_tokens)
        self._key = secrets.token_bytes(32)

    def issue(
        self,
        namespace: str,
        serviceaccount: dict[str, Any],
        *,
        expiration_seconds: int,
        audiences: list[str],
    ) -> tuple[str, float]:
        """A signed token for the ServiceAccount and the time it expires (Unix seconds)."""
        now = int(time.time())
        meta = serviceaccount["metadata"]
        claims = {
            "aud": audiences,
            "exp": now + expiration_seconds,
            "iat": now,
            "iss": ISSUER,
            "jti": str(uuid.uuid4()),
            "kubernetes.io": {
                "namespace": namespace,
                "serviceaccount": {"name": meta["name"], "uid": meta["uid"]},
            },
            "nbf": now,
            "sub": f"system:serviceaccount:{namespace}:{meta['name']}",
        }
        header = _b64(json.dumps({"alg": "HS256", "kid": "stratus-lab"}).encode())
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        signature = hmac.new(self._key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(signature)}", float(now + expiration_seconds)

    def serviceaccount_user(self, token: str) -> UserInfo | None:
        """The ServiceAccount a token of ours names, if it is valid and that account exists."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        expected = hmac.new(self._key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(_unb64(parts[2]), expected):
                return None
            claims = json.loads(_unb64(parts[1]))
        except (ValueError, TypeError):
            return None
        if float(claims.get("exp", 0)) < time.time():
            return None
        bound = claims.get("kubernetes.io") or {}
        namespace = bound.get("namespace", "")
        account = bound.get("serviceaccount") or {}
        stored = self.store.get("serviceaccounts", namespace, account.get("name", ""))
        if stored is None or stored["metadata"]["uid"] != account.get("uid"):
            return None
        return UserInfo(
            f"system:serviceaccount:{namespace}:{account['name']}",
            ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
            uid=account["uid"],
            extra={"authentication.kubernetes.io/credential-id": [f"JTI={claims.get('jti')}"]},
        )

    def authenticate(self, header: str | None, *, strict: bool) -> UserInfo | None:
        """The user behind an Authorization header; ``None`` means 401 (only when strict)."""
        if not header:
            return ANONYMOUS if strict else ADMIN
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token:
            if token in self.admin_tokens:
                return ADMIN
            user = self.serviceaccount_user(token)
            if user is not None:
                return user
        return None if strict else ADMIN


# ------------------------------------------------------------ authorizer


def _matches(values: list[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def rule_allows(rule: dict[str, Any], attrs: Attributes) -> bool:
    """One PolicyRule against one request (rbac/v1 helpers: VerbMatches, ResourceMatches …)."""
    if not _matches(rule.get("verbs") or [], attrs.verb):
        return False
    if not attrs.resource_request:
        for url in rule.get("nonResourceURLs") or []:
            if url in ("*", attrs.path):
                return True
            if url.endswith("*") and attrs.path.startswith(url[:-1]):
                return True
        return False
    if not _matches(rule.get("apiGroups") or [], attrs.api_group):
        return False
    combined = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    resources = rule.get("resources") or []
    if not (
        "*" in resources
        or combined in resources
        or (attrs.subresource and f"*/{attrs.subresource}" in resources)
    ):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


def subject_matches(subject: dict[str, Any], user: UserInfo, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return name == user.username
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return user.username == f"system:serviceaccount:{namespace}:{name}"
    return False


def _describe(subject: dict[str, Any], binding_namespace: str) -> str:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


@dataclass
class Decision:
    allowed: bool
    reason: str = ""
    errors: list[str] = field(default_factory=list)


class Authorizer:
    """RBAC over the Roles, ClusterRoles and bindings in the store."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def _cluster_role_rules(self, name: str, errors: list[str]) -> list[dict[str, Any]] | None:
        role = self.store.get(f"clusterroles.{_RBAC_GROUP}", "", name)
        if role is None:
            errors.append(f'clusterrole.{_RBAC_GROUP} "{name}" not found')
            return None
        rules = list(role.get("rules") or [])
        for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []:
            wanted = selector.get("matchLabels") or {}
            for other in self.store.list_objects(f"clusterroles.{_RBAC_GROUP}", None):
                labels = other["metadata"].get("labels") or {}
                if other is not role and all(labels.get(k) == v for k, v in wanted.items()):
                    rules.extend(other.get("rules") or [])
        return rules

    def _role_rules(
        self, ref: dict[str, Any], namespace: str, errors: list[str]
    ) -> list[dict[str, Any]] | None:
        if ref.get("kind") == "ClusterRole":
            return self._cluster_role_rules(ref.get("name", ""), errors)
        role = self.store.get(f"roles.{_RBAC_GROUP}", namespace, ref.get("name", ""))
        if role is None:
            errors.append(f'role.{_RBAC_GROUP} "{ref.get("name", "")}" not found')
            return None
        return list(role.get("rules") or [])

    def _grants(
        self, user: UserInfo, namespace: str, errors: list[str]
    ) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        """Each binding that applies to the user (cluster-wide, then in ``namespace``),
        described as the real authorizer describes it, with its role's rules. Bindings whose
        role is missing add to ``errors``."""
        for binding in self.store.list_objects(f"clusterrolebindings.{_RBAC_GROUP}", None):
            for subject in binding.get("subjects") or []:
                if subject_matches(subject, user, ""):
                    ref = binding.get("roleRef") or {}
                    rules = self._cluster_role_rules(ref.get("name", ""), errors)
                    if rules is not None:
                        described = (
                            f'ClusterRoleBinding "{binding["metadata"]["name"]}" of '
                            f'ClusterRole "{ref.get("name")}" to {_describe(subject, "")}'
                        )
                        yield described, rules
                    break
        if not namespace:
            return
        for binding in self.store.list_objects(f"rolebindings.{_RBAC_GROUP}", namespace):
            for subject in binding.get("subjects") or []:
                if subject_matches(subject, user, namespace):
                    ref = binding.get("roleRef") or {}
                    rules = self._role_rules(ref, namespace, errors)
                    if rules is not None:
                        described = (
                            f'RoleBinding "{binding["metadata"]["name"]}/{namespace}" of '
                            f'{ref.get("kind")} "{ref.get("name")}" to '
                            f"{_describe(subject, namespace)}"
                        )
                        yield described, rules
                    break

    def decide(self, user: UserInfo, attrs: Attributes) -> Decision:
        if MASTERS in user.groups:
            return Decision(True)
        errors: list[str] = []
        for described, rules in self._grants(user, attrs.namespace, errors):
            if any(rule_allows(rule, attrs) for rule in rules):
                return Decision(True, f"RBAC: allowed by {described}")
        if not errors:
            return Decision(False)
        joined = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
        return Decision(False, f"RBAC: {joined}", errors)

    def rules(self, user: UserInfo, namespace: str) -> dict[str, Any]:
        """SelfSubjectRulesReview status: every rule that applies in ``namespace``."""
        resource_rules: list[dict[str, Any]] = []
        non_resource_rules: list[dict[str, Any]] = []
        errors: list[str] = []
        for _described, rules in self._grants(user, namespace, errors):
            for rule in rules:
                if rule.get("nonResourceURLs"):
                    non_resource_rules.append(
                        {
                            "verbs": rule.get("verbs") or [],
                            "nonResourceURLs": rule["nonResourceURLs"],
                        }
                    )
                else:
                    entry = {
                        "verbs": rule.get("verbs") or [],
                        "apiGroups": rule.get("apiGroups") or [],
                        "resources": rule.get("resources") or [],
                    }
                    if rule.get("resourceNames"):
                        entry["resourceNames"] = rule["resourceNames"]
                    resource_rules.append(entry)
        status: dict[str, Any] = {
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": bool(errors),
        }
        if errors:
            status["evaluationError"] = ", ".join(errors)
        return status


class AccessControl:
    """Authentication plus authorization, switched on with ``enabled`` (``--rbac``)."""

    def __init__(self, store: ObjectStore) -> None:
        self.enabled = False
        self.authn = Authenticator(store)
        self.authz = Authorizer(store)

    def authenticate(self, header: str | None) -> UserInfo:
        user = self.authn.authenticate(header, strict=self.enabled)
        if user is None:
            raise unauthorized()
        return user

    def check(self, user: UserInfo, attrs: Attributes) -> None:
        if not self.enabled:
            return
        decision = self.authz.decide(user, attrs)
        if not decision.allowed:
            raise forbidden_error(user, attrs, decision.reason)
