"""``stratus demo`` in a real browser (Debian's headless Chromium through Playwright): a person
injects a fault from the page's Lab menu, types ``/stratus investigate hotel``, opens the
incident thread, clicks Approve once, waits for the executed and verified card, clicks Undo
(and approves the undo, a write like any other), and reads the page. Screenshots are kept in
tmp/artifacts/demo/ (or under ``$STRATUS_ARTIFACTS``)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.demo_process import REPO, DemoProcess

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]
ARTIFACTS = Path(os.environ.get("STRATUS_ARTIFACTS", REPO / "tmp" / "artifacts")) / "demo"
SCENARIO = "hotel-recommendation-scaled-to-zero"


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Debian's chromium is not installed (scripts/setup installs it with apt-get)")
    return found


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    chromium()
    process = DemoProcess(tmp_path / "demo").start()
    yield process
    process.stop()


async def test_a_person_runs_the_demo_in_the_browser(demo: DemoProcess) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            await page.goto(demo.url + "/")
            await page.select_option("#user-switcher", "U0ALICE")
            await expect(page.locator("#lab-menu")).to_be_visible()
            await page.select_option("#fault-select", SCENARIO)
            await expect(page.locator("#fault-description")).to_contain_text("scaled to zero")
            await page.click("#inject-fault")
            await expect(page.locator(".toast").first).to_contain_text(f"Injected {SCENARIO}")
            await expect(page.locator("#composer-input")).to_have_value(
                "/stratus investigate hotel"
            )
            await page.screenshot(path=str(ARTIFACTS / "1-injected.png"))

            await page.fill("#composer-input", "/stratus investigate hotel")
            await page.press("#composer-input", "Enter")
            await expect(page.locator(".message.ephemeral").first).to_contain_text(
                "Only visible to you", timeout=10_000
            )
            # The demo's Alertmanager may open a thread of its own (another app's alert on a
            # loaded machine): follow the hotel incident's thread, not whichever came first.
            # The demo's Alertmanager may open the incident (or another app's) before the
            # command does, so the card can be in any thread of the channel: open each one
            # with replies until a card to approve shows, as a person would.
            replies = page.locator("#messages a.replies")
            await expect(replies.first).to_be_visible(timeout=30_000)
            thread = page.locator("#thread-messages")
            approve = thread.locator('button[data-action-id="stratus.approve"]')
            deadline = time.monotonic() + 90
            while True:
                for index in range(await replies.count()):
                    await replies.nth(index).click()
                    if await approve.count() == 1 and "recommendation" in (
                        await thread.inner_text()
                    ):
                        break
                else:
                    assert time.monotonic() < deadline, "no card to approve in any thread"
                    await page.wait_for_timeout(1_000)
                    continue
                break
            await expect(approve).to_have_count(1)
            await expect(thread).to_contain_text("recommendation")
            await page.screenshot(path=str(ARTIFACTS / "2-card.png"), full_page=True)

            await approve.click()
            await _confirm_if_asked(page)
            undo = thread.locator('button[data-action-id="stratus.undo"]')
            await expect(undo).to_have_count(1, timeout=90_000)
            await expect(thread).to_contain_text("Verification", timeout=90_000)
            await expect(thread).to_contain_text("healthy")
            await expect(thread).to_contain_text("Incident summary", timeout=60_000)
            await page.screenshot(path=str(ARTIFACTS / "3-executed.png"), full_page=True)

            await undo.click()
            await _confirm_if_asked(page)
            undo_card = thread.locator(".message", has_text="as before Stratus")
            await expect(
                undo_card.locator('button[data-action-id="stratus.approve"]')
            ).to_have_count(1, timeout=30_000)
            await undo_card.locator('button[data-action-id="stratus.approve"]').click()
            await _confirm_if_asked(page)
            await expect(thread).to_contain_text("Undone:", timeout=60_000)
            await expect(thread.locator('button[data-action-id="stratus.undo"]')).to_have_count(0)
            await page.screenshot(path=str(ARTIFACTS / "4-undone.png"), full_page=True)
        finally:
            await browser.close()
    assert demo.stop() == 0, "\n".join(demo.lines)
    assert (ARTIFACTS / "4-undone.png").stat().st_size > 0


async def _confirm_if_asked(page: object) -> None:
    """Click the confirm dialog's Yes when the button asked for one (high-risk, Undo)."""
    from playwright.async_api import Page
    from playwright.async_api import TimeoutError as NoDialog

    assert isinstance(page, Page)
    yes = page.locator(".overlay-confirm button.confirm-yes")
    try:
        await yes.wait_for(state="visible", timeout=1_500)
    except NoDialog:  # the click went straight through
        return
    await yes.click()


async def scroll_to(locator: object) -> None:
    """Bring a message into view to frame a screenshot. The playground re-renders a message
    when the bot edits it, which can detach the element mid-scroll: look it up again."""
    from playwright.async_api import Error, Locator

    assert isinstance(locator, Locator)
    for _ in range(10):
        try:
            await locator.scroll_into_view_if_needed(timeout=5_000)
            return
        except Error:  # detached by a re-render; the locator finds the new element
            await locator.page.wait_for_timeout(300)
    await locator.scroll_into_view_if_needed(timeout=5_000)
