"""Delivering requests to the app as Slack does: over the app's Socket Mode connection when it
has one, else as signed HTTP POSTs to its request URL. Acknowledgements are awaited for
``ack_timeout`` (3 s); events that are not acknowledged are retried with
``X-Slack-Retry-Num``/``X-Slack-Retry-Reason``; what an ack carries is applied (a command's
reply, a view submission's ``response_action``). Every delivery is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import aiohttp

from lab.slack import views
from lab.slack.payloads import EVENTS_API, INTERACTIVE, SLASH_COMMAND, Outgoing
from lab.slack.responses import apply_response
from lab.slack.socket_mode import SocketHub
from lab.slack.webapi import SlackError
from lab.slack.workspace import Json, Workspace

USER_AGENT = "Slackbot 1.0 (+https://api.slack.com/robots)"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``X-Slack-Signature``: HMAC-SHA256 of ``v0:{timestamp}:{body}`` with the secret."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def http_body(out: Outgoing) -> tuple[bytes, str]:
    """The body and content type Slack posts for a request."""
    if out.kind == SLASH_COMMAND:
        return urllib.parse.urlencode(out.form or {}).encode(), "application/x-www-form-urlencoded"
    if out.kind == INTERACTIVE:
        form = {"payload": json.dumps(out.payload)}
        return urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded"
    return json.dumps(out.payload).encode(), "application/json"


class _Failed(Exception):
    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


class Deliverer:
    def __init__(
        self, ws: Workspace, hub: SocketHub, clock: Callable[[], float] = time.time
    ) -> None:
        self.ws = ws
        self.hub = hub
        self.clock = clock
        self._session: aiohttp.ClientSession | None = None
        self._retries: set[asyncio.Task[None]] = set()

    async def close(self) -> None:
        for task in list(self._retries):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._session is not None:
            await self._session.close()

    def cancel_retries(self) -> None:
        for task in list(self._retries):
            task.cancel()

    async def deliver(self, out: Outgoing) -> Json:
        """Deliver once and wait for the ack; events are retried in the background."""
        record: Json = {
            "id": self.ws.new_id("DL"),
            "kind": out.kind,
            "label": out.label,
            "user": out.user,
            "payload": out.payload,
            "attempts": [],
            "ok": False,
            "error": None,
            "response": None,
        }
        self.ws.deliveries.append(record)
        if not await self._try(out, record, 0, ""):
            delays = self.ws.config.event_retry_delays if out.kind == EVENTS_API else ()
            if delays:
                task = asyncio.create_task(self._retry(out, record, delays))
                self._retries.add(task)
                task.add_done_callback(self._retries.discard)
        self.ws.changed()
        return record

    async def _retry(self, out: Outgoing, record: Json, delays: tuple[float, ...]) -> None:
        for number, delay in enumerate(delays, start=1):
            await asyncio.sleep(delay)
            reason = str(record["attempts"][-1]["reason"])
            if await self._try(out, record, number, reason):
                break
        self.ws.changed()

    async def _try(self, out: Outgoing, record: Json, retry_num: int, reason: str) -> bool:
        started = time.perf_counter()
        attempt: Json = {"retry_num": retry_num, "status": None, "ms": None, "reason": None}
        record["attempts"].append(attempt)
        try:
            if self.hub.connected:
                record["transport"] = "socket_mode"
                response: Any = await self.hub.send(
                    out.kind,
                    out.payload,
                    timeout=self.ws.config.ack_timeout,
                    retry_attempt=retry_num,
                    retry_reason=reason,
                )
                attempt["status"] = 200
            else:
                record["transport"] = "http"
                attempt["status"], response = await self._post(out, retry_num, reason)
        except _Failed as failure:
            attempt["status"], attempt["reason"] = failure.status, failure.reason
            record["error"] = (
                "operation_timeout" if failure.reason == "http_timeout" else ("dispatch_failed")
            )
            return False
        except TimeoutError:
            attempt["reason"] = "http_timeout"
            record["error"] = "operation_timeout"
            return False
        except ConnectionError:
            attempt["reason"] = "connection_failed"
            record["error"] = "dispatch_failed"
            return False
        finally:
            attempt["ms"] = round((time.perf_counter() - started) * 1000, 2)
        record.update(ok=True, error=None, response=response, ack_ms=attempt["ms"])
        try:
            self._apply(out, response)
        except SlackError as error:
            record["response_error"] = error.error
        return True

    async def _post(self, out: Outgoing, retry_num: int, reason: str) -> tuple[int, Any]:
        url = self.ws.config.request_url
        if not url:
            raise _Failed("no_request_url")
        body, content_type = http_body(out)
        timestamp = str(int(self.clock()))
        headers = {
            "Content-Type": content_type,
            "User-Agent": USER_AGENT,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": signature(self.ws.config.signing_secret, timestamp, body),
        }
        if retry_num:
            headers["X-Slack-Retry-Num"] = str(retry_num)
            headers["X-Slack-Retry-Reason"] = reason
        if self._session is None:
            self._session = aiohttp.ClientSession()
        timeout = aiohttp.ClientTimeout(total=self.ws.config.ack_timeout)
        try:
            async with self._session.post(
                url, data=body, headers=headers, timeout=timeout
            ) as answer:
                text = await answer.text()
                status = answer.status
                is_json = answer.content_type == "application/json"
        except TimeoutError as error:
            raise _Failed("http_timeout") from error
        except aiohttp.ClientError as error:
            raise _Failed("connection_failed") from error
        if not 200 <= status < 300:
            raise _Failed("http_error", status)
        if is_json or text.startswith("{"):
            try:
                return status, json.loads(text)
            except ValueError:
                return status, text
        return status, text

    def _apply(self, out: Outgoing, response: Any) -> None:
        if out.kind == SLASH_COMMAND:
            if isinstance(response, str):
                response = {"text": response} if response else {}
            if isinstance(response, dict) and (response.get("text") or response.get("blocks")):
                apply_response(
                    self.ws, channel=out.context["channel"], user=out.user, body=response
                )
        elif out.payload.get("type") == "view_submission":
            self._apply_view_response(out, response if isinstance(response, dict) else {})

    def _apply_view_response(self, out: Outgoing, response: Json) -> None:
        view = self.ws.views.get(out.context["view"])
        if view is None:
            return
        action = response.get("response_action")
        view.body.pop("errors", None)
        if action == "errors":
            view.body["errors"] = response.get("errors") or {}
            self.ws.changed()
        elif action == "update" and isinstance(response.get("view"), dict):
            views.replace_view(self.ws, view, response["view"])
        elif action == "push" and isinstance(response.get("view"), dict):
            pushed = views.new_view(
                self.ws, view.user, response["view"], root_id=view.root_id, previous=view.id
            )
            self.ws.modal_stacks.setdefault(view.user, []).append(pushed.id)
            self.ws.changed()
        else:
            views.close_modal(self.ws, view, all_views=action == "clear")
