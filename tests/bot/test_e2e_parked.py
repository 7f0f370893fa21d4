"""An investigation whose thread cannot be posted (issue 16, item 22) is parked visibly and
frees its namespace after a bound — end to end: the playground delivers the slash command from
a channel the bot is not in (Slack answers ``not_in_channel``), the bot parks the incident, says
so in a DM, in the App Home with Retry and in ``stratus incidents list/show``; a retry after the
bot was invited posts the thread and carries on; a parked incident past the bound ends and the
namespace can be investigated again."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from bot import parking
from incidents.model import Incident, IncidentState
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.bot.conftest import BotHandle, blocks_text, inject, resend_click, wait_for
from tests.bot.test_e2e import SCENARIO, first_card
from tests.conftest import Lab, stratus

pytestmark = pytest.mark.asyncio
OUTSIDE = "C0RANDOM"  # a channel the bot is not a member of


async def parked_incident(handle: BotHandle) -> Incident:
    rt = handle.runtime

    async def check() -> Incident | None:
        found = await rt.call(rt.incidents.recent, limit=5)
        return next((i for i in found if i.parked), None)

    found: Incident = await wait_for(check)
    return found


async def card_in(slack: AsyncPlaygroundClient, channel: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        for message in (await slack.messages(channel=channel))["messages"]:
            if "stratus.approve" in blocks_text(message):
                return dict(message)
        return None

    found: dict[str, Any] = await wait_for(check)
    return found


async def home_view(slack: AsyncPlaygroundClient, user: str) -> dict[str, Any]:
    await slack.open_home(user)

    async def check() -> dict[str, Any] | None:
        views = (await slack.views(user=user))["views"]
        homes = [v for v in views if v["kind"] == "home"]
        return homes[-1] if homes else None

    found: dict[str, Any] = await wait_for(check)
    return found


async def home_of(slack: AsyncPlaygroundClient, user: str) -> str:
    return json.dumps(await home_view(slack, user))


async def test_a_thread_slack_refuses_parks_the_incident_visibly_and_a_retry_carries_on(
    lab: Lab,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    playground: PlaygroundServer,
    db_path: Path,
) -> None:
    inject(lab, SCENARIO)
    await slack.command("U0ALICE", "/stratus", "investigate hotel", channel=OUTSIDE)
    incident = await parked_incident(stratus_bot)
    await stratus_bot.settle()
    rt = stratus_bot.runtime

    assert incident.is_open and incident.state == IncidentState.DETECTING
    assert "not_in_channel" in incident.parked and OUTSIDE in incident.parked
    assert await rt.call(rt.service.by_incident, incident.id) == []  # nothing ran unseen
    dm = (await slack.messages(channel="D0ALICE"))["messages"]
    assert any(incident.id in m["text"] and "not_in_channel" in m["text"] for m in dm), dm
    home = await home_of(slack, "U0ALICE")
    assert incident.id in home and parking.RETRY in home and "not_in_channel" in home
    assert incident.id not in await home_of(slack, "U0DAVE")  # not his incident

    env = {**os.environ, "STRATUS_DB": str(db_path), "KUBECONFIG": str(lab.kubeconfig)}
    listed = stratus("incidents", "list", "--open", env=env)
    assert listed.returncode == 0, listed.stderr
    assert incident.id in listed.stdout and "[parked: its Slack thread" in listed.stdout
    shown = stratus("incidents", "show", incident.id, env=env)
    assert "parked:" in shown.stdout and "not_in_channel" in shown.stdout

    # Someone else may not retry it; the requester may, once the bot was invited.
    assert playground.playground is not None
    ws = playground.playground.workspace
    forged = {
        "type": "block_actions",
        "user": {"id": "U0DAVE"},
        "team": {"id": ws.config.team_id},
        "api_app_id": "A0STRATUS",
        "token": "x",
        "trigger_id": "1.2.3",
        "container": {"type": "view", "view_id": "V0X"},
        "view": {"id": "V0X", "type": "home"},
        "actions": [{"action_id": parking.RETRY, "value": incident.id, "action_ts": "1.1"}],
    }
    assert await resend_click(stratus_bot, forged) == 200
    await stratus_bot.settle()
    assert (await rt.call(rt.incidents.get, incident.id)).parked
    ws.members[OUTSIDE].add(ws.config.bot_user_id)  # an admin invites the bot
    view = await home_view(slack, "U0ALICE")
    await slack.click("U0ALICE", parking.RETRY, value=incident.id, view_id=str(view["view"]["id"]))
    await card_in(slack, OUTSIDE)
    await stratus_bot.settle()
    moved = await rt.call(rt.incidents.get, incident.id)
    assert not moved.parked and moved.state == IncidentState.AWAITING_APPROVAL
    await slack.open_home("U0ALICE")

    async def retry_gone() -> bool:
        return parking.RETRY not in await home_of(slack, "U0ALICE")

    await wait_for(retry_gone)


async def test_investigating_again_from_a_channel_the_bot_is_in_posts_the_parked_thread(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    inject(lab, SCENARIO)
    await slack.command("U0ALICE", "/stratus", "investigate hotel", channel=OUTSIDE)
    incident = await parked_incident(stratus_bot)
    await slack.command("U0BOB", "/stratus", "investigate hotel")
    await card_in(slack, "C0INCIDENT")
    await stratus_bot.settle()
    rt = stratus_bot.runtime
    assert not (await rt.call(rt.incidents.get, incident.id)).parked


async def test_a_parked_incident_frees_its_namespace_after_the_bound(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    rt.workflow.config.park_seconds = 0.5
    inject(lab, SCENARIO)
    await slack.command("U0ALICE", "/stratus", "investigate hotel", channel=OUTSIDE)
    parked = await parked_incident(stratus_bot)
    released: list[Incident] = []

    async def ended() -> bool:
        released.extend(await rt.work(rt.workflow.release_parked))
        return bool(released)

    await wait_for(ended, timeout=10)
    assert [i.id for i in released] == [parked.id]
    gone = await rt.call(rt.incidents.get, parked.id)
    assert gone.state == IncidentState.ESCALATED and gone.reason == "unreachable"
    await slack.command("U0ALICE", "/stratus", "investigate hotel")
    await first_card(slack)
    newest = (await rt.call(rt.incidents.recent, limit=1))[0]
    assert newest.id != parked.id and newest.is_open and not newest.parked


async def test_a_new_investigation_ends_a_parked_incident_past_the_bound_and_opens_its_own(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    rt = stratus_bot.runtime
    rt.workflow.config.park_seconds = 0.2
    inject(lab, SCENARIO)
    await slack.command("U0ALICE", "/stratus", "investigate hotel", channel=OUTSIDE)
    parked = await parked_incident(stratus_bot)
    await stratus_bot.settle()
    await asyncio.sleep(0.3)
    await slack.command("U0BOB", "/stratus", "investigate hotel")
    await first_card(slack)
    gone = await rt.call(rt.incidents.get, parked.id)
    assert gone.state == IncidentState.ESCALATED and gone.reason == "unreachable"


async def test_a_thread_refused_as_ratelimited_after_the_retries_is_parked(
    lab: Lab, slack: AsyncPlaygroundClient, stratus_bot: BotHandle
) -> None:
    """Slack keeps answering ``ratelimited`` (a limit of 0, Retry-After 1 s) and the client's
    one retry is spent: the incident is parked, the person told, and a retry once Slack takes
    posts again carries on."""
    await stratus_bot.stop()
    stratus_bot.settings = {"rate_limit_retries": 1}
    await stratus_bot.start()
    await slack.configure(rate_limits={"chat.postMessage": 0}, rate_window=1.0)
    inject(lab, SCENARIO)
    started = time.monotonic()
    await slack.command("U0ALICE", "/stratus", "investigate hotel")
    incident = await parked_incident(stratus_bot)
    assert time.monotonic() - started < 15
    assert "ratelimited" in incident.parked and incident.state == IncidentState.DETECTING
    posts = [c["status"] for c in (await slack.calls("chat.postMessage"))["calls"]]
    assert posts[:2] == [429, 429], posts  # the first try and the one retry

    async def told() -> bool:
        whispers = (await slack.ephemerals(user="U0ALICE"))["ephemerals"]
        said = [blocks_text(e["message"]) for e in whispers]
        return any(incident.id in m and "ratelimited" in m for m in said)

    await wait_for(told)
    rt = stratus_bot.runtime
    assert await rt.call(rt.service.by_incident, incident.id) == []
    await slack.configure(rate_limits={"chat.postMessage": 10_000}, rate_window=60.0)
    await slack.command("U0ALICE", "/stratus", "investigate hotel")
    await card_in(slack, "C0INCIDENT")
    await stratus_bot.settle()
    assert not (await rt.call(rt.incidents.get, incident.id)).parked
