"""Quorum, the kill switch, a restart while a card waits, and an undo made from the CLI — each
end to end over HTTP with the playground, the bot and the lab."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lab.slack.client import AsyncPlaygroundClient
from policies.model import Defaults, Rule
from proposals.model import ProposalState
from tests.bot.conftest import ALLOW, ASK, SRE, BotHandle, blocks_text, inject, wait_for
from tests.bot.test_e2e import (
    SCENARIO,
    _card_state,
    _has,
    card_with,
    first_card,
    proposal_id,
    replicas,
)
from tests.conftest import Lab, stratus
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
TWO = Rule(name="two-sres", decision="ask", min_approvals=2)


async def test_a_quorum_rule_needs_two_distinct_approvers(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    policy: PolicyBox,
) -> None:
    policy.set(TWO, defaults=SRE)
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.approve", value=pid)
    await wait_for(lambda: _has(slack, "U0ALICE", "1 of 2"))
    await slack.click("U0ALICE", "stratus.approve", value=pid)
    await wait_for(lambda: _has(slack, "U0ALICE", "already approved"))
    assert stratus_bot.runtime.service.get(pid).state == ProposalState.AWAITING_APPROVAL
    assert replicas(kube, "recommendation") == 0
    await slack.click("U0BOB", "stratus.approve", value=pid)
    await wait_for(lambda: _card_state(slack, pid, "Executed"), timeout=60)
    assert replicas(kube, "recommendation") == 1
    # The card is edited as the write is recorded: read it once it is there again (it was
    # between two edits once in a fresh-clone run).
    card = await wait_for(lambda: card_with(slack, pid))
    assert card is not None and "U0ALICE" in blocks_text(card) and "U0BOB" in blocks_text(card)
    # The gate calls an Approve on the executed proposal stale, and it changes nothing.
    gate = stratus_bot.bot.gate if stratus_bot.bot else None
    assert gate is not None
    executed = stratus_bot.runtime.service.get(pid)
    why, _ = await gate.answer("U0CAROL", executed)
    assert why is not None and "already executed" in why


async def test_pause_stops_auto_execution_until_a_human_approves(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    policy: PolicyBox,
) -> None:
    policy.set(ALLOW, defaults=SRE)
    reply = await slack.command("U0DAVE", "/stratus", "pause")
    assert "admins" in str(reply["response"])
    reply = await slack.command("U0CAROL", "/stratus", "pause maintenance window")
    assert reply["ok"]
    assert (await stratus_bot.runtime.call(stratus_bot.runtime.switch.state)).paused
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    card = await first_card(slack)  # an allow rule, but paused: it asks a human
    assert "paused" in blocks_text(card)
    await asyncio.sleep(1.0)
    assert replicas(kube, "recommendation") == 0
    pid = proposal_id(card)
    await slack.click("U0ALICE", "stratus.approve", value=pid)
    await wait_for(lambda: _card_state(slack, pid, "Executed"), timeout=60)
    assert replicas(kube, "recommendation") == 1
    await slack.command("U0CAROL", "/stratus", "resume")
    assert not (await stratus_bot.runtime.call(stratus_bot.runtime.switch.state)).paused


async def test_a_restarted_bot_still_takes_the_click_on_a_waiting_card(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    card = await first_card(slack)
    pid = proposal_id(card)
    await stratus_bot.stop()
    await stratus_bot.start()  # a new process would do the same: same store, new bot
    await slack.click("U0ALICE", "stratus.approve", value=pid)
    await wait_for(lambda: _card_state(slack, pid, "Executed"), timeout=60)
    assert replicas(kube, "recommendation") == 1


async def test_an_undo_made_from_the_cli_updates_the_card(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    db_path: Path,
    env: dict[str, str],
    policy: PolicyBox,
) -> None:
    # Undoing needs an approver of the write's decision (policies.authority), at a terminal as
    # in Slack: sre-bob approves for this team at the terminal too.
    policy.set(ASK, defaults=Defaults(approvers=["S0SRE", "cli:sre-bob"]))
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.approve", value=pid)
    await wait_for(lambda: _card_state(slack, pid, "Executed"), timeout=60)
    await stratus_bot.settle()
    cli_env = {**env, "STRATUS_DB": str(db_path), "STRATUS_ACTOR": "sre-bob"}
    done = await asyncio.to_thread(stratus, "undo", "--last", "--yes", env=cli_env)
    assert done.returncode == 0, done.stderr
    await wait_for(lambda: _card_state(slack, pid, "Undone"), timeout=30)
    assert replicas(kube, "recommendation") == 0
