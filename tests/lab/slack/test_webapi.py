"""The playground's Web API through slack_sdk's real clients over HTTP: shapes, errors,
Block Kit limits, tokens and rate limits."""

from __future__ import annotations

import time
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from lab.slack.client import PlaygroundClient
from lab.slack.server import PlaygroundServer


@pytest.fixture
def web(playground: PlaygroundServer) -> WebClient:
    return WebClient(token=playground.bot_token, base_url=playground.api_url)


def _error(call: Any) -> dict[str, Any]:
    with pytest.raises(SlackApiError) as failed:
        call()
    data: dict[str, Any] = failed.value.response.data
    return data


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def test_auth_test_answers_with_the_bot_identity(
    web: WebClient, playground: PlaygroundServer
) -> None:
    answer = web.auth_test()
    assert answer["user_id"] == "U0STRATUS" and answer["bot_id"] == "B0STRATUS"
    assert answer["team_id"] == "T0PLAYGRND" and answer["url"] == playground.url + "/"


def test_tokens_are_checked(playground: PlaygroundServer) -> None:
    wrong = WebClient(token="xoxb-1-not-ours", base_url=playground.api_url)
    assert _error(wrong.auth_test) == {"ok": False, "error": "invalid_auth"}
    anonymous = WebClient(base_url=playground.api_url)
    assert _error(anonymous.auth_test)["error"] == "not_authed"
    app_level = WebClient(token=playground.app_token, base_url=playground.api_url)
    assert (
        _error(lambda: app_level.chat_postMessage(channel="C0INCIDENT", text="x"))["error"]
        == "not_allowed_token_type"
    )


def test_post_in_threads_and_read_them_back(web: WebClient) -> None:
    parent = web.chat_postMessage(channel="#incidents", text="incident", blocks=[section("*x*")])
    assert parent["channel"] == "C0INCIDENT"
    message = parent["message"]
    assert message["bot_id"] == "B0STRATUS" and message["user"] == "U0STRATUS"
    assert message["blocks"][0]["block_id"]  # Slack fills in block IDs
    web.chat_postMessage(channel="C0INCIDENT", text="step 1", thread_ts=parent["ts"])
    broadcast = web.chat_postMessage(
        channel="C0INCIDENT", text="resolved", thread_ts=parent["ts"], reply_broadcast=True
    )
    assert broadcast["message"]["subtype"] == "thread_broadcast"
    replies = web.conversations_replies(channel="C0INCIDENT", ts=parent["ts"])["messages"]
    assert [m["text"] for m in replies] == ["incident", "step 1", "resolved"]
    assert replies[0]["reply_count"] == 2 and replies[0]["reply_users"] == ["U0STRATUS"]
    history = web.conversations_history(channel="C0INCIDENT")["messages"]
    assert [m["text"] for m in history] == ["resolved", "incident"]  # newest first
    page = web.conversations_replies(channel="C0INCIDENT", ts=parent["ts"], limit=2)
    assert page["has_more"] and page["response_metadata"]["next_cursor"]
    rest = web.conversations_replies(
        channel="C0INCIDENT", ts=parent["ts"], cursor=page["response_metadata"]["next_cursor"]
    )
    assert [m["text"] for m in rest["messages"]] == ["resolved"]
    link = web.chat_getPermalink(channel="C0INCIDENT", message_ts=broadcast["ts"])
    assert f"thread_ts={parent['ts']}" in link["permalink"]
    updated = web.chat_update(channel="C0INCIDENT", ts=parent["ts"], text="incident (resolved)")
    assert updated["message"]["edited"]["user"] == "U0STRATUS"
    web.reactions_add(channel="C0INCIDENT", timestamp=parent["ts"], name="white_check_mark")
    assert (
        _error(
            lambda: web.reactions_add(
                channel="C0INCIDENT", timestamp=parent["ts"], name="white_check_mark"
            )
        )["error"]
        == "already_reacted"
    )


