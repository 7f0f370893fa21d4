"""Issue 18 §1 and §3 in Slack, as seen: ``shop-payment-bad-config``, the ConfigMap restore
approved and applied, the restart of deployment/payment rejected. Stratus must not propose at
once to undo the restore (a diff ``mock → paypal-live`` that puts the diagnosed cause back):
it verifies first, finds payment healthy and keeps the fix. An undo a person asks for anyway
says on its card that it puts back the cause found, and is rated high; every card's risk
comes with its reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.runtime import Runtime
from incidents.model import IncidentState
from lab.slack.client import AsyncPlaygroundClient
from proposals.model import ProposalState
from tests.bot.conftest import BotHandle, blocks_text, inject, wait_for
from tests.bot.test_e2e import card_with, first_card, messages, proposal_id
from tests.bot.test_e2e_answers import _home
from tests.bot.test_e2e_commands import said
from tests.conftest import Lab
from tools.k8s import KubeClient
from tools.objects import ObjectRef

pytestmark = pytest.mark.asyncio
SCENARIO = "shop-payment-bad-config"


def provider(kube: KubeClient) -> str:
    return str(kube.get(ObjectRef("ConfigMap", "shop-config", "shop"))["data"]["payment-provider"])


async def fix_then_reject_the_restart(rt: Runtime, slack: AsyncPlaygroundClient, fix: str) -> Any:
    """Approve the fix; reject the restart that follows it (with a reason); the ended
    incident."""
    await slack.click("U0ALICE", "stratus.approve", value=fix)

    async def restart_waiting() -> str | None:
        for proposal in await rt.call(rt.service.pending):
            if proposal.id != fix and proposal.action == "rollout-restart":
                return proposal.id
        return None

    restart = await wait_for(restart_waiting, timeout=60)
    # The proposal is stored before its card is posted: click once the card is there.
    await wait_for(lambda: card_with(slack, restart))
    await slack.click("U0ALICE", "stratus.reject", value=restart)
    modal = await wait_for(lambda: _open_modal(slack, "U0ALICE"))
    await slack.submit(modal["id"], {"reason.text": "no restarts at peak hours"})
    incident_id = (await rt.call(rt.service.get, fix)).incident_id

    async def ended() -> Any:
        incident = await rt.call(rt.incidents.get, incident_id)
        return incident if not incident.is_open else None

    incident = await wait_for(ended, timeout=60)
    return incident


async def test_a_rejected_restart_keeps_the_fix_and_an_undo_of_it_says_it_rebreaks(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate shop")
    card = await first_card(slack)
    fix = proposal_id(card)
    assert "Risk: " in blocks_text(card)
    assert "changes data.payment-provider of configmap/shop-config" in blocks_text(card)
    incident = await fix_then_reject_the_restart(rt, slack, fix)
    assert incident.state == IncidentState.RESOLVED, (incident.state, incident.reason)
    assert incident.attempts[0].undo_proposals == []
    assert provider(kube) == "mock"
    assert not any("Undo: " in blocks_text(m) for m in await messages(slack))

    # A person asks to undo the fix anyway: the card says what that does.
    await slack.click("U0ALICE", "stratus.undo", value=fix)
    undo_card = await wait_for(lambda: _undo_card(slack))
    seen = blocks_text(undo_card)
    assert "This puts back the cause found" in seen and "configmap/shop-config" in seen
    assert "Risk: :red_circle: high" in seen
    undo = await rt.call(rt.service.get, proposal_id(undo_card))
    assert undo.state == ProposalState.AWAITING_APPROVAL and undo.risk == "high"
    assert provider(kube) == "mock"

    # Its high-risk dialog, /stratus status and App Home say what undoing does, not "Undo: …
    # from 'paypal-live' to 'mock'" (the reversed intent reads as the opposite of the effect).
    dialog = json.dumps(undo_card.get("blocks", []))
    assert "back to paypal-live" in dialog and "puts back the cause found:*" in dialog, dialog
    assert "Undo: Restore" not in dialog, dialog
    status = said(await slack.command("U0ALICE", "/stratus", "status"))
    assert undo.id in status and "back to paypal-live" in status, status
    assert "Undo: " not in status, status
    await slack.open_home("U0ALICE")

    async def home_lists_it() -> str | None:
        view = await _home(slack, "U0ALICE")
        seen = json.dumps(view) if view else ""
        return seen if undo.id in seen else None

    home = await wait_for(home_lists_it)
    assert "back to paypal-live" in home and "Undo: " not in home, home


async def _open_modal(slack: AsyncPlaygroundClient, user: str) -> dict[str, Any] | None:
    for view in (await slack.views(user))["views"]:
        if view["kind"] == "modal" and view["open"]:
            found: dict[str, Any] = view["view"]
            return found
    return None


async def _undo_card(slack: AsyncPlaygroundClient) -> dict[str, Any] | None:
    found = await card_with(slack, "This puts back the cause found")
    return found if found and "stratus.approve" in blocks_text(found) else None
