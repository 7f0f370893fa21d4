"""Names, not ids: a card says who must approve by handle ("requires 1 approval from @sre"),
read from the workspace the bot talks to (the playground knows its users and user groups),
not the ``S0SRE`` the policy file names."""

from __future__ import annotations

import pytest

from bot.text import card_words
from lab.slack.client import AsyncPlaygroundClient
from proposals.model import ProposalState
from store import handles
from tests.bot.conftest import BotHandle, blocks_text, inject, wait_for
from tests.bot.test_e2e import CHANNEL, SCENARIO, first_card, proposal_id
from tests.bot.test_e2e_rebreak import _open_modal
from tests.conftest import Lab


@pytest.mark.asyncio
async def test_the_card_names_the_approvers_group_by_its_handle(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    found = await first_card(slack)
    card = blocks_text(found)
    why = next(line for line in card.split("\\n") if "Why I ask" in line)
    assert "approval from @sre" in why and "S0SRE" not in why, why
    # Kept in the database, so that a terminal's dry run says "asks @sre" too.
    kept = await stratus_bot.runtime.call(handles.known, stratus_bot.runtime.store)
    assert kept.get("S0SRE") == "sre", kept
    # dave is not in @sre: the refusal he reads names the group by its handle too.
    await slack.click("U0DAVE", "stratus.approve", value=proposal_id(found))

    async def refused() -> str:
        said = [e["message"]["text"] for e in (await slack.ephemerals("U0DAVE"))["ephemerals"]]
        return next((t for t in said if "not an approver" in t), "")

    refusal = await wait_for(refused)
    assert "@sre" in refusal and "S0SRE" not in refusal, refusal


def test_a_reason_names_people_and_groups_by_handle_where_known() -> None:
    said = card_words.why_asked(
        "always asks: rule r requires 2 approvals from S0SRE and U0ALICE (not U0NEW)",
        [["S0SRE"]],
        [],
        2,
        handles={"S0SRE": "sre", "U0ALICE": "alice"},
    )
    reason = said.splitlines()[0]
    assert "from @sre and @alice (not U0NEW)" in reason, reason


@pytest.mark.asyncio
async def test_the_summary_names_who_a_rejected_step_required_by_handle(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    """Seen: the summary's Actions line for a rejected step said "…require 1 approval from
    S0SRE"."""
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    found = await first_card(slack)
    pid = proposal_id(found)
    await slack.click("U0ALICE", "stratus.reject", value=pid)
    modal = await wait_for(lambda: _open_modal(slack, "U0ALICE"))
    await slack.submit(modal["id"], {"reason.text": "not now"})

    async def rejected() -> bool:
        return (await rt.call(rt.service.get, pid)).state == ProposalState.REJECTED

    await wait_for(rejected)
    incident_id = (await rt.call(rt.service.get, pid)).incident_id
    await slack.command("U0ALICE", "/stratus", f"summary {incident_id}")

    async def summary_line() -> str | None:
        for message in (await slack.messages(channel=CHANNEL))["messages"]:
            seen = blocks_text(message)
            if "Incident summary" in seen and "Rejected" in seen:
                return next(line for line in seen.split("\\n") if "Rejected" in line)
        return None

    line = await wait_for(summary_line, timeout=60)
    assert "approval from @sre" in line and "S0SRE" not in line, line
