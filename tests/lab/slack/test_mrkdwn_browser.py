"""The playground's mrkdwn renderer in a real browser (headless Debian Chromium): markup is
found in the text as sent, so text an app escaped (``&lt;!channel&gt;``) shows literally as on
Slack; mentions of users and user groups show their names, emoji codes their emoji."""

from __future__ import annotations

import pytest

from lab.slack.server import PlaygroundServer
from tests.lab.slack.test_browser import chromium

pytestmark = pytest.mark.asyncio

CASES = {
    # what the app sends: (must appear in the HTML, must not)
    "a &lt;!channel&gt; b": ("&lt;!channel&gt;", 'class="mention"'),
    "ping <!channel>": ('<span class="mention">@channel</span>', "&lt;!channel"),
    "by <@U0ALICE>": ("@alice</span>", "U0ALICE"),
    "ask <!subteam^S0SRE>": ("@sre</span>", "subteam"),
    ":warning: careful": ("⚠️ careful", ":warning:"),
    "&lt;https://evil.example|runbook&gt;": ("&lt;https://evil.example|runbook&gt;", "<a "),
    "see <https://ok.example|the docs>": ('href="https://ok.example"', "&lt;https"),
    "x &amp;&amp; y `a &lt;b&gt;`": ("x &amp;&amp; y <code>a &lt;b&gt;</code>", "&amp;lt;"),
    "<script>alert(1)</script>": ("&lt;script&gt;", "<script>"),
    # Formatting as Slack reads it: a closing mark is one followed by a boundary, so a word
    # with underscores inside italics does not end them; marks around a code span format it.
    "_Metrics: none (STRATUS_PROMETHEUS_URL is not set)_": (
        "<i>Metrics: none (STRATUS_PROMETHEUS_URL is not set)</i>",
        "_Metrics",
    ),
    "_before `x` after_": ("<i>before <code>x</code> after</i>", "_before"),
    "*Attempt 1:* `a` _(the model's words)_": (
        "<b>Attempt 1:</b> <code>a</code> <i>(the model's words)</i>",
        "*",
    ),
    "~gone~ and *x*.": ("<s>gone</s> and <b>x</b>.", "~"),
    "snake_case_name and 2*3*4": ("snake_case_name and 2*3*4", "<i>"),
    "2 * 3 * 4 and a _ b _ c": ("2 * 3 * 4 and a _ b _ c", "<b>"),
    "`*not bold* _nor it_`": ("<code>*not bold* _nor it_</code>", "<b>"),
}


async def test_mrkdwn_renders_markup_as_sent_and_escaped_text_literally(
    playground: PlaygroundServer,
) -> None:
    executable = chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page()
            await page.goto(playground.url + "/")
            await page.wait_for_function(
                "() => typeof ui !== 'undefined' && ui.state && ui.state.config"
            )
            for source, (shown, absent) in CASES.items():
                html = await page.evaluate("(s) => md(s)", source)
                assert shown in html, (source, html)
                assert absent not in html, (source, html)
        finally:
            await browser.close()


LONG = "x" * 400


async def test_the_thread_pane_never_scrolls_sideways_and_the_page_has_a_favicon(
    playground: PlaygroundServer,
) -> None:
    """A thread reply holding one long unbroken word, code span and code block (a digest, a
    URL, a log line) wraps inside the pane; the page asks for no file it cannot get."""
    executable = chromium()
    from playwright.async_api import async_playwright
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=playground.bot_token, base_url=playground.api_url)
    parent = await client.chat_postMessage(channel="C0INCIDENT", text="Incident in hotel")
    await client.chat_postMessage(
        channel="C0INCIDENT",
        thread_ts=parent["ts"],
        text="long",
        blocks=[
            {"type": "section", "text": {"type": "mrkdwn", "text": f"{LONG} `{LONG}`"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": f"```{LONG}```"}},
            {"type": "section", "fields": [{"type": "mrkdwn", "text": LONG}] * 2},
        ],
    )
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            failed: list[str] = []
            page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
            await page.goto(f"{playground.url}/?channel=C0INCIDENT&ts={parent['ts']}")
            await page.wait_for_function(
                "() => document.querySelector('#thread-messages code') !== null"
            )
            for pane in ("#thread", "#thread-messages", "#messages"):
                wide = await page.evaluate(
                    "(s) => { const e = document.querySelector(s);"
                    " return [e.scrollWidth, e.clientWidth]; }",
                    pane,
                )
                assert wide[0] <= wide[1], (pane, wide)
            icon = await page.request.get(playground.url + "/favicon.ico")
            assert icon.status == 200 and icon.headers["content-type"].startswith("image/")
            assert await page.evaluate("() => document.querySelector('link[rel=icon]') !== null")
            assert not failed, failed
        finally:
            await browser.close()
