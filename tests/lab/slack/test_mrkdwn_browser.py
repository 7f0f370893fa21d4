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
