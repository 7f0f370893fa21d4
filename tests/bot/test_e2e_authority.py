"""Who may undo and who may cancel, end to end over HTTP with the playground, the bot and the
lab: ``/stratus undo`` asks exactly what the Undo button asks (an approver of the original
decision, or an admin for auto-allowed writes), and ``/stratus cancel`` is an answer like
Reject — the same authorization — asked from the incident's own channel (or by an admin)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import stratus as stratus_cli
from lab.slack.client import AsyncPlaygroundClient
from policies.model import Defaults, Match, Rule
from proposals.model import ProposalState
from tests.bot.conftest import BotHandle, inject, wait_for
from tests.bot.test_e2e import SCENARIO, _card_state, first_card, proposal_id, replicas
from tests.bot.test_e2e_commands import said
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
SRE_ASK = Rule(
    name="sre-approves", decision="ask", approvers=["S0SRE"], match=Match(actions=["scale"])
)
UNDO_ALLOWED = Rule(name="undo-is-fine", decision="allow", match=Match(actions=["undo"]))
CAROL_ADMIN = Defaults(approvers=["U0CAROL"])
# The defaults' approvers are the admins and a floor for every approval, so whoever may
# approve is an admin too: with Carol alone in the defaults only she could approve.
SRE_ADMINS = Defaults(approvers=["S0SRE"])


async def _executed(slack: AsyncPlaygroundClient, stratus_bot: BotHandle) -> str:
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.approve", value=pid)
    await wait_for(lambda: _card_state(slack, pid, "Executed"), timeout=60)
    return pid


async def test_the_undo_command_asks_what_the_undo_button_asks(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    policy: PolicyBox,
) -> None:
    # Undo itself is allowed by a rule: whoever gets an undo proposed gets the write.
    policy.set(UNDO_ALLOWED, SRE_ASK, defaults=SRE_ADMINS)
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    pid = await _executed(slack, stratus_bot)
    assert replicas(kube, "recommendation") == 1
    undo_id = (await rt.call(rt.service.get, pid)).undo_id
    assert undo_id
    # Dave may not press Undo on the card, so he may not type it either — by id or as "last".
    for words in ("undo", "undo last", f"undo {undo_id}"):
        reply = said(await slack.command("U0DAVE", "/stratus", words))
        assert "may not undo" in reply and "Nothing changed" in reply, words
        # Names, not ids (seen: "… S0SRE …" in Slack's undo refusal).
        assert "@sre" in reply and "S0SRE" not in reply, reply
    await stratus_bot.settle()
    assert replicas(kube, "recommendation") == 1
    undos = await rt.call(rt.service.by_incident, (await rt.call(rt.service.get, pid)).incident_id)
    assert not [p for p in undos if p.undo_entry], "no undo was even proposed"
    assert (await rt.call(rt.service.get, pid)).state == ProposalState.EXECUTED
    # Bob, an approver of the original decision, may.
    await slack.command("U0BOB", "/stratus", f"undo {undo_id}")
    await wait_for(lambda: _card_state(slack, pid, "Undone"), timeout=60)
    assert replicas(kube, "recommendation") == 0


async def test_cancel_needs_someone_who_could_reject_and_the_incident_s_own_channel(
    lab: Lab,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    policy: PolicyBox,
) -> None:
    policy.set(SRE_ASK, defaults=SRE_ADMINS)
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await first_card(slack))
    incident = (await rt.call(rt.incidents.recent, limit=1))[0]
    # Dave started it but could not reject the proposal it waits on: he may not withdraw it.
    refused = said(await slack.command("U0DAVE", "/stratus", "cancel"))
    assert "would reject" in refused and "Nothing changed" in refused
    # Nor from another channel, where a non-admin is refused before anything else is asked.
    # (Whoever could reject it is an SRE, so an admin: the defaults are a floor.)
    elsewhere = said(
        await slack.command("U0DAVE", "/stratus", f"cancel {incident.id}", channel="C0RANDOM")
    )
    assert "only from its own thread" in elsewhere
    await stratus_bot.settle()
    assert (await rt.call(rt.incidents.get, incident.id)).is_open
    assert (await rt.call(rt.service.get, pid)).state == ProposalState.AWAITING_APPROVAL
    # From the incident's channel, Alice may.
    await slack.command("U0ALICE", "/stratus", "cancel not needed")

    async def cancelled() -> bool:
        return not (await rt.call(rt.incidents.get, incident.id)).is_open

    await wait_for(cancelled, timeout=60)
    assert (await rt.call(rt.service.get, pid)).state != ProposalState.AWAITING_APPROVAL


async def test_an_admin_may_cancel_from_anywhere(
    lab: Lab,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    policy: PolicyBox,
) -> None:
    policy.set(SRE_ASK, defaults=CAROL_ADMIN)
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    await first_card(slack)
    incident = (await rt.call(rt.incidents.recent, limit=1))[0]
    await slack.command("U0CAROL", "/stratus", f"cancel {incident.id}", channel="C0RANDOM")

    async def cancelled() -> bool:
        return not (await rt.call(rt.incidents.get, incident.id)).is_open

    await wait_for(cancelled, timeout=60)


SRE_POLICY_FILE = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: sre}
defaults: {approvers: ["S0SRE"]}
rules:
  - name: sre-approves
    match: {actions: [scale]}
    decision: ask
    approvers: ["S0SRE"]
  - name: undo-is-fine
    match: {actions: [undo]}
    decision: allow
"""


async def test_the_terminal_refuses_the_undo_the_bot_refuses(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    policy: PolicyBox,
    env: dict[str, str],
    db_path: Path,
    tmp_path: Path,
) -> None:
    """The issue's example: `stratus undo --last --yes` against the bot's database executed a
    write the bot refused. Both surfaces ask ``policies.authority`` now: Dave is refused in
    Slack, and a terminal user who is no SRE is refused on the same database and policy."""
    policy.set(UNDO_ALLOWED, SRE_ASK, defaults=SRE_ADMINS)
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "sre.yaml").write_text(SRE_POLICY_FILE)
    inject(lab, SCENARIO)
    pid = await _executed(slack, stratus_bot)
    refused = said(await slack.command("U0DAVE", "/stratus", "undo last"))
    assert "may not undo" in refused
    terminal = {
        **env,
        "STRATUS_DB": str(db_path),
        "STRATUS_POLICY_DIR": str(policies),
        "STRATUS_ACTOR": "dave",
    }
    typed = CliRunner().invoke(stratus_cli, ["undo", "--last", "--yes"], env=terminal)
    assert typed.exit_code == 1, typed.output
    assert "may not undo this change" in typed.stderr and "nothing was undone" in typed.stderr
    await stratus_bot.settle()
    assert replicas(kube, "recommendation") == 1
    rt = stratus_bot.runtime
    assert (await rt.call(rt.service.get, pid)).state == ProposalState.EXECUTED
