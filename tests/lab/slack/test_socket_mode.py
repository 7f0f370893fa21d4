"""A slack-bolt AsyncApp in Socket Mode (slack_sdk's aiohttp client under bolt's
AsyncSocketModeHandler) connects to the playground, receives envelopes and acks them."""

from __future__ import annotations

from typing import Any

import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.lab.slack.conftest import make_app

pytestmark = pytest.mark.asyncio


async def _connected(client: AsyncPlaygroundClient) -> bool:
    return bool((await client.config())["socket_mode_connected"])


async def test_socket_mode_app_receives_commands_clicks_and_events(
    playground: PlaygroundServer, acontrol: AsyncPlaygroundClient
) -> None:
    app = make_app(playground)
    seen: list[str] = []

    @app.command("/stratus")
    async def stratus(ack: Any, command: dict[str, Any], say: Any) -> None:
        seen.append(f"command {command['text']}")
        await ack(text="acked over the socket")
        await say(
            blocks=[
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": "undo",
                            "text": {"type": "plain_text", "text": "Undo"},
                            "value": "u-1",
                        }
                    ],
                }
            ],
            text="card",
        )

    @app.action("undo")
    async def undo(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        seen.append(f"click {body['actions'][0]['value']} by {body['user']['id']}")

    @app.event("app_mention")
    async def mention(event: dict[str, Any]) -> None:
        seen.append(f"mention {event['text']}")

    @app.event("message")
    async def message() -> None:
        return None  # unhandled events are not acked by bolt, and Slack would retry them

    web_client = AsyncWebClient(token=playground.app_token, base_url=playground.api_url)
    handler = AsyncSocketModeHandler(app, playground.app_token, web_client=web_client)
    await handler.connect_async()
    try:
        await acontrol.wait_for(lambda: _connected(acontrol))
        delivery = await acontrol.command("U0ALICE", "/stratus", "status")
        assert delivery["ok"] and delivery["transport"] == "socket_mode", delivery
        assert delivery["response"] == {"text": "acked over the socket"}
        ephemerals = (await acontrol.ephemerals("U0ALICE"))["ephemerals"]
        assert ephemerals[0]["message"]["text"] == "acked over the socket"
        await acontrol.wait_for(lambda: acontrol.calls("chat.postMessage"))
        clicked = await acontrol.click("U0BOB", "undo", value="u-1")
        assert clicked["ok"] and clicked["transport"] == "socket_mode"
        sent = await acontrol.post_message("U0CAROL", "<@U0STRATUS> hi")
        assert all(d["ok"] for d in sent["deliveries"])
        await acontrol.wait_for(lambda: _seen(seen, 3))
        assert seen == ["command status", "click u-1 by U0BOB", "mention <@U0STRATUS> hi"]
        opened = await acontrol.calls("apps.connections.open")
        assert opened["calls"][0]["response"]["url"].startswith("ws://127.0.0.1:")
    finally:
        await handler.close_async()


async def _seen(seen: list[str], count: int) -> bool:
    return len(seen) >= count


async def test_connections_open_needs_the_app_token(playground: PlaygroundServer) -> None:
    bot = AsyncWebClient(token=playground.bot_token, base_url=playground.api_url)
    with pytest.raises(SlackApiError) as refused:
        await bot.apps_connections_open(app_token=playground.bot_token)
    assert refused.value.response.data == {"ok": False, "error": "not_allowed_token_type"}
