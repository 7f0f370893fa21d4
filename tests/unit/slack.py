"""Slack without a socket, for the unit tier: requests signed with the app's signing secret and
dispatched into the bolt app in process (``AsyncApp.async_dispatch``, as bolt-python's own
scenario tests do), and a Web API that answers in process and records every call the handlers
make. The bot's middleware, listeners and text and the Slack SDK's client run unchanged; only
the aiohttp session under that client is replaced, by one that never opens a connection. The HTTP
server, the playground and the browser are the e2e tier's (tests/bot/, tests/lab/slack/)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

SIGNING_SECRET = "unit-signing-secret"
TEAM = "T0UNIT"
BOT_USER = "U0BOT"
API_URL = "http://slack.invalid/api/"  # never resolved: InProcessSlack answers


@dataclass(frozen=True)
class Call:
    method: str
    args: dict[str, Any]


class _Response:
    """What slack_sdk reads of an aiohttp response."""

    content_type = "application/json"

    def __init__(self, body: dict[str, Any]) -> None:
        self.status = 200
        self.headers = {"content-type": "application/json"}
        self.body = body

    async def json(self) -> dict[str, Any]:
        return self.body

    async def text(self) -> str:
        return json.dumps(self.body)


class _Exchange:
    def __init__(self, response: _Response) -> None:
        self.response = response

    async def __aenter__(self) -> _Response:
        return self.response

    async def __aexit__(self, *exc: object) -> None:
        return None


class InProcessSlack:
    """The Web API in process, as the aiohttp session slack_sdk sends through (bolt gives every
    request's client the app client's session, so the middleware's and the listeners' calls
    arrive here too). Every call is answered ``ok`` with what ``answers`` holds for its method
    (a dict, or a function of the call's arguments) and recorded."""

    def __init__(self, answers: dict[str, Any] | None = None) -> None:
        self.closed = False
        self.calls: list[Call] = []
        self.answers: dict[str, Any] = {
            "auth.test": {"user_id": BOT_USER, "bot_id": "B0BOT", "team_id": TEAM},
            "chat.postMessage": lambda a: {"channel": a.get("channel"), "ts": self._ts()},
            **(answers or {}),
        }

    def _ts(self) -> str:
        return f"{1_700_000_000 + len(self.calls)}.000100"

    def request(self, method: str, url: str, **req_args: Any) -> _Exchange:
        assert url.startswith(API_URL), url
        api_method = url.removeprefix(API_URL)
        data = req_args.get("data")
        args = {
            **(req_args.get("params") or {}),
            **(data if isinstance(data, dict) else {}),
            **(req_args.get("json") or {}),
        }
        self.calls.append(Call(api_method, args))
        answer = self.answers.get(api_method, {})
        return _Exchange(_Response({"ok": True, **(answer(args) if callable(answer) else answer)}))

    async def close(self) -> None:
        self.closed = True

    def client(self) -> AsyncWebClient:
        """The bot's Web API client, sending through this session."""
        return AsyncWebClient(token="xoxb-unit", base_url=API_URL, session=self)  # type: ignore[arg-type]

    def called(self, method: str) -> list[dict[str, Any]]:
        return [c.args for c in self.calls if c.method == method]

    async def wait_for(
        self, method: str, check: Callable[[dict[str, Any]], bool] = lambda _: True
    ) -> dict[str, Any]:
        """The first call of ``method`` that passes ``check``, once a listener made it (work
        after the acknowledgement runs in the background)."""
        for _ in range(500):
            found = [a for a in self.called(method) if check(a)]
            if found:
                return found[0]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no {method} call; calls: {[c.method for c in self.calls]}")


def signed(body: str, *, secret: str = SIGNING_SECRET, age: float = 0.0) -> dict[str, str]:
    """The headers Slack sends with ``body``: a timestamp and its v0 signature."""
    timestamp = str(int(time.time() - age))
    digest = hmac.new(secret.encode(), f"v0:{timestamp}:{body}".encode(), hashlib.sha256)
    return {
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": f"v0={digest.hexdigest()}",
    }


async def dispatch(
    app: AsyncApp, body: str, *, content_type: str, headers: dict[str, str] | None = None
) -> BoltResponse:
    sent = {"content-type": content_type, **(headers if headers is not None else signed(body))}
    return await app.async_dispatch(AsyncBoltRequest(body=body, headers=sent))


async def command(app: AsyncApp, text: str, *, user: str, channel: str = "C0UNIT") -> BoltResponse:
    body = urlencode(
        {
            "command": "/stratus",
            "text": text,
            "user_id": user,
            "channel_id": channel,
            "team_id": TEAM,
            "trigger_id": "1.2.3",
            "response_url": "http://slack.invalid/commands/1",
        }
    )
    return await dispatch(app, body, content_type="application/x-www-form-urlencoded")


async def click(app: AsyncApp, payload: dict[str, Any]) -> BoltResponse:
    body = urlencode({"payload": json.dumps(payload)})
    return await dispatch(app, body, content_type="application/x-www-form-urlencoded")


def acknowledged(response: BoltResponse) -> str:
    """The text a command's acknowledgement shows the user."""
    assert response.status == 200, (response.status, response.body)
    body = response.body or ""
    # bolt sends a text-only acknowledgement as plain text, anything more as JSON
    return str(json.loads(body)["text"]) if body.startswith("{") else body
