"""The authentication and authorization APIs: access reviews and TokenRequest.

What ``kubectl auth whoami``, ``kubectl auth can-i`` (with ``--list`` and ``--as``) and
``kubectl create token`` create: SelfSubjectReview, TokenReview, the SubjectAccessReview
family and SelfSubjectRulesReview are answered by ``lab.cluster.rbac``'s authenticator and
authorizer (as the real server answers them, AlwaysAllow with RBAC off); a TokenRequest on
``serviceaccounts/NAME/token`` issues a ServiceAccount token. Split from ``rbac`` (which it
asks): that module decides, this one speaks the review objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lab.cluster.errors import ApiError
from lab.cluster.rbac import ADMIN, ISSUER, MASTERS, AccessControl, Attributes, UserInfo


def _attributes_of(spec: dict[str, Any], namespace: str = "") -> Attributes:
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return Attributes(
            verb=str(resource.get("verb") or ""),
            api_group=str(resource.get("group") or ""),
            resource=str(resource.get("resource") or ""),
            subresource=str(resource.get("subresource") or ""),
            namespace=namespace or str(resource.get("namespace") or ""),
            name=str(resource.get("name") or ""),
        )
    path = spec.get("nonResourceAttributes")
    if isinstance(path, dict):
        return Attributes(verb=str(path.get("verb") or ""), path=str(path.get("path") or ""))
    raise ApiError(
        422,
        "Invalid",
        "spec.resourceAttributes: Invalid value: exactly one of nonResourceAttributes or "
        "resourceAttributes must be specified",
    )


def _access_status(access: AccessControl, user: UserInfo, attrs: Attributes) -> dict[str, Any]:
    if not access.enabled:  # the lab's AlwaysAllow mode
        return {"allowed": True}
    decision = access.authz.decide(user, attrs)
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    if decision.errors:
        status["evaluationError"] = ", ".join(decision.errors)
    return status


def review(
    access: AccessControl,
    user: UserInfo,
    plural: str,
    namespace: str,
    body: dict[str, Any],
    timestamp: str,
) -> dict[str, Any]:
    """The answer to a created review object: the body, echoed, with its status filled in."""
    sent = body.get("spec")
    spec: dict[str, Any] = sent if isinstance(sent, dict) else {}
    answer: dict[str, Any] = {
        "kind": body.get("kind"),
        "apiVersion": body.get("apiVersion"),
        "metadata": {**(body.get("metadata") or {}), "creationTimestamp": timestamp},
        "spec": spec,
    }
    if plural == "selfsubjectreviews":
        answer.pop("spec")
        answer["status"] = {"userInfo": user.as_dict()}
    elif plural == "tokenreviews":
        token = str(spec.get("token") or "")
        subject = access.authn.serviceaccount_user(token)
        if subject is None and token in access.authn.admin_tokens:
            subject = ADMIN
        answer["status"] = (
            {"authenticated": True, "user": subject.as_dict(), "audiences": [ISSUER]}
            if subject is not None
            else {"user": {}, "error": "[invalid bearer token, token lookup failed]"}
        )
    elif plural == "selfsubjectaccessreviews":
        answer["status"] = _access_status(access, user, _attributes_of(spec))
    elif plural == "selfsubjectrulesreviews":
        scope = str(spec.get("namespace") or "")
        if MASTERS in user.groups or not access.enabled:
            answer["status"] = {
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": False,
            }
        else:
            answer["status"] = access.authz.rules(user, scope)
    else:  # subjectaccessreviews, localsubjectaccessreviews
        if plural == "localsubjectaccessreviews":
            sent = (spec.get("resourceAttributes") or {}).get("namespace")
            if sent and sent != namespace:
                raise ApiError(
                    400,
                    "BadRequest",
                    f"spec.resourceAttributes.namespace must match namespace: {namespace}",
                )
        subject = UserInfo(
            str(spec.get("user") or ""),
            tuple(spec.get("groups") or ()),
            uid=str(spec.get("uid") or ""),
        )
        if not subject.username and not subject.groups:
            raise ApiError(
                422,
                "Invalid",
                f'{body.get("kind")}.authorization.k8s.io "" is invalid: spec.user: '
                'Invalid value: "": at least one of user or group must be specified',
            )
        answer["status"] = _access_status(
            access,
            subject,
            _attributes_of(spec, namespace if plural == "localsubjectaccessreviews" else ""),
        )
    return answer


def token_request(
    access: AccessControl,
    serviceaccount: dict[str, Any],
    body: dict[str, Any],
    timestamp: str,
    format_time: Callable[[float], str],
) -> dict[str, Any]:
    """TokenRequest on ``serviceaccounts/NAME/token``: a bearer token for the account."""
    spec = dict(body.get("spec") or {})
    seconds = int(spec.get("expirationSeconds") or 3600)
    if seconds < 600:
        raise ApiError(
            422,
            "Invalid",
            f'TokenRequest.authentication.k8s.io "{serviceaccount["metadata"]["name"]}" is '
            f"invalid: spec.expirationSeconds: Invalid value: {seconds}: may not specify a "
            "duration less than 10 minutes",
        )
    seconds = min(seconds, 48 * 3600)
    audiences = list(spec.get("audiences") or [ISSUER])
    namespace = serviceaccount["metadata"]["namespace"]
    token, expires = access.authn.issue(
        namespace, serviceaccount, expiration_seconds=seconds, audiences=audiences
    )
    spec.update(audiences=audiences, expirationSeconds=seconds)
    spec.setdefault("boundObjectRef", None)
    return {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": serviceaccount["metadata"]["name"],
            "namespace": namespace,
            "creationTimestamp": timestamp,
        },
        "spec": spec,
        "status": {"token": token, "expirationTimestamp": format_time(expires)},
    }