def test_channel_and_message_errors(web: WebClient) -> None:
    assert _error(lambda: web.chat_postMessage(channel="C0NOPE", text="x"))["error"] == (
        "channel_not_found"
    )
    assert _error(lambda: web.chat_postMessage(channel="#random", text="x"))["error"] == (
        "not_in_channel"
    )
    no_text = _error(lambda: web.api_call("chat.postMessage", json={"channel": "C0INCIDENT"}))
    assert no_text["error"] == "no_text"
    assert (
        _error(lambda: web.chat_postMessage(channel="C0INCIDENT", text="x" * 40_001))["error"]
        == "msg_too_long"
    )
    assert (
        _error(lambda: web.chat_update(channel="C0INCIDENT", ts="1.000001", text="x"))["error"]
        == "message_not_found"
    )
    assert (
        _error(lambda: web.conversations_replies(channel="C0INCIDENT", ts="1.000001"))["error"]
        == "thread_not_found"
    )
    assert _error(lambda: web.users_info(user="U0NOBODY"))["error"] == "user_not_found"
    assert _error(lambda: web.usergroups_users_list(usergroup="S0NONE"))["error"] == (
        "no_such_subteam"
    )
    assert (
        _error(lambda: web.chat_postEphemeral(channel="C0INCIDENT", user="U0NOBODY", text="x"))[
            "error"
        ]
        == "user_not_found"
    )
    assert web.conversations_info(channel="C0RANDOM")["channel"]["is_member"] is False


def test_users_and_groups(web: WebClient) -> None:
    alice = web.users_info(user="U0ALICE")["user"]
    assert alice["name"] == "alice" and alice["profile"]["display_name"] == "alice"
    assert web.usergroups_users_list(usergroup="S0SRE")["users"] == ["U0ALICE", "U0BOB", "U0CAROL"]
    assert web.chat_postEphemeral(channel="C0INCIDENT", user="U0DAVE", text="psst")["message_ts"]


@pytest.mark.parametrize(
    ("blocks", "pointer"),
    [
        (
            [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}],
            "/blocks/0/text/text",
        ),
        ([section("s" * 3001)], "/blocks/0/text/text"),
        ([section("x")] * 51, "/blocks"),
        (
            [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}],
            "/blocks/0/fields",
        ),
        (
            [
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "text": {"type": "plain_text", "text": "b" * 76},
                            "value": "v",
                        }
                    ],
                }
            ],
            "/blocks/0/elements/0/text/text",
        ),
        (
            [
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "text": {"type": "plain_text", "text": "b"},
                            "value": "v" * 2001,
                        }
                    ],
                }
            ],
            "/blocks/0/elements/0/value",
        ),
        (
            [
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "text": {"type": "plain_text", "text": "b"},
                            "action_id": f"a{i}",
                        }
                        for i in range(26)
                    ],
                }
            ],
            "/blocks/0/elements",
        ),
        (
            [{"type": "section", "block_id": "b" * 256, "text": {"type": "mrkdwn", "text": "x"}}],
            "/blocks/0/block_id",
        ),
        ([{"type": "carousel"}], "/blocks/0/type"),
    ],
)
def test_block_kit_limits_are_slacks(web: WebClient, blocks: list[Any], pointer: str) -> None:
    refused = _error(lambda: web.chat_postMessage(channel="C0INCIDENT", text="x", blocks=blocks))
    assert refused["error"] == "invalid_blocks"
    assert any(f"[json-pointer:{pointer}]" in e for e in refused["errors"]), refused


def test_views_need_a_fresh_trigger_and_keep_their_hash(
    web: WebClient, control: PlaygroundClient, playground: PlaygroundServer
) -> None:
    modal = {
        "type": "modal",
        "title": {"type": "plain_text", "text": "Reason"},
        "blocks": [section("why?")],
    }
    assert _error(lambda: web.views_open(trigger_id="123.456.abc", view=modal))["error"] == (
        "invalid_trigger_id"
    )
    # Triggers come with what a person does: a command here (no app: the delivery fails,
    # but the trigger was issued and put in the payload).
    payload = control.command("U0ALICE", "/stratus", "x")["payload"]
    opened = web.views_open(trigger_id=payload["trigger_id"], view=modal)["view"]
    assert opened["id"].startswith("V") and opened["state"] == {"values": {}}
    assert (
        _error(lambda: web.views_open(trigger_id=payload["trigger_id"], view=modal))["error"]
        == "expired_trigger_id"
    )
    updated = web.views_update(view_id=opened["id"], view=modal, hash=opened["hash"])["view"]
    assert (
        _error(lambda: web.views_update(view_id=opened["id"], view=modal, hash="stale"))["error"]
        == "hash_conflict"
    )
    assert updated["id"] == opened["id"]
    late = control.command("U0ALICE", "/stratus", "x")["payload"]["trigger_id"]
    time.sleep(playground.config.trigger_ttl + 0.1)
    assert _error(lambda: web.views_open(trigger_id=late, view=modal))["error"] == (
        "expired_trigger_id"
    )
    too_long = {**modal, "title": {"type": "plain_text", "text": "t" * 25}}
    fresh = control.command("U0ALICE", "/stratus", "x")["payload"]["trigger_id"]
    assert _error(lambda: web.views_open(trigger_id=fresh, view=too_long))["error"] == (
        "invalid_arguments"
    )
    home = web.views_publish(user_id="U0BOB", view={"type": "home", "blocks": [section("hi")]})
    assert home["view"]["type"] == "home"


