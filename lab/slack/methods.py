"""The Web API methods a bot uses, with Slack's response shapes and errors.

Each method takes a ``Call`` and returns the fields of an ``ok`` answer or raises
``SlackError``. Views (modals and Home tabs) live in ``lab.slack.views``.
"""

from __future__ import annotations

import base64
import copy

from lab.slack import blockkit, views
from lab.slack.webapi import APP, BOT, Call, MethodSpec, SlackError
from lab.slack.workspace import Json, Workspace


def _bot_message(ws: Workspace, text: str, blocks: object) -> Json:
    config = ws.config
    message: Json = {
        "type": "message",
        "text": text,
        "user": config.bot_user_id,
        "bot_id": config.bot_id,
        "app_id": config.app_id,
        "team": config.team_id,
        "bot_profile": {
            "id": config.bot_id,
            "app_id": config.app_id,
            "name": config.bot_name,
            "deleted": False,
            "team_id": config.team_id,
        },
    }
    if isinstance(blocks, list):
        message["blocks"] = blockkit.assign_ids(copy.deepcopy(blocks))
    return message


def check_content(text: str, blocks: object) -> None:
    """Slack's checks of a message's text and blocks (also used for response_url posts)."""
    if not text and not blocks:
        raise SlackError("no_text")
    if len(text) > blockkit.MAX_TEXT_LENGTH:
        raise SlackError("msg_too_long")
    if blocks is not None:
        errors = blockkit.message_block_errors(blocks)
        if errors:
            raise SlackError(
                "invalid_blocks",
                errors=errors,
                response_metadata={"messages": [f"[ERROR] {e}" for e in errors]},
            )


def check_files(ws: Workspace, blocks: object) -> None:
    """Image blocks naming an uploaded file (``slack_file: {id}``): Slack refuses one whose
    file it does not know, or has not processed yet (``file_ready_seconds``)."""
    if not isinstance(blocks, list):
        return
    errors = []
    for i, block in enumerate(blocks):
        ref = block.get("slack_file") if isinstance(block, dict) else None
        if not isinstance(ref, dict) or not isinstance(ref.get("id"), str):
            continue
        file = ws.files.get(ref["id"])
        ready = file is not None and (
            ws.clock() - float(file.get("uploaded_at", 0)) >= ws.config.file_ready_seconds
        )
        if not ready:
            errors.append(f"invalid slack file [json-pointer:/blocks/{i}/slack_file]")
    if errors:
        raise SlackError(
            "invalid_blocks",
            errors=errors,
            response_metadata={"messages": [f"[ERROR] {e}" for e in errors]},
        )


def _channel(call: Call, arg: str = "channel", *, member: bool = True) -> str:
    ref = call.opt_str(arg)
    channel = call.workspace.resolve_channel(ref) if ref else None
    if channel is None:
        raise SlackError("channel_not_found")
    if member and call.workspace.config.bot_user_id not in call.workspace.members[channel]:
        raise SlackError("not_in_channel")
    return channel


def _text(call: Call) -> str:
    value = call.args.get("text")
    return "" if value is None else str(value)


def auth_test(call: Call) -> Json:
    config = call.workspace.config
    return {
        "url": f"{call.base_url}/",
        "team": config.team_name,
        "user": config.bot_name,
        "team_id": config.team_id,
        "user_id": config.bot_user_id,
        "bot_id": config.bot_id,
        "is_enterprise_install": False,
    }


def post_message(call: Call) -> Json:
    ws = call.workspace
    channel = _channel(call)
    text, blocks = _text(call), call.args.get("blocks")
    check_content(text, blocks or call.args.get("attachments"))
    check_files(ws, blocks)
    message = _bot_message(ws, text, blocks)
    thread_ts = call.opt_str("thread_ts")
    if thread_ts is not None:
        parent = ws.find_message(channel, thread_ts)
        if parent is None:
            raise SlackError("thread_not_found")
        if parent.get("thread_ts") not in (None, parent["ts"]):
            raise SlackError("cannot_reply_to_message")
        message["thread_ts"] = thread_ts
        message["parent_user_id"] = parent.get("user")
        if call.flag("reply_broadcast"):
            message["subtype"] = "thread_broadcast"
    if call.args.get("metadata"):
        message["metadata"] = call.args["metadata"]
    ws.add_message(channel, message)
    return {"channel": channel, "ts": message["ts"], "message": message}


