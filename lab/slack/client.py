"""Python clients for the playground's control API, for tests and scripts.

``PlaygroundClient`` is synchronous (urllib): use it when the bot runs elsewhere (another
thread or process). ``AsyncPlaygroundClient`` (aiohttp) is for tests whose bot runs in the
test's own event loop, where a blocking call would stall the bot it waits for. Both expose
the same operations, described once in ``_Operations``.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

import aiohttp

Json = dict[str, Any]
R = TypeVar("R")


class PlaygroundRequestFailed(Exception):
    """The playground refused a control request; ``error`` is its error code."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(f"{status}: {error}")
        self.status = status
        self.error = error


def _drop_none(**fields: Any) -> Json:
    return {k: v for k, v in fields.items() if v is not None}


class _Operations(Generic[R]):
    """Each control operation once; ``send`` makes it synchronous or awaitable."""

    def send(self, method: str, path: str, body: Json | None = None) -> R:
        raise NotImplementedError

    def command(self, user: str, command: str, text: str = "", channel: str | None = None) -> R:
        """Type a slash command as ``user``; answers the delivery record (ack, response)."""
        body = _drop_none(user=user, command=command, text=text, channel=channel)
        return self.send("POST", "/commands", body)

    def click(
        self,
        user: str,
        action_id: str,
        *,
        value: str | None = None,
        channel: str | None = None,
        ts: str | None = None,
        view_id: str | None = None,
        block_id: str | None = None,
        selected: str | None = None,
        ephemeral: bool | None = None,
    ) -> R:
        """Click the newest element with this action_id (and value) that ``user`` can see,
        or the one on message ``ts`` / in view ``view_id``; ``selected`` picks an option."""
        body = _drop_none(
            user=user,
            action_id=action_id,
            value=value,
            channel=channel,
            ts=ts,
            view_id=view_id,
            block_id=block_id,
            selected=selected,
            ephemeral=ephemeral,
        )
        return self.send("POST", "/actions", body)

    def submit(self, view_id: str, values: dict[str, Any], user: str | None = None) -> R:
        """Submit a modal; ``values`` maps action_id (or block_id.action_id) to a value."""
        return self.send("POST", f"/views/{view_id}/submit", _drop_none(values=values, user=user))

    def close_view(self, view_id: str) -> R:
        return self.send("POST", f"/views/{view_id}/close", {})

    def post_message(
        self, user: str, text: str, channel: str | None = None, thread_ts: str | None = None
    ) -> R:
        body = _drop_none(user=user, text=text, channel=channel, thread_ts=thread_ts)
        return self.send("POST", "/messages", body)

    def open_home(self, user: str) -> R:
        return self.send("POST", "/home", {"user": user})

    def configure(self, **settings: Any) -> R:
        """Change request_url, ack_timeout, event_retry_delays or rate_limits."""
        return self.send("PUT", "/app", settings)

    def config(self) -> R:
        return self.send("GET", "/config")

    def _listing(self, kind: str, **query: str | None) -> R:
        params = urllib.parse.urlencode(_drop_none(**query))
        return self.send("GET", f"/{kind}{'?' + params if params else ''}")

    def scenarios(self) -> R:
        """``{"scenarios": [...]}``: what the page's "inject a fault" menu offers."""
        return self.send("GET", "/scenarios")

    def inject(self, scenario: str) -> R:
        """The page's "Inject a fault" (a playground started with a lab, as by ``stratus demo``)."""
        return self.send("POST", f"/scenarios/{scenario}/inject")

    def messages(self, channel: str | None = None, thread_ts: str | None = None) -> R:
        """``{"messages": [...]}``: every stored message, oldest first, with its channel."""
        return self._listing("messages", channel=channel, thread_ts=thread_ts)

    def ephemerals(self, user: str | None = None) -> R:
        return self._listing("ephemerals", user=user)

    def views(self, user: str | None = None) -> R:
        return self._listing("views", user=user)

    def calls(self, method: str | None = None) -> R:
        """``{"calls": [...]}``: the Web API calls the bot made (method, args, ok, error)."""
        return self._listing("calls", method=method)

    def deliveries(self) -> R:
        return self._listing("deliveries")

    def reset(self) -> R:
        return self.send("POST", "/reset", {})

    def set_group_members(self, group: str, users: list[str]) -> R:
        """Change a user group's membership, as a workspace admin would."""
        return self.send("POST", f"/usergroups/{group}/users", {"users": users})


class PlaygroundClient(_Operations[Json]):
    def __init__(self, url: str, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def send(self, method: str, path: str, body: Json | None = None) -> Json:
        data = json.dumps(body).encode() if body is not None else None
        http = urllib.request.Request(
            f"{self.url}/playground/v1{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(http, timeout=self.timeout) as response:
                result: Json = json.loads(response.read())
                return result
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                code = str(json.loads(raw).get("error"))
            except (ValueError, AttributeError):
                code = raw.decode(errors="replace")
            raise PlaygroundRequestFailed(error.code, code) from error

    def wait_for(self, check: Callable[[], Any], timeout: float = 10.0) -> Any:
        """Poll ``check`` until it returns something truthy (the bot works in the background)."""
        deadline = time.monotonic() + timeout
        while True:
            result = check()
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError("the playground never showed what was expected")
            time.sleep(0.05)


class AsyncPlaygroundClient(_Operations[Coroutine[Any, Any, Json]]):
    def __init__(self, url: str, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def send(self, method: str, path: str, body: Json | None = None) -> Coroutine[Any, Any, Json]:
        return self._send(method, path, body)

    async def _send(self, method: str, path: str, body: Json | None) -> Json:
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.request(method, f"{self.url}/playground/v1{path}", json=body) as response,
        ):
            result: Json = await response.json()
            if response.status >= 400:
                raise PlaygroundRequestFailed(response.status, str(result.get("error")))
            return result

    async def wait_for(self, check: Callable[[], Awaitable[Any]], timeout: float = 10.0) -> Any:
        """Await ``check()`` until it is truthy."""
        deadline = time.monotonic() + timeout
        while True:
            result = await check()
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError("the playground never showed what was expected")
            await asyncio.sleep(0.05)
