"""Look again, in a real browser (issue 18 §2): the demo's policy holds every write in
``hotel`` (a deny rule, as a change freeze would), so ``/stratus investigate hotel`` finds the
fault, has its fix denied and escalates — the parent message says why and offers **Look
again**. The freeze is lifted; a person presses Look again, and the same thread carries on: a
fresh diagnosis, the fix's card, Approve once, a verified fix. Screenshots are kept in
tmp/artifacts/look-again/ (or under ``$STRATUS_ARTIFACTS``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.demo_process import REPO, DemoProcess
from tests.bot.test_demo_browser import _confirm_if_asked, chromium

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]
ARTIFACTS = Path(os.environ.get("STRATUS_ARTIFACTS", REPO / "tmp" / "artifacts")) / "look-again"
SCENARIO = "hotel-recommendation-scaled-to-zero"
LOOK_AGAIN = 'button[data-action-id="stratus.look_again"]'
FREEZE = """
  - name: hotel-change-freeze
    description: Nothing is written to hotel while the freeze lasts.
    match:
      namespaces: ["hotel"]
    decision: deny
"""


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    chromium()
    process = DemoProcess(tmp_path / "demo").start()
    yield process
    process.stop()


async def test_an_escalation_is_looked_at_again_from_its_thread(demo: DemoProcess) -> None:
    from playwright.async_api import async_playwright, expect

    policy = demo.directory / "policy" / "demo.yaml"
    served = policy.read_text()
    policy.write_text(served.rstrip("\n") + "\n" + FREEZE)  # the freeze: deny before ask
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
            await page.click("#inject-fault")
            await expect(page.locator(".toast").first).to_contain_text(f"Injected {SCENARIO}")
            await page.fill("#composer-input", "/stratus investigate hotel")
            await page.press("#composer-input", "Enter")

            # The escalated incident's parent message (the command's, or the demo
            # Alertmanager's if it came first) says why it stopped and offers Look again.
            parent = page.locator("#messages .message", has=page.locator(LOOK_AGAIN)).first
            await expect(parent).to_be_visible(timeout=90_000)
            await expect(parent).to_contain_text("Escalated:")
            await expect(parent).to_contain_text("hotel")
            await parent.locator("a.replies").click()
            thread = page.locator("#thread-messages")
            await expect(thread).to_contain_text("recommendation")  # the evidence it had
            await expect(thread).to_contain_text("denied")
            await page.screenshot(path=str(ARTIFACTS / "1-escalated.png"), full_page=True)

            policy.write_text(served)  # the freeze is lifted
            await parent.locator(LOOK_AGAIN).click()
            approve = thread.locator('button[data-action-id="stratus.approve"]')
            await expect(approve).to_have_count(1, timeout=90_000)
            await expect(thread).to_contain_text("Attempt 2")  # the same thread carries on
            await expect(page.locator(f"#messages {LOOK_AGAIN}")).to_have_count(0)
            await page.screenshot(path=str(ARTIFACTS / "2-looked-again.png"), full_page=True)

            await approve.click()
            await _confirm_if_asked(page)
            await expect(thread).to_contain_text("Verification", timeout=90_000)
            await expect(thread).to_contain_text("healthy")
            await page.screenshot(path=str(ARTIFACTS / "3-fixed.png"), full_page=True)
        finally:
            await browser.close()
    assert demo.stop() == 0, "\n".join(demo.lines)
