"""The follower renders the event stream one pass at a time. A pass asked for while another runs
(the loop's, and a stop's or a caller's waiting for the work to show) used to read from the same
cursor: both posted the same events, and the one asked for could return while the other was
still drawing — a test that clicked the Undo button then found no card with it (the flake in
test_e2e_force_undo). Here the two passes are started in a fixed order over events the loop has
not reached yet: each event is posted once, and the second pass returns after the first."""

from __future__ import annotations

import asyncio

import pytest

from incidents.repository import IncidentEventType
from lab.slack.client import AsyncPlaygroundClient
from tests.bot.conftest import BotHandle, blocks_text, inject
from tests.bot.test_e2e import first_card
from tests.conftest import Lab

pytestmark = pytest.mark.asyncio
NOTES = 6


async def test_a_pass_asked_for_during_another_waits_for_it_and_nothing_is_posted_twice(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    follower = stratus_bot.bot.follower if stratus_bot.bot else None
    assert follower is not None
    inject(lab, "hotel-recommendation-scaled-to-zero")
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    await first_card(slack)
    await stratus_bot.settle()
    (incident,) = await rt.call(rt.incidents.recent)
    thread = await rt.call(rt.links.thread, incident.id)
    assert thread is not None

    def add_notes() -> None:
        for number in range(NOTES):
            rt.incidents.note(
                incident, IncidentEventType.NOTE, actor="test", message=f"pass note {number}"
            )

    await rt.call(add_notes)
    first = asyncio.create_task(follower.poll())
    await asyncio.sleep(0)  # the first pass has begun: it is reading the cursor
    await follower.poll()
    assert first.done(), "the second pass returned while the first was still rendering"
    await first
    replies = (await slack.messages(channel=thread.channel, thread_ts=thread.ts))["messages"]
    for number in range(NOTES):
        count = sum(f"pass note {number}" in blocks_text(m) for m in replies)
        assert count == 1, f"note {number} posted {count} times"
