"""The Web API transport: ``POST|GET /api/{method}`` with Slack's argument encodings (query,
form, JSON with a bearer token), token checks, per-method rate limits (429 + Retry-After) and
Slack's ``{"ok": false, "error": ...}`` answers. The methods themselves live in
``lab.slack.methods``; every call is recorded for the control API.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from lab.slack.workspace import Json, Workspace

BOT = "bot"
APP = "app"

# Arguments that Slack accepts as JSON-encoded strings in a form or query.
_JSON_ARGS = ("blocks", "attachments", "view", "metadata")


class SlackError(Exception):
    """A Web API error answer: ``error`` plus any extra top-level fields."""

    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra


@dataclass
class Call:
    """One Web API call as a method sees it."""

    workspace: Workspace
    args: Json
    base_url: str
    token_kind: str
    socket_url: Callable[[], str]

    def str_arg(self, name: str, error: str = "invalid_arguments") -> str:
        value = self.args.get(name)
        if value is None or value == "":
            raise SlackError(error)
        return str(value)

    def opt_str(self, name: str) -> str | None:
        value = self.args.get(name)
        return None if value is None or value == "" else str(value)

    def flag(self, name: str) -> bool:
        return str(self.args.get(name, "")).lower() in ("1", "true")

    def int_arg(self, name: str, default: int) -> int:
        value = self.args.get(name)
        if value in (None, ""):
            return default
        try:
            return int(str(value))
        except ValueError as error:
            raise SlackError("invalid_arguments") from error


Method = Callable[[Call], Json]


@dataclass(frozen=True)
class MethodSpec:
    handler: Method
    token_kinds: tuple[str, ...] = (BOT,)


class RateLimiter:
    """A sliding window (a minute, as Slack counts) per method; limits can change while
    running."""

    def __init__(
        self, limits: dict[str, int], clock: Callable[[], float], window: Callable[[], float]
    ) -> None:
        self.limits = limits
        self.clock = clock
        self.window = window
        self._calls: dict[str, deque[float]] = {}

    def retry_after(self, method: str) -> int | None:
        """Seconds to wait when this call exceeds the method's rate, else ``None`` (counted)."""
        limit = self.limits.get(method)
        now, span = self.clock(), self.window()
        window = self._calls.setdefault(method, deque())
        while window and window[0] <= now - span:
            window.popleft()
        if limit is not None and len(window) >= max(limit, 0):
            # A limit of 0 (or less) refuses every call: there is no oldest call to wait
            # for, so the whole window is the wait.
            oldest = window[0] if window else now
            return max(1, math.ceil(oldest + span - now))
        window.append(now)
        return None

    def reset(self) -> None:
        self._calls.clear()


def _bearer(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


async def _arguments(request: web.Request) -> tuple[Json, str | None]:
    """The call's arguments and the problem with their encoding, if any."""
    args: Json = dict(request.query)
    if request.method == "POST" and request.can_read_body:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError:
                return args, "invalid_json"
            if not isinstance(body, dict):
                return args, "invalid_json"
            args.update(body)
            args.pop("token", None)  # Slack ignores a token inside a JSON body
        else:
            form = await request.post()
            args.update({k: v for k, v in form.items() if isinstance(v, str)})
    for name in _JSON_ARGS:
        value = args.get(name)
        if isinstance(value, str) and value:
            try:
                args[name] = json.loads(value)
            except ValueError:
                return args, "invalid_blocks_format" if name == "blocks" else "invalid_arguments"
    return args, None


def _answer(body: Json, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        text=json.dumps(body),
        content_type="application/json",
        charset="utf-8",
        headers=headers,
    )


class WebApi:
    """Dispatches ``/api/{method}`` to the method table."""

    def __init__(
        self,
        workspace: Workspace,
        methods: dict[str, MethodSpec],
        *,
        base_url: Callable[[], str],
        socket_url: Callable[[], str],
    ) -> None:
        self.workspace = workspace
        self.methods = methods
        self.base_url = base_url
        self.socket_url = socket_url
        config = workspace.config
        self.limiter = RateLimiter(config.rate_limits, workspace.clock, lambda: config.rate_window)

    def routes(self) -> list[web.RouteDef]:
        return [web.route("*", "/api/{method}", self.handle)]

    def _token_kind(self, token: str) -> str | None:
        config = self.workspace.config
        if token == config.bot_token:
            return BOT
        if token == config.app_token:
            return APP
        return None

    async def handle(self, request: web.Request) -> web.Response:
        name = request.match_info["method"]
        args, problem = await _arguments(request)
        token = _bearer(request) or (str(args.pop("token")) if args.get("token") else None)
        args.pop("token", None)
        response, status, headers = self._dispatch(name, args, token, problem)
        self.workspace.record_call(name, args, response, status)
        return _answer(response, status, headers)

    def _dispatch(
        self, name: str, args: Json, token: str | None, problem: str | None
    ) -> tuple[Json, int, dict[str, str] | None]:
        spec = self.methods.get(name)
        if spec is None:
            return {"ok": False, "error": "unknown_method"}, 200, None
        if token is None:
            return {"ok": False, "error": "not_authed"}, 200, None
        kind = self._token_kind(token)
        if kind is None:
            return {"ok": False, "error": "invalid_auth"}, 200, None
        if kind not in spec.token_kinds:
            return {"ok": False, "error": "not_allowed_token_type"}, 200, None
        retry_after = self.limiter.retry_after(name)
        if retry_after is not None:
            return {"ok": False, "error": "ratelimited"}, 429, {"Retry-After": str(retry_after)}
        if problem is not None:
            return {"ok": False, "error": problem}, 200, None
        call = Call(self.workspace, args, self.base_url(), kind, self.socket_url)
        try:
            result = spec.handler(call)
        except SlackError as error:
            return {"ok": False, "error": error.error, **error.extra}, 200, None
        return {"ok": True, **result}, 200, None
