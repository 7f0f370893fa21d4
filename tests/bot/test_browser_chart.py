"""Issue 23 in a real browser (Debian's headless Chromium through Playwright), on ``stratus
demo`` (its Prometheus scrapes the lab): a person injects ``hotel-recommendation-scaled-to-
zero`` and investigates; the card shows its before/after chart (an image that loads, with the
figures as alt text) and links each figure to its PromQL on Prometheus; the chart file is in
the thread. After the approval the chart is drawn again with the change marked. Then
``/stratus postmortem`` puts the draft in the thread as a file. Screenshots are kept in
tmp/artifacts/chart-browser/ (or under ``$STRATUS_ARTIFACTS``)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.bot.demo_process import REPO, DemoProcess
from tests.bot.test_demo_browser import _confirm_if_asked, chromium, scroll_to

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]
ARTIFACTS = Path(os.environ.get("STRATUS_ARTIFACTS", REPO / "tmp" / "artifacts")) / (
    "chart-browser"
)
SCENARIO = "hotel-recommendation-scaled-to-zero"


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    chromium()
    process = DemoProcess(tmp_path / "demo").start()
    if "prometheus: not started" in "\n".join(process.lines):
        process.stop()
        pytest.skip("the demo's Prometheus did not start (Debian's prometheus is missing)")
    yield process
    process.stop()


async def test_a_card_shows_its_chart_and_links_and_the_thread_gets_a_postmortem(
    demo: DemoProcess,
) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            await page.goto(demo.url + "/")
            await page.select_option("#user-switcher", "U0ALICE")
            await page.select_option("#fault-select", SCENARIO)
            await page.click("#inject-fault")
            await expect(page.locator(".toast").first).to_contain_text(f"Injected {SCENARIO}")
            await page.fill("#composer-input", "/stratus investigate hotel")
            await page.press("#composer-input", "Enter")

            replies = page.locator("#messages a.replies")
            await expect(replies.first).to_be_visible(timeout=30_000)
            thread = page.locator("#thread-messages")
            card = thread.locator(
                ".message", has=page.locator('button[data-action-id="stratus.approve"]')
            ).filter(has_text="recommendation")
            deadline = time.monotonic() + 90
            while True:
                for index in range(await replies.count()):
                    await replies.nth(index).click()
                    if await card.count() == 1:
                        break
                else:
                    assert time.monotonic() < deadline, "no card to approve in any thread"
                    await page.wait_for_timeout(1_000)
                    continue
                break

            # The card shows its chart: an image that loaded, its alt text the figures.
            chart = card.locator("img.bk-image")
            await expect(chart).to_have_count(1, timeout=30_000)
            alt = await chart.get_attribute("alt") or ""
            assert alt.startswith("Chart of deployment/recommendation"), alt
            assert "Callers' errors:" in alt, alt
            loaded = await chart.evaluate("img => img.complete && img.naturalWidth")
            assert loaded and int(loaded) >= 600, loaded
            # The PNG is a file in the thread too.
            await expect(thread.locator("img.file-image").first).to_be_visible()

            # Each figure links to its PromQL on the demo's Prometheus.
            link = card.locator("a", has_text="callers' errors")
            href = await link.get_attribute("href") or ""
            parts = urlsplit(href)
            assert parts.path == "/graph", href
            assert "http_client_requests_total" in parse_qs(parts.query)["g0.expr"][0], href
            await scroll_to(chart)
            await page.screenshot(path=str(ARTIFACTS / "1-card-chart.png"), full_page=True)
            # Followed, the link opens Prometheus' own page with that query in its editor.
            async with page.context.expect_page() as opened:
                await link.click()
            prometheus = await opened.value
            await expect(prometheus.locator("body")).to_contain_text(
                "http_client_requests_total", timeout=30_000
            )
            # …over a range with the figures in it (Debian's Prometheus 2 page says how many
            # series it drew; its end is read to the minute, which the link allows for).
            await expect(prometheus.locator("body")).to_contain_text(
                re.compile(r"Total time series: [1-9]"), timeout=30_000
            )
            await prometheus.screenshot(path=str(ARTIFACTS / "1-prometheus.png"))
            await prometheus.close()

            # After the approval the chart is drawn again, the change marked.
            await card.locator('button[data-action-id="stratus.approve"]').click()
            await _confirm_if_asked(page)
            redrawn = thread.locator('img.bk-image[alt*="the change ran at"]')
            await expect(redrawn).to_have_count(1, timeout=90_000)
            await scroll_to(redrawn)
            await page.screenshot(path=str(ARTIFACTS / "2-after-chart.png"), full_page=True)

            # The postmortem draft, as a file in the incident's thread.
            await page.fill("#thread-input", "postmortem please")
            await page.press("#thread-input", "Enter")
            draft = thread.locator(".file", has_text="Postmortem draft")
            await expect(draft).to_have_count(1, timeout=60_000)
            await expect(draft.locator(".file-preview")).to_contain_text("## Summary")
            await scroll_to(draft)
            await page.screenshot(path=str(ARTIFACTS / "3-postmortem.png"), full_page=True)
        finally:
            await browser.close()
    assert demo.stop() == 0, "\n".join(demo.lines)