def update_message(call: Call) -> Json:
    ws = call.workspace
    channel = _channel(call)
    ts = call.str_arg("ts", "message_not_found")
    message = ws.find_message(channel, ts)
    if message is None:
        raise SlackError("message_not_found")
    if message.get("bot_id") != ws.config.bot_id:
        raise SlackError("cant_update_message")
    text, blocks = _text(call), call.args.get("blocks")
    check_content(text, blocks)
    check_files(ws, blocks)
    message["text"] = text
    if isinstance(blocks, list):
        message["blocks"] = blockkit.assign_ids(copy.deepcopy(blocks))
    message["edited"] = {"user": ws.config.bot_user_id, "ts": ws.new_ts()}
    ws.changed()
    return {"channel": channel, "ts": ts, "text": text, "message": message}


def delete_message(call: Call) -> Json:
    """Slack's ``chat.delete``: a bot token deletes only its own messages. A deleted thread
    parent takes its thread with it as far as a bot can tell: replying to it, reading it or
    updating it answers ``thread_not_found`` / ``message_not_found`` from then on."""
    ws = call.workspace
    channel = _channel(call, member=False)
    ts = call.str_arg("ts", "message_not_found")
    message = ws.find_message(channel, ts)
    if message is None:
        raise SlackError("message_not_found")
    if message.get("bot_id") != ws.config.bot_id:
        raise SlackError("cant_delete_message")
    ws.delete_message(channel, ts)
    return {"channel": channel, "ts": ts}


def post_ephemeral(call: Call) -> Json:
    ws = call.workspace
    channel = _channel(call)
    user = call.str_arg("user", "user_not_found")
    if user not in ws.users:
        raise SlackError("user_not_found")
    if user not in ws.members[channel]:
        raise SlackError("user_not_in_channel")
    text, blocks = _text(call), call.args.get("blocks")
    check_content(text, blocks or call.args.get("attachments"))
    check_files(ws, blocks)
    message = _bot_message(ws, text, blocks)
    thread_ts = call.opt_str("thread_ts")
    if thread_ts:
        message["thread_ts"] = thread_ts
    record = ws.add_ephemeral(channel, user, message)
    return {"message_ts": record["message"]["ts"]}


def permalink(base_url: str, channel: str, message: Json) -> str:
    link = f"{base_url}/archives/{channel}/p{message['ts'].replace('.', '')}"
    thread_ts = message.get("thread_ts")
    if thread_ts and thread_ts != message["ts"]:
        link += f"?thread_ts={thread_ts}&cid={channel}"
    return link


def get_permalink(call: Call) -> Json:
    channel = _channel(call, member=False)
    message = call.workspace.find_message(channel, call.str_arg("message_ts", "message_not_found"))
    if message is None:
        raise SlackError("message_not_found")
    return {"channel": channel, "permalink": permalink(call.base_url, channel, message)}


def _page(call: Call, items: list[Json], default_limit: int) -> Json:
    limit = max(1, min(call.int_arg("limit", default_limit), 1000))
    cursor = call.opt_str("cursor")
    start = 0
    if cursor:
        try:
            start = int(base64.b64decode(cursor).decode().removeprefix("offset:"))
        except ValueError as error:
            raise SlackError("invalid_cursor") from error
    chunk = items[start : start + limit]
    more = start + limit < len(items)
    next_cursor = base64.b64encode(f"offset:{start + limit}".encode()).decode() if more else ""
    return {
        "messages": chunk,
        "has_more": more,
        "response_metadata": {"next_cursor": next_cursor},
    }


