"""The shape of what Slack sends us: the parts of each payload that bolt and our listeners
read, with their JSON types — checked once, at the door, so that a signed but malformed
payload is answered 400 with one log line instead of failing deep inside bolt or a listener
(a 500 with a traceback, or a request that never gets an answer).

A shape lists parts as ``name: Part``; a part that is present must have one of its types (and
its own shape, when it is an object or a list of objects); a required part must be present.
Parts we never read are not checked. Only the payload types and events Stratus listens to are
accepted: anything else is not something Slack sends to this app.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

NONE = type(None)
# Who Slack says is acting: a user ID (U… or W…, upper-case letters and digits). A user-group
# ID (S…), ``*``, an @handle or anything else is never a person sending a request.
SLACK_USER = re.compile(r"[UW][A-Z0-9]{1,30}")
# What a slash command's form must carry: who typed it, where, and which command.
COMMAND_FIELDS = ("command", "user_id", "channel_id")


@dataclass(frozen=True)
class Part:
    types: tuple[type, ...]
    required: bool = False
    shape: dict[str, Part] = field(default_factory=dict)  # for an object, or each list item
    items: type | None = None  # a list's item type (dict: each item has ``shape``)
    values: int = 0  # nesting of objects whose values are objects (a modal's state.values)


def _s(*types: type, required: bool = False) -> Part:
    return Part(types=types, required=required)


def _obj(shape: dict[str, Part], *, required: bool = False, also: tuple[type, ...] = ()) -> Part:
    return Part(types=(dict, *also), required=required, shape=shape)


TEXT = _s(str, NONE)
ID = _obj({"id": _s(str, required=True), "team_id": TEXT, "enterprise_id": TEXT})
AUTHORIZATION = {
    "enterprise_id": TEXT,
    "team_id": TEXT,
    "user_id": TEXT,
    "is_enterprise_install": _s(bool, NONE),
}
MESSAGE = {"ts": TEXT, "thread_ts": TEXT, "user": TEXT, "text": TEXT, "bot_id": TEXT}
# What every payload may carry that bolt reads to build its context.
COMMON: dict[str, Part] = {
    "type": _s(str, required=True),
    "token": TEXT,
    "api_app_id": TEXT,
    "team_id": TEXT,
    "enterprise_id": TEXT,
    "user_id": TEXT,
    "channel_id": TEXT,
    "response_url": TEXT,
    "trigger_id": TEXT,
    "thread_ts": TEXT,
    "is_enterprise_install": _s(bool, str, NONE),
    "is_ext_shared_channel": _s(bool, NONE),
    "enterprise": _obj({"id": TEXT}, also=(str, NONE)),
    "team": _obj({"id": TEXT, "enterprise_id": TEXT, "domain": TEXT}, also=(str, NONE)),
    "authorizations": Part(types=(list, NONE), items=dict, shape=AUTHORIZATION),
    "response_urls": Part(types=(list, NONE), items=dict, shape={"response_url": TEXT}),
    "channel": _obj({"id": TEXT, "name": TEXT}, also=(str, NONE)),
    "message": _obj(MESSAGE, also=(NONE,)),
    "previous_message": _obj(MESSAGE, also=(NONE,)),
    "container": _obj({"type": TEXT, "message_ts": TEXT, "channel_id": TEXT}, also=(NONE,)),
    "function_data": _obj({"execution_id": TEXT}, also=(NONE,)),
    "assistant_thread": _obj({"channel_id": TEXT, "thread_ts": TEXT}, also=(NONE,)),
    "state": _obj({"values": Part(types=(dict,), values=2)}, also=(NONE,)),
}
VIEW = {
    "id": TEXT,
    "type": _s(str, required=True),  # bolt reads it to tell a modal from a workflow step
    "callback_id": TEXT,
    "private_metadata": TEXT,
    "team_id": TEXT,
    "app_installed_team_id": TEXT,
    "state": _obj({"values": Part(types=(dict,), values=2)}),
    # The gate reads the buttons an App Home view shows (``authz.from_card``).
    "blocks": Part(
        types=(list, NONE),
        items=dict,
        shape={"elements": Part(types=(list, NONE), items=dict, shape={"value": TEXT})},
    ),
}
ACTION = {
    "action_id": _s(str, required=True),
    "block_id": TEXT,
    "action_ts": TEXT,
    "value": TEXT,
    "type": TEXT,
    "selected_option": _obj({"value": _s(str, required=True)}, also=(NONE,)),
}
EVENT = {
    "type": _s(str, required=True),
    "user": TEXT,
    "user_id": TEXT,
    "channel": TEXT,
    "text": TEXT,
    "ts": TEXT,
    "thread_ts": TEXT,
    "tab": TEXT,
    "subtype": TEXT,
    "bot_id": TEXT,
    "team": TEXT,
    "user_team": TEXT,
    "enterprise_id": TEXT,
    "team_id": TEXT,
    "message": _obj(MESSAGE, also=(NONE,)),
    "previous_message": _obj(MESSAGE, also=(NONE,)),
    "item": _obj({"channel": TEXT}, also=(NONE,)),
    "assistant_thread": _obj({"channel_id": TEXT, "thread_ts": TEXT}, also=(NONE,)),
}
# The payload types Stratus listens to, and what each must carry beyond COMMON.
SHAPES: dict[str, dict[str, Part]] = {
    "block_actions": {
        "user": Part(types=(dict,), required=True, shape=ID.shape),
        "trigger_id": _s(str, required=True),
        "actions": Part(types=(list,), required=True, items=dict, shape=ACTION),
        "view": _obj(VIEW, also=(NONE,)),
    },
    "view_submission": {
        "user": Part(types=(dict,), required=True, shape=ID.shape),
        "trigger_id": TEXT,
        "view": _obj(VIEW, required=True),
    },
    "view_closed": {
        "user": Part(types=(dict,), required=True, shape=ID.shape),
        "view": _obj(VIEW, required=True),
    },
    "event_callback": {"event": _obj(EVENT, required=True)},
    "url_verification": {"challenge": _s(str, required=True)},
}
EVENTS = frozenset({"app_home_opened", "app_mention", "message"})


def _fits(value: Any, part: Part) -> bool:
    if not isinstance(value, part.types):  # no part takes numbers, so True is never an int
        return False
    if isinstance(value, dict):
        if part.values:
            inner = Part(types=(dict,), values=part.values - 1)
            return all(isinstance(k, str) and _fits(v, inner) for k, v in value.items())
        return fits(value, part.shape)
    if isinstance(value, list) and part.items is not None:
        if part.items is dict:
            return all(isinstance(item, dict) and fits(item, part.shape) for item in value)
        return all(isinstance(item, part.items) for item in value)
    return True


def fits(body: dict[str, Any], shape: dict[str, Part]) -> bool:
    for name, part in shape.items():
        if name not in body:
            if part.required:
                return False
            continue
        if not _fits(body[name], part):
            return False
    return True


def is_user(value: Any) -> bool:
    return isinstance(value, str) and SLACK_USER.fullmatch(value) is not None


def _acting_user(body: dict[str, Any], kind: str) -> bool:
    """Whether the person a payload says is acting is a Slack user ID."""
    if kind in ("block_actions", "view_submission", "view_closed"):
        return is_user(body["user"]["id"])
    if kind == "event_callback":
        event = body["event"]
        if event["type"] in ("app_home_opened", "app_mention"):
            return is_user(event.get("user"))
        return "user" not in event or event["user"] is None or is_user(event["user"])
    return True


def _click_fits(body: dict[str, Any]) -> bool:
    """A click names the element clicked (a value or a chosen option) and where it was: a
    message (its channel and container; the message too unless it was ephemeral) or a view."""
    action = body["actions"][0]
    option = action.get("selected_option") or {}
    if not (action.get("value") or option.get("value")):
        return False
    if not isinstance(body.get("team"), dict):
        return False
    container = body.get("container")
    if not isinstance(container, dict):
        return False
    if container.get("type") == "view":
        return isinstance(body.get("view"), dict)
    if container.get("type") != "message" or not container.get("message_ts"):
        return False
    if not isinstance(body.get("channel"), dict) or not body["channel"].get("id"):
        return False
    return container.get("is_ephemeral") is True or isinstance(body.get("message"), dict)


def well_formed(body: Any) -> bool:
    """Whether a signed body has a shape Slack sends this app: a slash command's form, or a
    payload of a type we listen to with every part we read of the right JSON type, sent by a
    Slack user."""
    if not isinstance(body, dict):
        return False
    kind = body.get("type")
    if kind is None:  # a slash command's form fields (always strings), or Slack's SSL check
        if not all(isinstance(v, str) for v in body.values()):
            return False
        if "ssl_check" in body:
            return True
        return all(body.get(name) for name in COMMAND_FIELDS) and is_user(body["user_id"])
    if not isinstance(kind, str) or kind not in SHAPES:
        return False
    if not fits(body, COMMON) or not fits(body, SHAPES[kind]):
        return False
    if kind == "block_actions" and not (body["actions"] and _click_fits(body)):
        return False
    if kind == "event_callback" and str(body["event"]["type"]) not in EVENTS:
        return False
    return _acting_user(body, kind)


def well_encoded(raw: str, content_type: str) -> bool:
    """Whether the raw body is encoded as Slack encodes what it sends: a form (a slash command's
    fields, or one ``payload`` field holding an interaction's JSON) with each field once, or
    a JSON object (the Events API). Bolt reads a body that starts with ``{`` as JSON and a
    repeated form field as its first value; Slack sends neither."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == "application/json":
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            return False
        return isinstance(document, dict) and document.get("type") in (
            "event_callback",
            "url_verification",
        )
    if media != "application/x-www-form-urlencoded" or raw.lstrip().startswith("{"):
        return False
    try:
        pairs = urllib.parse.parse_qsl(raw, keep_blank_values=True, strict_parsing=bool(raw))
    except ValueError:
        return False
    names = [name for name, _ in pairs]
    return len(names) == len(set(names))
