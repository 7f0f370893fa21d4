"""File uploads as Slack does them today (``files.upload`` is retired): the app asks
``files.getUploadURLExternal`` for an upload URL and a file id, POSTs the bytes to that URL, then
calls ``files.completeUploadExternal`` with the file ids and, to share them, ``channel_id`` (and
``thread_ts`` for a thread) — which posts a message carrying the files there. Also
``files.info`` and ``files.delete``, and the bytes themselves: ``url_private`` needs the bot
token, as in Slack; the page reads them through the control API (``/playground/v1/files/ID``).

An image block may show an uploaded file by ``slack_file: {"id": …}``; the page resolves it
here.
"""

from __future__ import annotations

import json
import mimetypes
from typing import Any

from aiohttp import BodyPartReader, web

from lab.slack.methods import _bot_message, _channel
from lab.slack.webapi import Call, MethodSpec, SlackError
from lab.slack.workspace import Json, Workspace

MAX_FILE_BYTES = 4 * 1024 * 1024  # the server's body limit; Slack allows more
PREVIEW_CHARS = 2000
UPLOAD_PATH = "/upload/v1/{file_id}"


def _file_id(call: Call) -> str:
    file_id = call.str_arg("file", "file_not_found")
    if file_id not in call.workspace.files:
        raise SlackError("file_not_found")
    return file_id


def get_upload_url(call: Call) -> Json:
    ws = call.workspace
    filename = call.str_arg("filename")
    length = call.int_arg("length", -1)
    if length <= 0:
        raise SlackError("invalid_arguments")
    if length > MAX_FILE_BYTES:
        raise SlackError("file_too_large")
    file_id = ws.new_id("F")
    mimetype = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    ws.files[file_id] = {
        "id": file_id,
        "created": int(ws.clock()),
        "timestamp": int(ws.clock()),
        "name": filename,
        "title": filename,
        "mimetype": mimetype,
        "filetype": filename.rsplit(".", 1)[-1].lower() if "." in filename else "binary",
        "user": ws.config.bot_user_id,
        "size": length,
        "url_private": f"{call.base_url}/files-pri/{ws.config.team_id}-{file_id}/{filename}",
        "is_external": False,
        "shares": {},
        "state": "pending",
    }
    alt = call.opt_str("alt_txt")
    if alt is not None:
        ws.files[file_id]["alt_txt"] = alt
    return {
        "upload_url": call.base_url + UPLOAD_PATH.format(file_id=file_id),
        "file_id": file_id,
    }


def _completed(call: Call) -> list[Json]:
    raw = call.args.get("files")
    try:
        listed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as error:
        raise SlackError("invalid_arguments") from error
    if not isinstance(listed, list) or not listed:
        raise SlackError("invalid_arguments")
    found = []
    for item in listed:
        file = call.workspace.files.get(str(item.get("id"))) if isinstance(item, dict) else None
        if file is None or file["state"] == "pending":
            # Completing a file whose bytes never arrived is refused, as Slack does.
            raise SlackError("file_not_found" if file is None else "file_upload_incomplete")
        if item.get("title"):
            file["title"] = str(item["title"])
        found.append(file)
    return found


def complete_upload(call: Call) -> Json:
    ws = call.workspace
    files = _completed(call)
    channel_ref = call.opt_str("channel_id") or call.opt_str("channels")
    if channel_ref is not None:
        channel = _channel(call, "channel_id" if call.opt_str("channel_id") else "channels")
        thread_ts = call.opt_str("thread_ts")
        comment = call.opt_str("initial_comment") or ""
        message = _bot_message(ws, comment, None)
        message["upload"] = True
        message["display_as_bot"] = False
        if thread_ts is not None:
            parent = ws.find_message(channel, thread_ts)
            if parent is None:
                raise SlackError("invalid_thread_ts")
            message["thread_ts"] = thread_ts
            message["parent_user_id"] = parent.get("user")
        message["files"] = [dict(f) for f in files]
        ws.add_message(channel, message)
        for file in files:
            share = {"ts": message["ts"], **({"thread_ts": thread_ts} if thread_ts else {})}
            file["shares"].setdefault("public", {}).setdefault(channel, []).append(share)
            file["channels"] = sorted(file["shares"]["public"])
        message["files"] = [dict(f) for f in files]
    for file in files:
        file["state"] = "shared" if channel_ref is not None else "private"
    ws.changed()
    return {"files": [{"id": f["id"], "title": f["title"]} for f in files]}