def test_rate_limits_answer_429_with_retry_after(web: WebClient, control: PlaygroundClient) -> None:
    control.configure(rate_limits={"users.info": 2})
    web.users_info(user="U0ALICE")
    web.users_info(user="U0ALICE")
    with pytest.raises(SlackApiError) as limited:
        web.users_info(user="U0ALICE")
    assert limited.value.response.status_code == 429
    assert limited.value.response.data == {"ok": False, "error": "ratelimited"}
    assert 1 <= int(limited.value.response.headers["Retry-After"]) <= 60
    web.auth_test()  # other methods are counted apart
    calls = control.calls("users.info")["calls"]
    assert [c["status"] for c in calls] == [200, 200, 429]


@pytest.mark.asyncio
async def test_a_client_that_honours_retry_after_gets_through(
    playground: PlaygroundServer, acontrol: Any
) -> None:
    await acontrol.configure(rate_limits={"chat.postMessage": 1}, rate_window=1.0)
    client = AsyncWebClient(
        token=playground.bot_token,
        base_url=playground.api_url,
        retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=2)],
    )
    started = time.monotonic()
    await client.chat_postMessage(channel="C0INCIDENT", text="one")
    second = await client.chat_postMessage(channel="C0INCIDENT", text="two")
    assert second["ok"] and time.monotonic() - started >= 0.9
    statuses = [c["status"] for c in (await acontrol.calls("chat.postMessage"))["calls"]]
    assert statuses == [200, 429, 200]


def test_a_limit_of_zero_refuses_every_call_with_retry_after(
    web: WebClient, control: PlaygroundClient
) -> None:
    """A limit of 0 (a method Slack refuses outright, for a test of the client's retries)
    answered with an IndexError: the limiter read the oldest call of an empty window."""
    control.configure(rate_limits={"chat.postMessage": 0}, rate_window=1.0)
    for _ in range(2):
        with pytest.raises(SlackApiError) as limited:
            web.chat_postMessage(channel="C0INCIDENT", text="never")
        assert limited.value.response.status_code == 429
        assert limited.value.response.data == {"ok": False, "error": "ratelimited"}
        assert int(limited.value.response.headers["Retry-After"]) == 1
    control.configure(rate_limits={"chat.postMessage": -3})  # read as 0, never a crash
    with pytest.raises(SlackApiError) as limited:
        web.chat_postMessage(channel="C0INCIDENT", text="never")
    assert limited.value.response.status_code == 429
    control.configure(rate_limits={})
    assert web.chat_postMessage(channel="C0INCIDENT", text="now")["ok"]
    calls = control.calls("chat.postMessage")["calls"]
    assert [c["status"] for c in calls] == [429, 429, 429, 200]


def test_chat_delete_takes_a_thread_with_its_parent(
    web: WebClient, playground: PlaygroundServer
) -> None:
    """A bot deletes its own messages; once a thread's parent is gone, the thread is gone for
    the bot too — replying answers ``thread_not_found``, editing ``message_not_found``."""
    parent = web.chat_postMessage(channel="C0INCIDENT", text="incident")
    reply = web.chat_postMessage(channel="C0INCIDENT", text="card", thread_ts=parent["ts"])
    deleted = web.chat_delete(channel="C0INCIDENT", ts=parent["ts"])
    assert deleted["channel"] == "C0INCIDENT" and deleted["ts"] == parent["ts"]
    assert (
        _error(
            lambda: web.chat_postMessage(channel="C0INCIDENT", text="x", thread_ts=parent["ts"])
        )["error"]
        == "thread_not_found"
    )
    assert (
        _error(lambda: web.chat_update(channel="C0INCIDENT", ts=reply["ts"], text="x"))["error"]
        == "message_not_found"
    )
    assert (
        _error(lambda: web.chat_delete(channel="C0INCIDENT", ts=parent["ts"]))["error"]
        == "message_not_found"
    )
    someone = PlaygroundClient(playground.url).post_message("U0ALICE", "hi", "C0INCIDENT")
    assert (
        _error(lambda: web.chat_delete(channel="C0INCIDENT", ts=someone["ts"]))["error"]
        == "cant_delete_message"
    )
