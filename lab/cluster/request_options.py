"""What a request says besides its path: query options (``dryRun``, ``fieldManager``,
``force``) and its body (JSON, YAML, or the Kubernetes protobuf encoding)."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from lab.cluster import managed_fields, protobuf
from lab.cluster.errors import ApiError, bad_request

MAX_BODY = 8 * 1024 * 1024


def dry_run(request: web.Request) -> bool:
    return _dry_run_values(request.query.getall("dryRun", []))


def options_dry_run(options: dict[str, object]) -> bool:
    """A DeleteOptions body's own ``dryRun`` (where kubectl's ``--dry-run=server`` puts it)."""
    values = options.get("dryRun") or []
    if not isinstance(values, list):
        raise bad_request("DeleteOptions.dryRun must be a list")
    return _dry_run_values([str(v) for v in values])


def _dry_run_values(values: list[str]) -> bool:
    for value in values:
        if value != "All":
            raise bad_request(f'Invalid dryRun value "{value}": only "All" is supported')
    return bool(values)


def field_manager(request: web.Request, *, apply: bool = False) -> str:
    """Who a write is recorded as: ``fieldManager``, else (not for an apply) the User-Agent."""
    manager = request.query.get("fieldManager", "")
    managed_fields.validate_options(manager=manager, apply=apply, force=force(request))
    return manager or managed_fields.manager_from_user_agent(request.headers.get("User-Agent", ""))


async def read_body(request: web.Request) -> bytes:
    if request.content_length and request.content_length > MAX_BODY:
        raise ApiError(413, "RequestEntityTooLarge", "the request body is too large")
    return await request.read()


async def read_object(request: web.Request) -> Any:
    """The request body as an object: JSON, YAML, or the Kubernetes protobuf encoding."""
    body = await read_body(request)
    if protobuf.is_protobuf(request.headers.get("Content-Type", "")):
        return protobuf.decode_object(body)
    return decode_json(body)


def decode_json(body: bytes) -> Any:
    text = body.decode("utf-8", errors="replace")
    try:
        return json.loads(text or "null")
    except ValueError:
        pass
    try:  # kubectl and scripts sometimes send YAML; the real server accepts it too
        import yaml

        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise bad_request(f"error decoding request body: {exc}") from exc


def force(request: web.Request) -> bool:
    return request.query.get("force", "false") == "true"


def grace_period(request: web.Request) -> int | None:
    """``?gracePeriodSeconds=N`` of a DELETE (the body's DeleteOptions may say it too)."""
    text = request.query.get("gracePeriodSeconds")
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise bad_request(
            f'gracePeriodSeconds: Invalid value: "{text}": must be an integer'
        ) from None
