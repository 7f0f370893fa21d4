"""The requests Slack sends an app, built field for field: slash command forms, block_actions
and view_submission payloads, and Events API callbacks (message, app_mention,
app_home_opened). Each builder also issues the trigger ID and response URL Slack would.
"""

from __future__ import annotations

import copy
import re
import secrets
from dataclasses import dataclass, field

from lab.slack.workspace import Json, View, Workspace

SLASH_COMMAND = "slash_commands"
INTERACTIVE = "interactive"
EVENTS_API = "events_api"

_MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


@dataclass
class Outgoing:
    """A request to deliver: its Socket Mode type, its payload, and how to post it over HTTP."""

    kind: str  # SLASH_COMMAND, INTERACTIVE or EVENTS_API
    label: str  # e.g. "/stratus", "block_actions", "event:app_mention"
    user: str
    payload: Json
    form: dict[str, str] | None = None  # slash commands travel as a form
    context: Json = field(default_factory=dict)  # what the ack is applied to


def _user_ref(ws: Workspace, user: str) -> Json:
    name = ws.users[user]["name"]
    return {"id": user, "username": name, "name": name, "team_id": ws.config.team_id}


def _team(ws: Workspace) -> Json:
    return {"id": ws.config.team_id, "domain": ws.config.team_domain}


def slash_command(
    ws: Workspace, base_url: str, *, user: str, channel: str, command: str, text: str
) -> Outgoing:
    config = ws.config
    form = {
        "token": config.verification_token,
        "team_id": config.team_id,
        "team_domain": config.team_domain,
        "channel_id": channel,
        "channel_name": ws.channels[channel]["name"],
        "user_id": user,
        "user_name": ws.users[user]["name"],
        "command": command,
        "text": text,
        "api_app_id": config.app_id,
        "is_enterprise_install": "false",
        "response_url": ws.new_response_url(base_url, user=user, channel=channel),
        "trigger_id": ws.new_trigger(user),
    }
    return Outgoing(
        SLASH_COMMAND, command, user, dict(form), form=form, context={"channel": channel}
    )


def block_actions(
    ws: Workspace,
    base_url: str,
    *,
    user: str,
    action: Json,
    channel: str | None = None,
    message: Json | None = None,
    is_ephemeral: bool = False,
    view: View | None = None,
) -> Outgoing:
    """A click: ``action`` is the element's action object (action_id, block_id, value, ...)."""
    config = ws.config
    payload: Json = {
        "type": "block_actions",
        "user": _user_ref(ws, user),
        "api_app_id": config.app_id,
        "token": config.verification_token,
        "trigger_id": ws.new_trigger(user),
        "team": _team(ws),
        "enterprise": None,
        "is_enterprise_install": False,
        "actions": [{**action, "action_ts": ws.new_ts()}],
    }
    if view is not None:
        payload["container"] = {"type": "view", "view_id": view.id}
        payload["view"] = copy.deepcopy(view.body)
        payload["state"] = copy.deepcopy(view.body["state"])
    elif channel is not None and message is not None:
        thread_ts = message.get("thread_ts")
        payload["container"] = {
            "type": "message",
            "message_ts": message["ts"],
            "channel_id": channel,
            "is_ephemeral": is_ephemeral,
            **({"thread_ts": thread_ts} if thread_ts else {}),
        }
        payload["channel"] = {"id": channel, "name": ws.channels[channel]["name"]}
        if not is_ephemeral:
            payload["message"] = copy.deepcopy(message)
        payload["state"] = {"values": {}}
        payload["response_url"] = ws.new_response_url(
            base_url,
            user=user,
            channel=channel,
            message_ts=message["ts"],
            is_ephemeral=is_ephemeral,
            thread_ts=thread_ts,
        )
    return Outgoing(INTERACTIVE, "block_actions", user, payload)


def view_submission(ws: Workspace, *, user: str, view: View) -> Outgoing:
    config = ws.config
    payload: Json = {
        "type": "view_submission",
        "team": _team(ws),
        "user": _user_ref(ws, user),
        "api_app_id": config.app_id,
        "token": config.verification_token,
        "trigger_id": ws.new_trigger(user),
        "view": copy.deepcopy(view.body),
        "response_urls": [],
        "enterprise": None,
        "is_enterprise_install": False,
    }
    return Outgoing(INTERACTIVE, "view_submission", user, payload, context={"view": view.id})


def view_closed(ws: Workspace, *, user: str, view: View) -> Outgoing:
    config = ws.config
    payload: Json = {
        "type": "view_closed",
        "team": _team(ws),
        "user": _user_ref(ws, user),
        "api_app_id": config.app_id,
        "token": config.verification_token,
        "view": copy.deepcopy(view.body),
        "is_cleared": False,
        "is_enterprise_install": False,
    }
    return Outgoing(INTERACTIVE, "view_closed", user, payload)


def event_callback(ws: Workspace, *, user: str, event: Json) -> Outgoing:
    config = ws.config
    event_id = "Ev" + secrets.token_hex(5).upper()
    payload: Json = {
        "token": config.verification_token,
        "team_id": config.team_id,
        "context_team_id": config.team_id,
        "api_app_id": config.app_id,
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(ws.clock()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": config.team_id,
                "user_id": config.bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": "4-" + secrets.token_urlsafe(24),
    }
    return Outgoing(EVENTS_API, f"event:{event['type']}", user, payload)


def message_events(ws: Workspace, *, channel: str, message: Json) -> list[Outgoing]:
    """What a user's message sends the app: ``message`` (when the bot is in the channel) and
    ``app_mention`` when it names the bot."""
    user = str(message["user"])
    channel_type = "im" if ws.channels[channel]["is_im"] else "channel"
    base: Json = {
        "client_msg_id": secrets.token_hex(16),
        "type": "message",
        "text": message["text"],
        "user": user,
        "ts": message["ts"],
        "team": ws.config.team_id,
        "channel": channel,
        "event_ts": message["ts"],
        "channel_type": channel_type,
    }
    if message.get("thread_ts"):
        base["thread_ts"] = message["thread_ts"]
        base["parent_user_id"] = message.get("parent_user_id")
    found: list[Outgoing] = []
    if ws.config.bot_user_id in ws.members.get(channel, set()):
        found.append(event_callback(ws, user=user, event=dict(base)))
    if ws.config.bot_user_id in _MENTION.findall(str(message["text"])):
        mention = {k: v for k, v in base.items() if k != "channel_type"}
        mention["type"] = "app_mention"
        found.append(event_callback(ws, user=user, event=mention))
    return found


def app_home_opened(ws: Workspace, *, user: str, tab: str = "home") -> Outgoing:
    event: Json = {
        "type": "app_home_opened",
        "user": user,
        "channel": ws.dm_channel(user),
        "tab": tab,
        "event_ts": ws.new_ts(),
    }
    home = ws.views.get(ws.home_views.get(user, ""))
    if home is not None:
        event["view"] = copy.deepcopy(home.body)
    return event_callback(ws, user=user, event=event)
