"""Signed but malformed payloads — a real payload with one part of the wrong JSON type, or
missing — get a 400 and at most one log line, never a 500 or a traceback: slash commands,
clicks (``block_actions``), modal submissions (``view_submission``) and events, generated
with hypothesis from the payloads Slack sends and posted, signed, to the running bot."""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.app import StratusBot
from bot.config import BotConfig
from lab.slack.server import PlaygroundServer
from tests.bot.conftest import make_runtime
from tests.bot.test_signatures import FORM, ThreadedBot, events_after, signed_post
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

USER = {"id": "U0ALICE", "username": "alice", "name": "alice", "team_id": "T0PLAYGRND"}
TEAM = {"id": "T0PLAYGRND", "domain": "stratus-playground"}
CLICK: dict[str, Any] = {
    "type": "block_actions",
    "user": USER,
    "api_app_id": "A0STRATUS",
    "trigger_id": "1.2.3",
    "team": TEAM,
    "channel": {"id": "C0INCIDENT", "name": "incidents"},
    "container": {"type": "message", "message_ts": "1.1", "channel_id": "C0INCIDENT"},
    "message": {"ts": "1.1", "thread_ts": "1.0", "text": "card"},
    "state": {"values": {}},
    "response_url": "http://127.0.0.1:9/r",
    "actions": [
        {
            "action_id": "stratus.approve",
            "block_id": "b",
            "value": "prop-000000000000",
            "type": "button",
            "action_ts": "1.5",
        }
    ],
}
OTHER = copy.deepcopy(CLICK)
OTHER["actions"] = [
    {
        "action_id": "stratus.other",
        "type": "static_select",
        "selected_option": {"value": "prop-000000000000:abc", "text": {"type": "plain_text"}},
        "action_ts": "1.6",
    }
]
REVOKE = copy.deepcopy(CLICK)
REVOKE["actions"] = [{"action_id": "stratus.revoke", "value": "grant-1", "action_ts": "1.7"}]
SUBMIT: dict[str, Any] = {
    "type": "view_submission",
    "team": TEAM,
    "user": USER,
    "api_app_id": "A0STRATUS",
    "trigger_id": "1.2.4",
    "view": {
        "id": "V1",
        "type": "modal",
        "callback_id": "stratus.reject_reason",
        "private_metadata": "prop-000000000000|C0INCIDENT",
        "state": {"values": {"reason": {"text": {"type": "plain_text_input", "value": "no"}}}},
    },
    "response_urls": [],
}
EVENT: dict[str, Any] = {
    "type": "event_callback",
    "team_id": "T0PLAYGRND",
    "api_app_id": "A0STRATUS",
    "event_id": "Ev1",
    "event_time": 1,
    "authorizations": [{"team_id": "T0PLAYGRND", "user_id": "U0STRATUS", "is_bot": True}],
    "event": {
        "type": "message",
        "text": "why?",
        "user": "U0ALICE",
        "ts": "2.0",
        "thread_ts": "1.0",
        "channel": "C0INCIDENT",
        "channel_type": "channel",
    },
}
MENTION = copy.deepcopy(EVENT)
MENTION["event"]["type"] = "app_mention"
HOME = copy.deepcopy(EVENT)
HOME["event"] = {"type": "app_home_opened", "user": "U0ALICE", "tab": "home"}
PAYLOADS = [CLICK, OTHER, REVOKE, SUBMIT, EVENT, MENTION, HOME]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*prefix, key)
            yield from paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield (*prefix, index)
            yield from paths(inner, (*prefix, index))


def kind(value: Any) -> str:
    return (
        "number"
        if isinstance(value, int | float) and not isinstance(value, bool)
        else (type(value).__name__)
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2)
    ),
    max_leaves=4,
)


@st.composite
def broken(draw: st.DrawFn) -> dict[str, Any]:
    """A real payload with one part replaced by a value of another JSON type, or removed."""
    payload = copy.deepcopy(draw(st.sampled_from(PAYLOADS)))
    path = draw(st.sampled_from(list(paths(payload))))
    parent = payload
    for step in path[:-1]:
        parent = parent[step]
    old = parent[path[-1]]
    if draw(st.booleans()):
        new = draw(json_values.filter(lambda v: kind(v) != kind(old)))
        parent[path[-1]] = new
    elif isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = None
    return payload


