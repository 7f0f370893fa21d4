"""API errors as the Kubernetes API server reports them: a ``Status`` object and an HTTP code."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error the emulator answers with a ``Status`` body instead of the requested object."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        kind: str = "",
        name: str = "",
        group: str = "",
        causes: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.kind = kind
        self.name = name
        self.group = group
        self.causes = causes or []

    def status(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = self.causes
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # omitempty: an unknown reason is left out
            body["reason"] = self.reason
        # The real server's field order: details (when any) come before the code.
        if details:
            body["details"] = details
        body["code"] = self.code
        return body


def not_found(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(
        404, "NotFound", f'{qualified} "{name}" not found', kind=resource, name=name, group=group
    )


def already_exists(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified} "{name}" already exists',
        kind=resource,
        name=name,
        group=group,
    )


def conflict(resource: str, name: str, group: str = "") -> ApiError:
    qualified = f"{resource}.{group}" if group else resource
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        kind=resource,
        name=name,
        group=group,
    )


_CAUSE_REASONS = (
    ("Required value", "FieldValueRequired"),
    ("Forbidden", "FieldValueForbidden"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Not found", "FieldValueNotFound"),
)


def _cause_reason(message: str) -> str:
    """The StatusCause reason a field error of this wording carries on a real server."""
    return next(
        (r for prefix, r in _CAUSE_REASONS if message.startswith(prefix)), "FieldValueInvalid"
    )


def invalid(kind: str, name: str, causes: list[tuple[str, str]], group: str = "") -> ApiError:
    """422 Invalid, with one cause per (field, problem) as the real server words them."""
    summary = ", ".join(f"{fld}: {msg}" for fld, msg in causes)
    if len(causes) > 1:  # an aggregate of several errors prints as a bracketed list
        summary = f"[{summary}]"
    qualified = f"{kind}.{group}" if group else kind
    return ApiError(
        422,
        "Invalid",
        f'{qualified} "{name}" is invalid: {summary}',
        kind=kind,
        name=name,
        group=group,
        causes=[
            {"reason": _cause_reason(msg), "message": msg, "field": fld} for fld, msg in causes
        ],
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str, *, kind: str = "", name: str = "") -> ApiError:
    return ApiError(403, "Forbidden", message, kind=kind, name=name)


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types "
        f"include: application/json-patch+json, application/merge-patch+json, "
        f"application/apply-patch+yaml, "
        f'application/strategic-merge-patch+json (got "{content_type}")',
    )