def _in_window(call: Call, messages: list[Json]) -> list[Json]:
    oldest = float(call.opt_str("oldest") or 0)
    latest = float(call.opt_str("latest") or "inf")
    inclusive = call.flag("inclusive")
    kept = []
    for message in messages:
        ts = float(message["ts"])
        if (oldest < ts < latest) or (inclusive and ts in (oldest, latest)):
            kept.append(message)
    return kept


def replies(call: Call) -> Json:
    ws = call.workspace
    channel = _channel(call)
    ts = call.str_arg("ts", "thread_not_found")
    if ws.find_message(channel, ts) is None:
        raise SlackError("thread_not_found")
    thread = ws.thread(channel, ts)
    parent, rest = thread[0], _in_window(call, thread[1:])
    return _page(call, [parent, *rest], 1000)


def history(call: Call) -> Json:
    ws = call.workspace
    channel = _channel(call)
    top = [
        m
        for m in ws.messages.get(channel, [])
        if m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast"
    ]
    result = _page(call, list(reversed(_in_window(call, top))), 100)
    result["pin_count"] = 0
    return result


def conversation_info(call: Call) -> Json:
    ws = call.workspace
    channel = _channel(call, member=False)
    info = dict(ws.channels[channel])
    info["is_member"] = ws.config.bot_user_id in ws.members[channel]
    if call.flag("include_num_members"):
        info["num_members"] = len(ws.members[channel])
    return {"channel": info}


def user_info(call: Call) -> Json:
    user = call.workspace.users.get(call.str_arg("user", "user_not_found"))
    if user is None:
        raise SlackError("user_not_found")
    return {"user": user}


def usergroup_users(call: Call) -> Json:
    members = call.workspace.group_members(call.str_arg("usergroup", "no_such_subteam"))
    if members is None:
        raise SlackError("no_such_subteam")
    return {"users": members}


def usergroups_list(call: Call) -> Json:
    """The workspace's user groups with their handles (Slack's ``usergroups.list``)."""
    groups = call.workspace.groups.values()
    return {
        "usergroups": [
            {"id": g.id, "handle": g.handle, "name": g.name, "user_count": len(g.members)}
            for g in groups
        ]
    }


def add_reaction(call: Call) -> Json:
    ws = call.workspace
    channel = _channel(call)
    message = ws.find_message(channel, call.str_arg("timestamp", "message_not_found"))
    if message is None:
        raise SlackError("message_not_found")
    name = call.str_arg("name", "invalid_name").strip(":")
    if not name or " " in name:
        raise SlackError("invalid_name")
    reactions: list[Json] = message.setdefault("reactions", [])
    reaction = next((r for r in reactions if r["name"] == name), None)
    if reaction is None:
        reaction = {"name": name, "users": [], "count": 0}
        reactions.append(reaction)
    if ws.config.bot_user_id in reaction["users"]:
        raise SlackError("already_reacted")
    reaction["users"].append(ws.config.bot_user_id)
    reaction["count"] = len(reaction["users"])
    ws.changed()
    return {}


def connections_open(call: Call) -> Json:
    return {"url": call.socket_url()}


METHODS: dict[str, MethodSpec] = {
    "auth.test": MethodSpec(auth_test, (BOT, APP)),
    "chat.postMessage": MethodSpec(post_message),
    "chat.update": MethodSpec(update_message),
    "chat.delete": MethodSpec(delete_message),
    "chat.postEphemeral": MethodSpec(post_ephemeral),
    "chat.getPermalink": MethodSpec(get_permalink),
    "conversations.replies": MethodSpec(replies),
    "conversations.history": MethodSpec(history),
    "conversations.info": MethodSpec(conversation_info),
    "users.info": MethodSpec(user_info),
    "usergroups.users.list": MethodSpec(usergroup_users),
    "usergroups.list": MethodSpec(usergroups_list),
    "reactions.add": MethodSpec(add_reaction),
    "views.open": MethodSpec(views.open_view),
    "views.push": MethodSpec(views.push_view),
    "views.update": MethodSpec(views.update_view),
    "views.publish": MethodSpec(views.publish_view),
    "apps.connections.open": MethodSpec(connections_open, (APP,)),
}
