"""Requests that Slack did not sign — forged signatures, replayed timestamps (older than five
minutes), tampered or malformed bodies — are refused by the running bot over HTTP and change
nothing: no event in the store, no Web API call. Property-tested with generated payloads."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.app import StratusBot
from bot.config import BotConfig
from lab.slack.client import PlaygroundClient
from lab.slack.server import PlaygroundServer
from store.events import EventStore
from tests.bot.conftest import make_runtime
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient


class ThreadedBot:
    """The bot on its own event loop thread, so synchronous hypothesis tests can hit it."""

    def __init__(self, bot: StratusBot) -> None:
        self.bot = bot
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> ThreadedBot:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.bot.start(), self.loop).result(30)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.bot.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def signed_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """A playground, a bot on it (HTTP mode), and the bot's store path."""
    from lab.runner import LabServer, write_kubeconfig

    server = LabServer(apps=["hotel"]).start()
    config_path = write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", server.url, "hotel")
    playground = PlaygroundServer().start()
    kube = KubeClient(kubeconfig=str(config_path))
    db = tmp_path_factory.mktemp("bot") / "bot.db"
    bot = StratusBot(
        make_runtime(kube, db, PolicyBox()),
        BotConfig(
            mode="http",
            bot_token=playground.bot_token,
            signing_secret=playground.signing_secret,
            api_url=playground.api_url,
            port=0,
        ),
    )
    with ThreadedBot(bot):
        yield bot.url, playground.signing_secret, db
        calls = PlaygroundClient(playground.url).calls()["calls"]
        # Nothing a refused request could have caused: only the bot's own start-up calls.
        assert all(c["method"] in ("auth.test",) for c in calls), calls
    kube.close()
    playground.stop()
    server.stop()


def post(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        with error:  # an error response holds its connection until closed
            return int(error.code)


def sign(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def command_body(text: str, user: str = "U0ALICE") -> bytes:
    return urllib.parse.urlencode(
        {
            "command": "/stratus",
            "text": text,
            "user_id": user,
            "channel_id": "C0INCIDENT",
            "team_id": "T0PLAYGRND",
            "response_url": "http://127.0.0.1:9/x",
            "trigger_id": "1.2.3",
        }
    ).encode()


FORM = {"Content-Type": "application/x-www-form-urlencoded"}
texts = st.text(max_size=200)


def events_after(db: Path) -> int:
    from store.db import Store

    store = Store(db)
    try:
        return EventStore(store).last_seq()
    finally:
        store.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, secret=st.text(min_size=1, max_size=40))
def test_a_forged_signature_is_refused_and_changes_nothing(
    signed_world: tuple[str, str, Path], text: str, secret: str
) -> None:
    url, real, db = signed_world
    body = command_body("investigate hotel " + text)
    stamp = str(int(time.time()))
    signature = sign(secret if secret != real else secret + "x", stamp, body)
    before = events_after(db)
    headers = {**FORM, "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}
    assert post(url, body, headers) == 401
    assert events_after(db) == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(age=st.integers(min_value=301, max_value=10**7), text=texts)
def test_a_replayed_timestamp_is_refused_even_when_signed(
    signed_world: tuple[str, str, Path], age: int, text: str
) -> None:
    url, secret, db = signed_world
    body = command_body("investigate hotel " + text)
    stamp = str(int(time.time()) - age)
    before = events_after(db)
    headers = {
        **FORM,
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": sign(secret, stamp, body),
    }
    assert post(url, body, headers) == 401
    assert events_after(db) == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=300))
def test_a_tampered_body_is_refused(signed_world: tuple[str, str, Path], body: bytes) -> None:
    url, secret, db = signed_world
    original = command_body("undo last")
    stamp = str(int(time.time()))
    signature = sign(secret, stamp, original)
    tampered = body if body != original else body + b"x"
    before = events_after(db)
    headers = {**FORM, "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature}
    assert post(url, tampered, headers) == 401
    assert events_after(db) == before


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=st.text(max_size=300))
def test_a_signed_but_malformed_payload_is_refused(
    signed_world: tuple[str, str, Path], payload: str
) -> None:
    url, secret, db = signed_world
    body = urllib.parse.urlencode({"payload": "{" + payload}).encode()
    stamp = str(int(time.time()))
    before = events_after(db)
    headers = {
        **FORM,
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": sign(secret, stamp, body),
    }
    assert post(url, body, headers) == 400
    assert events_after(db) == before


def test_missing_headers_are_refused(signed_world: tuple[str, str, Path]) -> None:
    url = signed_world[0]
    assert post(url, command_body("pause"), FORM) == 401


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
wrong_shapes = st.one_of(
    json_values.filter(lambda v: not isinstance(v, dict)),
    st.builds(
        lambda kind, part, value: {"type": kind, part: value},
        st.sampled_from(["block_actions", "view_submission", "event_callback"]),
        st.sampled_from(["actions", "view", "event", "user"]),
        json_values.filter(lambda v: not isinstance(v, dict) and v != []),
    ),
    st.just({"type": "block_actions", "user": {"id": "U0ALICE"}, "actions": [{}, 1]}),
    st.just({"type": "block_actions", "user": {"id": "U0ALICE"}, "actions": []}),
    st.just({"type": 7}),
)


def signed_post(url: str, secret: str, body: bytes, content_type: str) -> int:
    stamp = str(int(time.time()))
    headers = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": sign(secret, stamp, body),
    }
    return post(url, body, headers)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=wrong_shapes)
def test_a_signed_payload_of_the_wrong_shape_is_refused_not_crashed_on(
    signed_world: tuple[str, str, Path], value: object
) -> None:
    url, secret, db = signed_world
    before = events_after(db)
    form = urllib.parse.urlencode({"payload": json.dumps(value)}).encode()
    assert signed_post(url, secret, form, FORM["Content-Type"]) == 400
    assert signed_post(url, secret, json.dumps(value).encode(), "application/json") == 400
    assert events_after(db) == before


def test_a_signed_but_absurdly_nested_payload_is_refused(
    signed_world: tuple[str, str, Path],
) -> None:
    url, secret, _db = signed_world
    deep = ("[" * 50_000 + "]" * 50_000).encode()
    assert signed_post(url, secret, deep, "application/json") == 400
