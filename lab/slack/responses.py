"""Responses an app gives outside the Web API: the body of a slash command's acknowledgement
and posts to a ``response_url`` (ephemeral or in_channel, ``replace_original``,
``delete_original``), valid for 30 minutes and five uses, as on Slack.
"""

from __future__ import annotations

import json

from aiohttp import web

from lab.slack import blockkit
from lab.slack.methods import check_content
from lab.slack.webapi import SlackError
from lab.slack.workspace import Json, ResponseUrl, Workspace


def _bot_content(ws: Workspace, body: Json) -> Json:
    text = str(body.get("text") or "")
    blocks = body.get("blocks")
    check_content(text, blocks)
    message: Json = {
        "type": "message",
        "text": text,
        "user": ws.config.bot_user_id,
        "bot_id": ws.config.bot_id,
        "app_id": ws.config.app_id,
        "team": ws.config.team_id,
    }
    if isinstance(blocks, list):
        message["blocks"] = blockkit.assign_ids(blocks)
    return message


def _find_ephemeral(ws: Workspace, user: str, ts: str) -> Json | None:
    for record in ws.ephemerals:
        if record["user"] == user and record["message"]["ts"] == ts:
            return record
    return None


def apply_response(
    ws: Workspace,
    *,
    channel: str,
    user: str,
    body: Json,
    message_ts: str | None = None,
    is_ephemeral: bool = False,
    thread_ts: str | None = None,
) -> None:
    """Post, replace or delete as Slack does for a command's ack or a response_url call."""
    if body.get("delete_original") in (True, "true") and message_ts:
        if is_ephemeral:
            record = _find_ephemeral(ws, user, message_ts)
            if record is not None:
                ws.ephemerals.remove(record)
        else:
            ws.messages[channel] = [m for m in ws.messages[channel] if m["ts"] != message_ts]
        ws.changed()
        return
    content = _bot_content(ws, body)
    if body.get("replace_original") in (True, "true") and message_ts:
        if is_ephemeral:
            record = _find_ephemeral(ws, user, message_ts)
            target = record["message"] if record else None
        else:
            target = ws.find_message(channel, message_ts)
        if target is None:
            raise SlackError("message_not_found")
        target["text"] = content["text"]
        target["blocks"] = content.get("blocks", [])
        ws.changed()
        return
    in_thread = body.get("thread_ts") or thread_ts
    if in_thread:
        content["thread_ts"] = in_thread
    if body.get("response_type") == "in_channel":
        ws.add_message(channel, content)
    else:
        ws.add_ephemeral(channel, user, content)


def response_url_routes(ws: Workspace) -> list[web.RouteDef]:
    async def post(request: web.Request) -> web.Response:
        grant: ResponseUrl | None = ws.response_urls.get(request.match_info["token"])
        if grant is None or ws.clock() > grant.expires:
            return web.json_response({"ok": False, "error": "expired_url"}, status=404)
        if grant.uses_left <= 0:
            return web.json_response({"ok": False, "error": "used_url"}, status=404)
        try:
            body = json.loads(await request.text())
        except ValueError:
            return web.json_response({"ok": False, "error": "invalid_payload"}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"ok": False, "error": "invalid_payload"}, status=400)
        try:
            apply_response(
                ws,
                channel=grant.channel,
                user=grant.user,
                body=body,
                message_ts=grant.message_ts,
                is_ephemeral=grant.is_ephemeral,
                thread_ts=grant.thread_ts,
            )
        except SlackError as error:
            return web.json_response({"ok": False, "error": error.error, **error.extra}, status=400)
        grant.uses_left -= 1
        ws.record_call("response_url", body, {"ok": True}, 200)
        return web.json_response({"ok": True})

    return [web.post("/commands/{team}/{token}", post)]