class Tracebacks(logging.Handler):
    """Log records that carry a traceback, or more than one line."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.found: list[str] = []
        self.guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.stack_info or "\n" in record.getMessage():
            with self.guard:
                self.found.append(f"{record.name}: {record.getMessage()[:300]}")


@pytest.fixture(scope="module")
def signed_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """A playground, a bot on it (HTTP mode) and the bot's store path; the payloads here
    name no real proposal, so what the bot answers them is a refusal at most."""
    from lab.runner import LabServer, write_kubeconfig

    server = LabServer(apps=["hotel"]).start()
    config_path = write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", server.url, "hotel")
    playground = PlaygroundServer().start()
    kube = KubeClient(kubeconfig=str(config_path))
    db = tmp_path_factory.mktemp("bot") / "bot.db"
    config = BotConfig(
        mode="http",
        bot_token=playground.bot_token,
        signing_secret=playground.signing_secret,
        api_url=playground.api_url,
        port=0,
    )
    bot = StratusBot(make_runtime(kube, db, PolicyBox()), config)
    with ThreadedBot(bot):
        yield bot.url, playground.signing_secret, db
    kube.close()
    playground.stop()
    server.stop()


@pytest.fixture(scope="module")
def tracebacks() -> Iterator[Tracebacks]:
    handler = Tracebacks()
    root = logging.getLogger()
    root.addHandler(handler)
    yield handler
    root.removeHandler(handler)


def settled(handler: Tracebacks) -> list[str]:
    time.sleep(0.05)  # listeners run after the acknowledgement
    with handler.guard:
        found, handler.found = handler.found, []
    return found


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=broken())
def test_a_signed_payload_with_a_broken_part_gets_a_400_or_is_handled_without_a_traceback(
    signed_world: tuple[str, str, Path],
    tracebacks: Tracebacks,
    payload: dict[str, Any],
) -> None:
    url, secret, db = signed_world
    before = events_after(db)
    form = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
    status = signed_post(url, secret, form, FORM["Content-Type"])
    if payload.get("type") == "event_callback":
        status = signed_post(url, secret, json.dumps(payload).encode(), "application/json")
    assert status in (200, 400), status
    assert settled(tracebacks) == []
    assert events_after(db) == before


form_values = st.one_of(st.text(max_size=30), st.sampled_from(["", "undo", "cancel inc-"]))
command_fields = st.fixed_dictionaries(
    {},
    optional={
        "command": st.sampled_from(["/stratus", "", "/other"]),
        "text": form_values,
        "user_id": form_values,
        "channel_id": form_values,
        "team_id": form_values,
        "trigger_id": form_values,
        "response_url": form_values,
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=command_fields, repeated=st.booleans())
def test_a_signed_slash_command_with_odd_fields_is_answered_without_a_traceback(
    signed_world: tuple[str, str, Path],
    tracebacks: Tracebacks,
    fields: dict[str, str],
    repeated: bool,
) -> None:
    url, secret, _db = signed_world
    pairs = list(fields.items()) + (list(fields.items()) if repeated else [])
    body = urllib.parse.urlencode(pairs).encode()
    status = signed_post(url, secret, body, FORM["Content-Type"])
    assert status in (200, 400), status
    assert settled(tracebacks) == []


def _with(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    payload = copy.deepcopy(base)
    parent = payload
    for step in path[:-1]:
        parent = parent[step]
    if value is KeyError:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return payload


SHAPES_SEEN = [
    _with(CLICK, ("user",), KeyError),
    _with(CLICK, ("user", "id"), 7),
    _with(CLICK, ("trigger_id",), KeyError),
    _with(CLICK, ("actions",), []),
    _with(CLICK, ("actions", 0, "action_id"), KeyError),
    _with(CLICK, ("actions", 0, "value"), {"a": 1}),
    _with(CLICK, ("actions", 0, "action_id"), "stratus.not-ours"),
    _with(OTHER, ("actions", 0, "selected_option"), ["x"]),
    _with(CLICK, ("channel",), 3),
    _with(CLICK, ("message",), "m"),
    _with(CLICK, ("team",), [1]),
    _with(CLICK, ("authorizations",), {"k": 1}),
    _with(CLICK, ("enterprise",), 5),
    _with(SUBMIT, ("view", "type"), KeyError),
    _with(SUBMIT, ("view", "private_metadata"), 1),
    _with(SUBMIT, ("view", "state", "values", "reason"), ["x"]),
    _with(SUBMIT, ("view", "callback_id"), "someone.elses"),
    _with(SUBMIT, ("type",), "view_closed"),
    _with(EVENT, ("event", "type"), 1),
    _with(EVENT, ("event", "type"), "reaction_added"),
    _with(EVENT, ("event", "thread_ts"), {"ts": 1}),
    _with(EVENT, ("event", "message"), "m"),
    _with(EVENT, ("authorizations",), [1]),
    _with(HOME, ("event", "user"), ["U0ALICE"]),
    _with(CLICK, ("type",), "shortcut"),
]


@pytest.mark.parametrize("payload", SHAPES_SEEN, ids=range(len(SHAPES_SEEN)))
def test_the_shapes_that_crashed_get_a_400_and_one_log_line(
    signed_world: tuple[str, str, Path],
    tracebacks: Tracebacks,
    payload: dict[str, Any],
) -> None:
    url, secret, db = signed_world
    before = events_after(db)
    form = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
    body, kind = (
        (json.dumps(payload).encode(), "application/json")
        if payload.get("type") == "event_callback"
        else (form, FORM["Content-Type"])
    )
    assert signed_post(url, secret, body, kind) == 400
    assert settled(tracebacks) == []
    assert events_after(db) == before
