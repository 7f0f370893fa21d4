"""Issue 18 F1(a) and F2 in Slack: the undo card of a fix that puts the diagnosed cause back
offered "Always allow undo on ConfigMap/…" (bob clicked it, and TNR later undid the fix under
that grant with no human); and undoing a fix kept after a rejected step left the incident
"closed because that write was not the fix that resolved it". Now the card offers no Always
allow, and the undo re-opens the incident."""

from __future__ import annotations

from typing import Any

import pytest

from incidents.model import IncidentState
from lab.slack.client import AsyncPlaygroundClient
from policies.model import Rule
from tests.bot.conftest import SRE, BotHandle, blocks_text, inject, wait_for
from tests.bot.test_e2e import first_card, proposal_id
from tests.bot.test_e2e_rebreak import _undo_card, fix_then_reject_the_restart, provider
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
SCENARIO = "shop-payment-bad-config"
REMEMBER = Rule(name="ask-remember", decision="ask", remember=True, max_grant="8h")


@pytest.fixture
def policy() -> PolicyBox:
    box = PolicyBox()
    box.set(REMEMBER, defaults=SRE)
    return box


async def test_the_undo_that_rebreaks_offers_no_always_allow_and_reopens_when_run(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate shop")
    card = await first_card(slack)
    fix = proposal_id(card)
    assert "stratus.always" in blocks_text(card)  # the policy lets people remember answers
    incident = await fix_then_reject_the_restart(rt, slack, fix)
    assert incident.state == IncidentState.RESOLVED, (incident.state, incident.reason)
    assert incident.attempts[0].outcome == "fixed", incident.attempts[0]

    await slack.click("U0ALICE", "stratus.undo", value=fix)
    undo_card = await wait_for(lambda: _undo_card(slack))
    seen = blocks_text(undo_card)
    assert "This puts back the cause found" in seen
    assert "stratus.always" not in seen, seen  # no grant may ever cover it
    undo = proposal_id(undo_card)
    await slack.click("U0BOB", "stratus.approve", value=undo)

    async def reopened() -> Any:
        now = await rt.call(rt.incidents.get, incident.id)
        return now if now.fix_undone is not None else None

    after = await wait_for(reopened, timeout=60)
    assert provider(kube) == "paypal-live"
    assert after.fix_undone.reopened, after.fix_undone.why  # not "not the fix that resolved it"
    assert after.state == IncidentState.DETECTING
