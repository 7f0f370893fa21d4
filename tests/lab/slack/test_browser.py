"""The playground page in a real browser (headless Debian Chromium through Playwright): a
person types a slash command, sees the bot's card, confirms a click as another user, sees the
card change, and switches users. Screenshots are kept in tmp/artifacts/slack-playground/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from slack_bolt.async_app import AsyncApp

from lab.slack.server import PlaygroundServer
from tests.lab.slack.conftest import make_app

pytestmark = pytest.mark.asyncio

REPO = Path(__file__).resolve().parents[3]
ARTIFACTS = Path(os.environ.get("STRATUS_ARTIFACTS", REPO / "tmp" / "artifacts")) / (
    "slack-playground"
)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Debian's chromium is not installed (scripts/setup installs it with apt-get)")
    return found


def card(state: str, by: str | None = None) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Scale hotel/geo to 1"}},
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": f"*State:* {state} _by_ {by or 'nobody'}"},
            "fields": [
                {"type": "mrkdwn", "text": "*Risk*\nlow"},
                {"type": "mrkdwn", "text": "*Target*\n`deployment/geo`"},
            ],
        },
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "diff below"}]},
        {"type": "section", "text": {"type": "mrkdwn", "text": "```replicas: 0 -> 1```"}},
        {"type": "divider"},
    ]
    if state == "awaiting approval":
        buttons = [
            {
                "type": "button",
                "action_id": "approve",
                "style": "primary",
                "value": "p-1",
                "text": {"type": "plain_text", "text": "Approve once"},
                "confirm": {
                    "title": {"type": "plain_text", "text": "Scale geo?"},
                    "text": {"type": "mrkdwn", "text": "This *writes* to the cluster."},
                    "confirm": {"type": "plain_text", "text": "Do it"},
                    "deny": {"type": "plain_text", "text": "Back"},
                },
            },
            {
                "type": "button",
                "action_id": "reject",
                "style": "danger",
                "value": "p-1",
                "text": {"type": "plain_text", "text": "Reject"},
            },
        ]
    elif state == "executed":
        buttons = [
            {
                "type": "button",
                "action_id": "undo",
                "value": "p-1",
                "text": {"type": "plain_text", "text": "Undo"},
            }
        ]
    else:
        buttons = []
    if buttons:
        blocks.append({"type": "actions", "block_id": "decide", "elements": buttons})
    return blocks


def browser_app(playground: PlaygroundServer) -> AsyncApp:
    app = make_app(playground)

    @app.command("/stratus")
    async def stratus(ack: Any, command: dict[str, Any], client: Any) -> None:
        await ack(f"Investigating `{command['text']}` for <@{command['user_id']}>")
        await client.chat_postMessage(
            channel=command["channel_id"], text="proposal", blocks=card("awaiting approval")
        )

    async def change(body: dict[str, Any], client: Any, state: str) -> None:
        await client.chat_update(
            channel=body["channel"]["id"],
            ts=body["message"]["ts"],
            text=state,
            blocks=card(state, f"<@{body['user']['id']}>"),
        )

    @app.action("approve")
    async def approve(ack: Any, body: dict[str, Any], client: Any) -> None:
        await ack()
        await change(body, client, "executed")

    @app.action("undo")
    async def undo(ack: Any, body: dict[str, Any], client: Any) -> None:
        await ack()
        await change(body, client, "undone")

    return app


async def test_a_person_drives_the_bot_from_the_page(
    playground: PlaygroundServer, bolt_http: Any
) -> None:
    executable = chromium()
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await bolt_http(browser_app(playground))
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            await page.goto(playground.url + "/")
            await page.select_option("#user-switcher", "U0ALICE")
            await page.fill("#composer-input", "/stratus investigate hotel")
            await page.press("#composer-input", "Enter")
            header = page.locator(".bk-header h4", has_text="Scale hotel/geo to 1")
            await expect(header).to_be_visible(timeout=10_000)
            ephemeral = page.locator(".message.ephemeral")
            await expect(ephemeral).to_contain_text("Only visible to you")
            await expect(ephemeral.locator("code")).to_have_text("investigate hotel")
            await expect(ephemeral.locator(".mention")).to_have_text("@alice")
            await expect(page.locator(".bk-section b").first).to_have_text("State:")
            await expect(page.locator(".bk-fields code")).to_have_text("deployment/geo")
            await expect(page.locator("pre")).to_have_text("replicas: 0 -> 1")
            await page.screenshot(path=str(ARTIFACTS / "1-card.png"), full_page=True)

            await page.select_option("#user-switcher", "U0BOB")
            # Bob does not see Alice's ephemeral reply.
            await expect(page.locator(".message.ephemeral")).to_have_count(0)
            await page.click("button[data-action-id=approve]")
            dialog = page.get_by_role("dialog", name="Confirm")
            await expect(dialog).to_contain_text("This writes to the cluster.")
            await page.screenshot(path=str(ARTIFACTS / "2-confirm.png"))
            await dialog.get_by_role("button", name="Do it").click()
            await expect(page.locator(".bk-section .bk-text").first).to_contain_text(
                "executed by @bob", timeout=10_000
            )
            await expect(page.locator(".edited")).to_be_visible()
            await page.screenshot(path=str(ARTIFACTS / "3-executed.png"), full_page=True)

            await page.click("button[data-action-id=undo]")
            await expect(page.locator(".bk-section .bk-text").first).to_contain_text(
                "undone by @bob", timeout=10_000
            )
            await expect(page.locator("button[data-action-id]")).to_have_count(0)
            await page.screenshot(path=str(ARTIFACTS / "4-undone.png"), full_page=True)
        finally:
            await browser.close()
    assert (ARTIFACTS / "4-undone.png").stat().st_size > 0
