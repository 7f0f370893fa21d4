"""Force undo in ``stratus demo``, in a real browser (Debian's headless Chromium through
Playwright), as a person meets it: a fault injected from the Lab menu, the fix approved on its
card, then someone scales the Deployment by hand; ``/stratus undo last`` stops on that change
and shows — only to the person asking, who may undo the write — what changed and a **Force
undo** button whose dialog shows the diff. Force, then Approve on the undo's card (its header
saying what undoing does, overwriting the change) puts the object back. Screenshots are kept in
tmp/artifacts/force-undo/ (or under ``$STRATUS_ARTIFACTS``)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bot.demo_process import REPO, DemoProcess
from tests.bot.test_demo_browser import _confirm_if_asked, chromium
from tools.k8s import KubeClient
from tools.objects import ObjectRef

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]
ARTIFACTS = Path(os.environ.get("STRATUS_ARTIFACTS", REPO / "tmp" / "artifacts")) / "force-undo"
SCENARIO = "hotel-recommendation-scaled-to-zero"
RECOMMENDATION = ObjectRef("Deployment", "recommendation", "hotel")


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    chromium()
    process = DemoProcess(tmp_path / "demo").start()
    yield process
    process.stop()


def scale_by_hand(kube: KubeClient, count: int) -> None:
    """Someone changes the object outside Stratus (kubectl scale, say), and waits for the
    rollout, as they would before going on: until then the controller keeps writing the
    Deployment's status, and a Force offered in between is bound to a resourceVersion that
    moves under it (Force then answers "the object changed again", as it should)."""
    ref = ObjectRef("Deployment", "recommendation", "hotel")
    current = kube.get(ref)
    current["spec"]["replicas"] = count
    kube.replace(current)
    deadline = time.monotonic() + 60
    while not rolled_out(kube.get(ref), count):
        assert time.monotonic() < deadline, f"recommendation never rolled out to {count}"
        time.sleep(0.2)


def rolled_out(deployment: dict[str, Any], count: int) -> bool:
    status = deployment.get("status") or {}
    generation = int((deployment.get("metadata") or {}).get("generation") or 0)
    return int(status.get("observedGeneration") or 0) >= generation and all(
        int(status.get(field) or 0) == count
        for field in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")
    )


async def test_a_person_forces_an_undo_over_a_later_change_in_the_browser(
    demo: DemoProcess,
) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    kube = KubeClient(kubeconfig=str(demo.directory / "kubeconfig"))
    async with async_playwright() as driver:
        browser = await driver.chromium.launch(
            executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            await page.goto(demo.url + "/")
            await page.select_option("#user-switcher", "U0ALICE")
            await page.select_option("#fault-select", SCENARIO)
            await page.click("#inject-fault")
            await expect(page.locator(".toast").first).to_contain_text(f"Injected {SCENARIO}")
            await page.fill("#composer-input", "/stratus investigate hotel")
            await page.press("#composer-input", "Enter")

            # The card may be in the command's thread or the demo Alertmanager's: open each
            # thread until one shows the recommendation card, as a person would.
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
            await approve.click()
            await _confirm_if_asked(page)
            await expect(thread.locator('button[data-action-id="stratus.undo"]')).to_have_count(
                1, timeout=90_000
            )
            await expect(thread).to_contain_text("Verification", timeout=90_000)
            await expect(thread).to_contain_text("Incident summary", timeout=60_000)
            assert kube.get(RECOMMENDATION)["spec"]["replicas"] == 1

            # Someone scales it by hand; undoing the fix now would overwrite that.
            scale_by_hand(kube, 2)
            await page.fill("#composer-input", "/stratus undo last")
            await page.press("#composer-input", "Enter")
            offer = page.locator(".message.ephemeral", has_text="Undo stopped")
            await expect(offer).to_have_count(1, timeout=30_000)
            await expect(offer).to_contain_text("replicas: 2")
            assert "--force" not in await offer.inner_text()
            force = offer.locator('button[data-action-id="stratus.force_undo"]')
            await expect(force).to_have_text("Force undo")
            await page.screenshot(path=str(ARTIFACTS / "1-force-offered.png"), full_page=True)

            await force.click()
            dialog = page.locator(".overlay-confirm")
            await expect(dialog).to_contain_text("replicas: 2")
            await expect(dialog).to_contain_text("replicas: 1")
            await page.screenshot(path=str(ARTIFACTS / "2-force-dialog.png"))
            await dialog.locator("button.confirm-yes").click()
            # The offer is spent: it is replaced by what came of it, its button gone.
            await expect(force).to_have_count(0, timeout=30_000)
            await expect(page.locator(".message.ephemeral").last).to_contain_text(
                "Undo proposed as"
            )

            # The forced undo's card, in the incident's thread, says what approving it does.
            effect = (
                "Set replicas of deployment/recommendation back to 0, as before Stratus "
                "changed it — overwriting the change made since"
            )
            undo_card = thread.locator(
                ".message", has_text="overwriting the change made since"
            ).filter(has_not_text="Incident summary")  # the summary lists the undo too
            await expect(undo_card).to_have_count(1, timeout=30_000)
            await expect(undo_card).to_contain_text(effect)
            await page.screenshot(path=str(ARTIFACTS / "3-forced-card.png"), full_page=True)
            await undo_card.locator('button[data-action-id="stratus.approve"]').click()
            await _confirm_if_asked(page)
            await expect(thread).to_contain_text("Undone:", timeout=60_000)
            await expect(undo_card).not_to_contain_text("exact undo available")
            assert kube.get(RECOMMENDATION)["spec"]["replicas"] == 0
            # The incident's parent message says its fix was undone, and that it re-opened —
            # or, when the demo's alert (still firing over its window after the fix) opened
            # another incident in hotel that is open now, that this one stays closed and which
            # takes it over (at most one incident is open in a namespace).
            parent = thread.locator(".message").first
            await expect(parent).to_contain_text("Incident in hotel")
            await expect(parent).to_contain_text("Fix undone", timeout=30_000)
            await expect(parent).to_contain_text(
                re.compile(
                    r"incident re-opened"
                    r"|incident left closed because incident inc-[0-9a-f]+ is open on hotel"
                )
            )
            await page.screenshot(path=str(ARTIFACTS / "4-undone.png"), full_page=True)
        finally:
            await browser.close()
            kube.close()
    assert demo.stop() == 0, "\n".join(demo.lines)
