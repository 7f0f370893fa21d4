"""Requests signed as Slack signs them, and tampered ones: the playground's signature agrees
with slack_sdk's SignatureVerifier, and a real bolt app rejects forged signatures, stale
timestamps and tampered bodies (401) without running a handler. Property-tested with
generated payloads."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk.signature import SignatureVerifier

from lab.slack.delivery import signature
from lab.slack.server import PlaygroundServer
from tests.lab.slack.conftest import make_app, serve

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"


@dataclass
class ThreadedBolt:
    url: str
    secret: str
    ran: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def bolt() -> Iterator[ThreadedBolt]:
    """A bolt app (HTTP mode) on its own thread and loop, so plain sync requests reach it."""
    playground = PlaygroundServer().start()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    async def main() -> None:
        app = make_app(playground)
        bolt = ThreadedBolt("", playground.signing_secret)

        @app.command("/stratus")
        async def command(ack: Any) -> None:
            bolt.ran.append("command")
            await ack()

        @app.action("approve")
        async def approve(ack: Any) -> None:
            bolt.ran.append("action")
            await ack()

        bolt.url, runner = await serve(app)
        stop = asyncio.Event()
        holder.update(bolt=bolt, stop=stop, loop=asyncio.get_running_loop())
        ready.set()
        await stop.wait()
        await runner.cleanup()

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield holder["bolt"]
    holder["loop"].call_soon_threadsafe(holder["stop"].set)
    thread.join(10)
    playground.stop()


def post(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        with error:  # an error response holds its connection until closed
            return int(error.code)


def signed_headers(
    secret: str,
    body: bytes,
    *,
    timestamp: int | None = None,
    content_type: str = "application/x-www-form-urlencoded",
) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": signature(secret, ts, body),
    }


def command_body(text: str) -> bytes:
    form = {
        "command": "/stratus",
        "text": text,
        "user_id": "U0ALICE",
        "team_id": "T0PLAYGRND",
        "channel_id": "C0INCIDENT",
        "trigger_id": "1.2.3",
        "response_url": "http://x/",
    }
    return urllib.parse.urlencode(form).encode()


def click_body(value: str) -> bytes:
    payload = {
        "type": "block_actions",
        "user": {"id": "U0BOB"},
        "team": {"id": "T0PLAYGRND"},
        "actions": [
            {
                "type": "button",
                "action_id": "approve",
                "value": value,
                "block_id": "b",
                "action_ts": "1.2",
            }
        ],
    }
    return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()


def test_playground_signature_is_slacks() -> None:
    verifier = SignatureVerifier(SECRET)
    body = b"token=x&command=%2Fstratus&text=investigate+shop"
    ts = str(int(time.time()))
    assert signature(SECRET, ts, body) == verifier.generate_signature(timestamp=ts, body=body)
    assert verifier.is_valid(body, ts, signature(SECRET, ts, body))


def test_correctly_signed_requests_run_the_handler(bolt: ThreadedBolt) -> None:
    before = len(bolt.ran)
    body = command_body("status")
    assert post(bolt.url, body, signed_headers(bolt.secret, body)) == 200
    body = click_body("p-1")
    assert post(bolt.url, body, signed_headers(bolt.secret, body)) == 200
    assert bolt.ran[before:] == ["command", "action"]


def test_forged_stale_and_unsigned_requests_are_refused(bolt: ThreadedBolt) -> None:
    before = len(bolt.ran)
    body = command_body("investigate shop")
    assert post(bolt.url, body, signed_headers("not-the-secret", body)) == 401
    stale = int(time.time()) - 5 * 60 - 5
    assert post(bolt.url, body, signed_headers(bolt.secret, body, timestamp=stale)) == 401
    assert post(bolt.url, body, {"Content-Type": "application/x-www-form-urlencoded"}) == 401
    assert bolt.ran[before:] == []


def test_malformed_payloads_run_nothing(bolt: ThreadedBolt) -> None:
    """Bolt parses the body before it checks the signature, so a body it cannot decode fails
    with 500 whether signed or not (a bot that wants a clean 400 must check first); either
    way no handler runs."""
    before = len(bolt.ran)
    for body, content_type in [
        (b"payload=%7Bnot-json", "application/x-www-form-urlencoded"),
        (b"{not json", "application/json"),
        (b"payload=%7B%7D", "application/x-www-form-urlencoded"),
        (b"payload=%5B1%2C2%5D", "application/x-www-form-urlencoded"),
    ]:
        assert post(bolt.url, body, {"Content-Type": content_type}) >= 400
        signed = signed_headers(bolt.secret, body, content_type=content_type)
        assert post(bolt.url, body, signed) >= 400
    assert bolt.ran[before:] == []


TAMPERINGS = st.sampled_from(["body", "timestamp", "secret", "signature", "stale"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(max_size=200),
    secret=st.text(alphabet="0123456789abcdef", min_size=8, max_size=40),
    how=TAMPERINGS,
    position=st.integers(min_value=0),
)
def test_tampered_requests_fail_verification(
    text: str, secret: str, how: str, position: int
) -> None:
    verifier = SignatureVerifier(secret)
    body = command_body(text)
    now = int(time.time())
    ts = str(now)
    sig = signature(secret, ts, body)
    assert verifier.is_valid(body, ts, sig)
    if how == "body":
        index = position % len(body)
        body = body[:index] + bytes([body[index] ^ 0x01]) + body[index + 1 :]
    elif how == "timestamp":
        ts = str(now - 1 - position % 200)
    elif how == "secret":
        sig = signature(secret + "x", ts, body)
    elif how == "signature":
        index = 3 + position % (len(sig) - 3)
        sig = sig[:index] + ("0" if sig[index] != "0" else "1") + sig[index + 1 :]
    else:
        ts = str(now - 301 - position % 10_000)
        sig = signature(secret, ts, body)
    assert not verifier.is_valid(body, ts, sig)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.text(max_size=100), how=TAMPERINGS, position=st.integers(min_value=0))
def test_bolt_rejects_every_tampered_click_and_runs_nothing(
    bolt: ThreadedBolt, value: str, how: str, position: int
) -> None:
    before = len(bolt.ran)
    body = click_body(value)
    headers = signed_headers(bolt.secret, body)
    if how == "body":
        index = position % len(body)
        body = body[:index] + bytes([body[index] ^ 0x01]) + body[index + 1 :]
    elif how == "timestamp":
        headers["X-Slack-Request-Timestamp"] = str(int(time.time()) - 1 - position % 200)
    elif how == "secret":
        headers = signed_headers(bolt.secret + "x", body)
    elif how == "signature":
        sig = headers["X-Slack-Signature"]
        index = 3 + position % (len(sig) - 3)
        headers["X-Slack-Signature"] = (
            sig[:index] + ("0" if sig[index] != "0" else "1") + sig[index + 1 :]
        )
    else:
        headers = signed_headers(
            bolt.secret, body, timestamp=int(time.time()) - 301 - position % 10_000
        )
    status = post(bolt.url, body, headers)
    # A flipped byte can make the payload undecodable, which bolt fails (500) before it
    # checks the signature; everything else is a 401.
    assert status == 401 or (how == "body" and status == 500)
    assert bolt.ran[before:] == []
