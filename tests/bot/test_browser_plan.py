"""Issue 18 §1 in a real browser (Debian's headless Chromium through Playwright): a person runs
``stratus demo``, injects ``shop-payment-bad-config`` (fixed in two steps: restore the
ConfigMap key, then restart deployment/payment), opens the incident thread and reads the whole
plan in it, sees "Step 1 of 2" on the first card, clicks **Approve plan**, confirms the dialog
once — and both steps run: the second card reads "Step 2 of 2" and "Approved with the plan by",
and offers no Approve button. Dave, who is not an approver, clicking Approve plan first is
refused and nothing changes. Screenshots are kept in tmp/artifacts/plan/ (or under
``$STRATUS_ARTIFACTS``)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.demo_process import REPO, DemoProcess
from tests.bot.test_demo_browser import _confirm_if_asked, chromium, scroll_to

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]
ARTIFACTS = Path(os.environ.get("STRATUS_ARTIFACTS", REPO / "tmp" / "artifacts")) / "plan"
SCENARIO = "shop-payment-bad-config"


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    chromium()
    process = DemoProcess(tmp_path / "demo").start()
    yield process
    process.stop()


async def test_a_person_approves_a_two_step_plan_once_in_the_browser(demo: DemoProcess) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            await page.goto(demo.url + "/")
            await page.select_option("#user-switcher", "U0DAVE")
            await page.select_option("#fault-select", SCENARIO)
            await page.click("#inject-fault")
            await expect(page.locator(".toast").first).to_contain_text(f"Injected {SCENARIO}")
            await page.fill("#composer-input", "/stratus investigate shop")
            await page.press("#composer-input", "Enter")

            # The alert may open the incident before the command: open each thread with
            # replies until one shows a card offering Approve plan, as a person would.
            replies = page.locator("#messages a.replies")
            await expect(replies.first).to_be_visible(timeout=30_000)
            thread = page.locator("#thread-messages")
            plan_button = thread.locator('button[data-action-id="stratus.plan"]').first
            deadline = time.monotonic() + 120
            while True:
                for index in range(await replies.count()):
                    await replies.nth(index).click()
                    if await plan_button.count() >= 1:
                        break
                else:
                    assert time.monotonic() < deadline, "no card offering Approve plan"
                    await page.wait_for_timeout(1_000)
                    continue
                break
            await expect(thread).to_contain_text("Plan (2 steps)")
            await expect(thread).to_contain_text("Step 1 of 2")
            await expect(plan_button).to_have_text("Approve plan")
            await scroll_to(thread.locator(".message", has_text="Plan (2 steps)"))
            await page.screenshot(path=str(ARTIFACTS / "1-plan.png"), full_page=True)

            await scroll_to(plan_button)
            await page.screenshot(path=str(ARTIFACTS / "1-card.png"), full_page=True)

            # Dave is a developer: his click is refused and nothing runs.
            await plan_button.click()
            await _confirm_if_asked(page)
            await expect(
                page.locator(".message.ephemeral", has_text="not an approver").first
            ).to_be_visible(timeout=15_000)
            await expect(plan_button).to_have_count(1)

            # Alice approves the plan: one click, one confirm, both steps run.
            await page.select_option("#user-switcher", "U0ALICE")
            await plan_button.click()
            yes = page.locator(".overlay-confirm button.confirm-yes")
            await expect(page.locator(".overlay-confirm")).to_contain_text(
                "Approve the whole plan?"
            )
            await yes.click()
            second = thread.locator(".message", has_text="Step 2 of 2")
            await expect(second).to_contain_text("Approved with the plan by", timeout=120_000)
            await expect(second.locator('button[data-action-id="stratus.approve"]')).to_have_count(
                0
            )
            await expect(thread.locator('button[data-action-id="stratus.plan"]')).to_have_count(0)
            await expect(thread).to_contain_text("Incident summary", timeout=90_000)
            await scroll_to(second)
            await page.screenshot(path=str(ARTIFACTS / "2-approved.png"), full_page=True)
        finally:
            await browser.close()
    assert demo.stop() == 0, "\n".join(demo.lines)
    assert (ARTIFACTS / "2-approved.png").stat().st_size > 0
