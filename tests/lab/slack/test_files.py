"""The playground's file upload API through slack_sdk's real client over HTTP, the way Slack
asks apps to upload today: files.getUploadURLExternal, a POST of the bytes to the URL it gives,
files.completeUploadExternal with channel_id and thread_ts — and image blocks that show the
uploaded file (slack_file), files.info, files.delete and the bytes behind url_private."""

from __future__ import annotations

import requests
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from lab.slack.client import PlaygroundClient
from lab.slack.server import PlaygroundServer

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def _web(playground: PlaygroundServer) -> WebClient:
    return WebClient(token=playground.bot_token, base_url=playground.api_url)


def test_a_file_uploaded_into_a_thread_is_a_reply_carrying_it(
    playground: PlaygroundServer, control: PlaygroundClient
) -> None:
    web = _web(playground)
    parent = web.chat_postMessage(channel="C0INCIDENT", text="incident")
    done = web.files_upload_v2(
        channel="C0INCIDENT",
        thread_ts=parent["ts"],
        content=PNG,
        filename="chart.png",
        title="geo: before/after",
        alt_txt="error rate 100% → 0.0%",
    )
    file_id = done["file"]["id"]
    assert file_id.startswith("F")
    methods = [c["method"] for c in control.calls()["calls"]]
    assert methods[-2:] == ["files.getUploadURLExternal", "files.completeUploadExternal"]

    replies = control.messages(channel="C0INCIDENT", thread_ts=parent["ts"])["messages"]
    shared = [m for m in replies if m.get("files")]
    assert len(shared) == 1 and shared[0]["thread_ts"] == parent["ts"]
    file = shared[0]["files"][0]
    assert file["id"] == file_id and file["mimetype"] == "image/png"
    assert file["title"] == "geo: before/after" and file["alt_txt"] == "error rate 100% → 0.0%"
    assert file["size"] == len(PNG)

    # url_private needs the bot token; the page reads the bytes through the control API.
    assert requests.get(file["url_private"], timeout=5).status_code == 403
    private = requests.get(
        file["url_private"],
        headers={"Authorization": f"Bearer {playground.bot_token}"},
        timeout=5,
    )
    assert private.content == PNG
    assert requests.get(f"{playground.url}/playground/v1/files/{file_id}", timeout=5).content == PNG
    assert web.files_info(file=file_id)["file"]["id"] == file_id

    # An image block may show it by id.
    shown = web.chat_postMessage(
        channel="C0INCIDENT",
        thread_ts=parent["ts"],
        text="card",
        blocks=[{"type": "image", "slack_file": {"id": file_id}, "alt_text": "the chart"}],
    )
    assert shown["message"]["blocks"][0]["slack_file"] == {"id": file_id}

    # Deleting the file takes its message out of the thread.
    web.files_delete(file=file_id)
    replies = control.messages(channel="C0INCIDENT", thread_ts=parent["ts"])["messages"]
    assert not [m for m in replies if m.get("files")]
    try:
        web.files_info(file=file_id)
    except SlackApiError as error:
        assert error.response["error"] == "file_not_found"
    else:
        raise AssertionError("a deleted file is still there")


def test_uploads_are_refused_as_slack_refuses_them(playground: PlaygroundServer) -> None:
    web = _web(playground)
    url = web.files_getUploadURLExternal(filename="x.png", length=len(PNG))
    # Completing before the bytes arrived is refused.
    try:
        web.files_completeUploadExternal(files=[{"id": url["file_id"]}], channel_id="C0INCIDENT")
    except SlackApiError as error:
        assert error.response["error"] == "file_upload_incomplete"
    else:
        raise AssertionError("completed an upload with no bytes")
    assert requests.post(url["upload_url"], data=PNG, timeout=5).status_code == 200
    try:
        web.files_completeUploadExternal(
            files=[{"id": url["file_id"]}], channel_id="C0INCIDENT", thread_ts="1.000001"
        )
    except SlackApiError as error:
        assert error.response["error"] == "invalid_thread_ts"
    else:
        raise AssertionError("shared into a thread that does not exist")
    # An image block must say what it shows, and from one source.
    for bad in (
        {"type": "image", "slack_file": {"id": url["file_id"]}},
        {"type": "image", "alt_text": "x"},
        {"type": "image", "alt_text": "x", "image_url": "http://x/y", "slack_file": {"id": "F"}},
    ):
        try:
            web.chat_postMessage(channel="C0INCIDENT", text="x", blocks=[bad])
        except SlackApiError as error:
            assert error.response["error"] == "invalid_blocks", bad
        else:
            raise AssertionError(f"accepted {bad}")