def file_info(call: Call) -> Json:
    return {"file": dict(call.workspace.files[_file_id(call)])}


def delete_file(call: Call) -> Json:
    """Deleting a file takes it out of every message that carried it; a message that was only
    the file goes with it."""
    ws = call.workspace
    file_id = _file_id(call)
    del ws.files[file_id]
    ws.file_bytes.pop(file_id, None)
    for channel, messages in ws.messages.items():
        kept = []
        for message in messages:
            carried = message.get("files")
            if carried and any(f.get("id") == file_id for f in carried):
                message["files"] = [f for f in carried if f.get("id") != file_id]
                if not message["files"] and not message.get("text"):
                    continue
            kept.append(message)
        ws.messages[channel] = kept
    ws.changed()
    return {}


METHODS: dict[str, MethodSpec] = {
    "files.getUploadURLExternal": MethodSpec(get_upload_url),
    "files.completeUploadExternal": MethodSpec(complete_upload),
    "files.info": MethodSpec(file_info),
    "files.delete": MethodSpec(delete_file),
}


async def _body_bytes(request: web.Request) -> bytes:
    """The uploaded bytes: the raw body, or the first file part of a multipart form."""
    if request.content_type.startswith("multipart/"):
        reader = await request.multipart()
        async for part in reader:
            if isinstance(part, BodyPartReader) and part.filename is not None:
                return bytes(await part.read())
        return b""
    return await request.read()


def file_routes(ws: Workspace) -> list[web.RouteDef]:
    async def upload(request: web.Request) -> web.Response:
        file = ws.files.get(request.match_info["file_id"])
        if file is None or file["state"] != "pending":
            return web.Response(status=404, text="unknown upload")
        data = await _body_bytes(request)
        if not data:
            return web.Response(status=400, text="empty upload")
        ws.file_bytes[file["id"]] = data
        file["size"] = len(data)
        file["state"] = "uploaded"
        file["uploaded_at"] = ws.clock()
        if file["mimetype"].startswith("text/"):
            file["preview"] = data.decode(errors="replace")[:PREVIEW_CHARS]
        return web.Response(text=f"OK - {len(data)}")

    def _served(file_id: str) -> web.Response:
        file = ws.files.get(file_id)
        data = ws.file_bytes.get(file_id)
        if file is None or data is None:
            raise web.HTTPNotFound()
        mimetype = str(file["mimetype"])
        # Text files are served as UTF-8 (what a browser and a client then decode them as).
        charset = "utf-8" if mimetype.startswith("text/") else None
        return web.Response(body=data, content_type=mimetype, charset=charset)

    async def private(request: web.Request) -> web.Response:
        # url_private: the bot token, as Slack asks for it.
        header = request.headers.get("Authorization", "")
        if header != f"Bearer {ws.config.bot_token}":
            raise web.HTTPForbidden()
        return _served(request.match_info["id"].rsplit("-", 1)[-1])

    async def for_page(request: web.Request) -> web.Response:
        return _served(request.match_info["id"])

    return [
        web.post(UPLOAD_PATH, upload),
        web.get("/files-pri/{id}/{name}", private),
        web.get("/playground/v1/files/{id}", for_page),
    ]


def state(ws: Workspace) -> dict[str, Any]:
    """The files the page may show (no bytes: it loads them by id)."""
    return {file_id: dict(file) for file_id, file in ws.files.items()}
