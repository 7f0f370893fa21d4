"""A real slack-bolt AsyncApp in HTTP mode receives signed slash commands, clicks, modal
submissions and events from the playground; its Web API calls land in the playground."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from slack_bolt.async_app import AsyncApp

from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.lab.slack.conftest import make_app

pytestmark = pytest.mark.asyncio

CARD = [
    {"type": "header", "text": {"type": "plain_text", "text": "Scale shop/web to 3"}},
    {"type": "section", "text": {"type": "mrkdwn", "text": "*Risk:* low"}},
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            {
                "type": "button",
                "action_id": "approve",
                "text": {"type": "plain_text", "text": "Approve once"},
                "style": "primary",
                "value": "p-1",
                "confirm": {
                    "title": {"type": "plain_text", "text": "Sure?"},
                    "text": {"type": "mrkdwn", "text": "Scale *web*"},
                    "confirm": {"type": "plain_text", "text": "Yes"},
                    "deny": {"type": "plain_text", "text": "No"},
                },
            },
            {
                "type": "button",
                "action_id": "reject",
                "text": {"type": "plain_text", "text": "Reject"},
                "style": "danger",
                "value": "p-1",
            },
            {
                "type": "static_select",
                "action_id": "other",
                "placeholder": {"type": "plain_text", "text": "Other options"},
                "options": [
                    {"text": {"type": "plain_text", "text": "Restart"}, "value": "restart"},
                    {"text": {"type": "plain_text", "text": "Roll back"}, "value": "rollback"},
                ],
            },
        ],
    },
]

REASON_MODAL = {
    "type": "modal",
    "callback_id": "reject_reason",
    "title": {"type": "plain_text", "text": "Reject"},
    "submit": {"type": "plain_text", "text": "Reject"},
    "private_metadata": "p-1",
    "blocks": [
        {
            "type": "input",
            "block_id": "reason",
            "label": {"type": "plain_text", "text": "Why?"},
            "element": {"type": "plain_text_input", "action_id": "text"},
        }
    ],
}


def tiny_app(playground: PlaygroundServer, seen: list[dict[str, Any]]) -> AsyncApp:
    app = make_app(playground)

    @app.command("/stratus")
    async def stratus(ack: Any, command: dict[str, Any], client: Any) -> None:
        seen.append({"command": command})
        await ack(f"Investigating {command['text']}…")
        await client.chat_postMessage(channel=command["channel_id"], text="card", blocks=CARD)

    @app.action("approve")
    async def approve(ack: Any, body: dict[str, Any], client: Any, respond: Any) -> None:
        await ack()
        seen.append({"action": body})
        await client.chat_update(
            channel=body["channel"]["id"],
            ts=body["message"]["ts"],
            text=f"approved by <@{body['user']['id']}>",
            blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": "Executed ✅"}}],
        )
        await respond(text="You approved it.", replace_original=False)

    @app.action("other")
    async def other(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        seen.append({"action": body})

    @app.action("reject")
    async def reject(ack: Any, body: dict[str, Any], client: Any) -> None:
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=REASON_MODAL)

    @app.view("reject_reason")
    async def reason(ack: Any, view: dict[str, Any], body: dict[str, Any]) -> None:
        text = view["state"]["values"]["reason"]["text"]["value"]
        if len(text) < 5:
            await ack(response_action="errors", errors={"reason": "Say a little more."})
            return
        seen.append({"reason": text, "user": body["user"]["id"]})
        await ack()

    @app.event("app_mention")
    async def mention(event: dict[str, Any], say: Any) -> None:
        seen.append({"mention": event})
        await say(text="On it.", thread_ts=event.get("thread_ts") or event["ts"])

    @app.event("message")
    async def message(event: dict[str, Any]) -> None:
        seen.append({"message": event})

    @app.event("app_home_opened")
    async def home(event: dict[str, Any], client: Any) -> None:
        await client.views_publish(
            user_id=event["user"],
            view={
                "type": "home",
                "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "No approvals"}}],
            },
        )

    return app


async def test_slash_command_reaches_bolt_and_its_calls_are_captured(
    playground: PlaygroundServer, acontrol: AsyncPlaygroundClient, bolt_http: Any
) -> None:
    seen: list[dict[str, Any]] = []
    await bolt_http(tiny_app(playground, seen))
    delivery = await acontrol.command("U0ALICE", "/stratus", "investigate shop")
    assert delivery["ok"], delivery
    assert delivery["transport"] == "http"
    assert delivery["attempts"][0]["status"] == 200
    command = seen[0]["command"]
    assert command["user_id"] == "U0ALICE"
    assert command["channel_id"] == "C0INCIDENT"
    assert command["text"] == "investigate shop"
    assert command["response_url"].startswith(playground.url)
    assert command["trigger_id"]
    # The ack's text is shown to the user alone, as Slack shows an ephemeral.
    ephemerals = (await acontrol.ephemerals("U0ALICE"))["ephemerals"]
    assert ephemerals[0]["message"]["text"] == "Investigating investigate shop…"
    # The card posted in the background (after the ack) arrives in the channel.
    posted = await acontrol.wait_for(lambda: acontrol.calls("chat.postMessage"))
    assert posted["calls"][0]["ok"]
    methods = [c["method"] for c in (await acontrol.calls())["calls"]]
    assert methods[0] == "auth.test"  # bolt authorizes its first request
    messages = (await acontrol.messages("C0INCIDENT"))["messages"]
    assert messages[-1]["blocks"][0]["type"] == "header"
    assert messages[-1]["bot_id"] == "B0STRATUS"


async def test_click_updates_the_card_and_response_url_answers_the_clicker(
    playground: PlaygroundServer, acontrol: AsyncPlaygroundClient, bolt_http: Any
) -> None:
    seen: list[dict[str, Any]] = []
    await bolt_http(tiny_app(playground, seen))
    await acontrol.command("U0ALICE", "/stratus", "investigate shop")
    await acontrol.wait_for(lambda: acontrol.calls("chat.postMessage"))
    selected = await acontrol.click("U0CAROL", "other", selected="rollback")
    assert selected["ok"]
    assert seen[-1]["action"]["actions"][0]["selected_option"]["value"] == "rollback"
    clicked = await acontrol.click("U0BOB", "approve", value="p-1")
    assert clicked["ok"], clicked
    body = seen[-1]["action"]
    assert body["type"] == "block_actions"
    assert body["user"]["id"] == "U0BOB"
    assert body["actions"][0]["value"] == "p-1"
    assert body["actions"][0]["block_id"] == "decide"
    assert body["container"]["type"] == "message"
    card = await acontrol.wait_for(
        lambda: _last_text(acontrol, "C0INCIDENT", "approved by <@U0BOB>")
    )
    assert card["edited"]["user"] == "U0STRATUS"
    ephemerals = await acontrol.wait_for(lambda: _ephemeral_texts(acontrol, "U0BOB"))
    assert "You approved it." in ephemerals


async def _last_text(client: AsyncPlaygroundClient, channel: str, text: str) -> Any:
    messages = (await client.messages(channel))["messages"]
    return next((m for m in messages if m["text"] == text), None)


async def _ephemeral_texts(client: AsyncPlaygroundClient, user: str) -> list[str]:
    return [e["message"]["text"] for e in (await client.ephemerals(user))["ephemerals"]]


async def test_modal_from_a_click_validates_then_submits(
    playground: PlaygroundServer, acontrol: AsyncPlaygroundClient, bolt_http: Any
) -> None:
    seen: list[dict[str, Any]] = []
    await bolt_http(tiny_app(playground, seen))
    await acontrol.command("U0ALICE", "/stratus", "investigate shop")
    await acontrol.wait_for(lambda: acontrol.calls("chat.postMessage"))
    await acontrol.click("U0CAROL", "reject", value="p-1")
    views = await acontrol.wait_for(lambda: _open_views(acontrol, "U0CAROL"))
    view_id = views[0]["view"]["id"]
    refused = await acontrol.submit(view_id, {"text": "no"})
    assert refused["ok"] and refused["open"]
    assert refused["view"]["errors"] == {"reason": "Say a little more."}
    accepted = await acontrol.submit(view_id, {"text": "wrong namespace"})
    assert accepted["ok"] and not accepted["open"]
    assert {"reason": "wrong namespace", "user": "U0CAROL"} in seen


async def _open_views(client: AsyncPlaygroundClient, user: str) -> list[Any]:
    return [v for v in (await client.views(user))["views"] if v["open"]]


async def test_thread_message_mention_and_home_events(
    playground: PlaygroundServer, acontrol: AsyncPlaygroundClient, bolt_http: Any
) -> None:
    seen: list[dict[str, Any]] = []
    await bolt_http(tiny_app(playground, seen))
    await acontrol.command("U0ALICE", "/stratus", "investigate shop")
    posted = await acontrol.wait_for(lambda: acontrol.calls("chat.postMessage"))
    parent_ts = posted["calls"][0]["response"]["ts"]
    sent = await acontrol.post_message("U0BOB", "<@U0STRATUS> why geo?", thread_ts=parent_ts)
    assert [d["label"] for d in sent["deliveries"]] == ["event:message", "event:app_mention"]
    assert all(d["ok"] for d in sent["deliveries"])
    message = next(s["message"] for s in seen if "message" in s)
    assert message["thread_ts"] == parent_ts and message["channel_type"] == "channel"
    reply = await acontrol.wait_for(lambda: _last_text(acontrol, "C0INCIDENT", "On it."))
    assert reply["thread_ts"] == parent_ts
    home = await acontrol.open_home("U0DAVE")
    assert home["ok"]
    views = await acontrol.wait_for(lambda: acontrol.views("U0DAVE"))
    assert views["views"][0]["kind"] == "home"


async def test_an_unanswered_event_is_retried_with_slack_retry_headers(
    playground: PlaygroundServer, acontrol: AsyncPlaygroundClient, bolt_http: Any
) -> None:
    app = make_app(playground)
    retries: list[tuple[str | None, str | None]] = []

    @app.middleware
    async def slow_first_time(req: Any, resp: Any, next: Any) -> Any:
        num = req.headers.get("x-slack-retry-num", [None])[0]
        retries.append((num, req.headers.get("x-slack-retry-reason", [None])[0]))
        if num is None:
            await asyncio.sleep(1.0)
        return await next()

    @app.event("message")
    async def message() -> None:
        return None

    await bolt_http(app)
    await acontrol.configure(ack_timeout=0.4)
    sent = await acontrol.post_message("U0BOB", "hello")
    first = sent["deliveries"][0]
    assert not first["ok"] and first["attempts"][0]["reason"] == "http_timeout"
    record = await acontrol.wait_for(lambda: _delivered(acontrol, first["id"]))
    assert record["attempts"][1]["retry_num"] == 1
    assert ("1", "http_timeout") in retries


async def _delivered(client: AsyncPlaygroundClient, delivery_id: str) -> Any:
    records = (await client.deliveries())["deliveries"]
    return next((d for d in records if d["id"] == delivery_id and d["ok"]), None)


async def test_a_slow_command_fails_like_slack_with_operation_timeout(
    playground: PlaygroundServer, acontrol: AsyncPlaygroundClient, bolt_http: Any
) -> None:
    app = make_app(playground)

    @app.command("/stratus")
    async def slow(ack: Any) -> None:
        await asyncio.sleep(1.0)
        await ack()

    await bolt_http(app)
    await acontrol.configure(ack_timeout=0.3)
    delivery = await acontrol.command("U0ALICE", "/stratus", "status")
    assert not delivery["ok"]
    assert delivery["error"] == "operation_timeout"
    assert len(delivery["attempts"]) == 1  # Slack does not retry commands


async def test_no_app_configured_is_a_dispatch_failure(acontrol: AsyncPlaygroundClient) -> None:
    delivery = await acontrol.command("U0ALICE", "/stratus", "help")
    assert delivery == {**delivery, "ok": False, "error": "dispatch_failed"}
