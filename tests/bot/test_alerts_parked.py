"""An incident an alert opened whose thread Slack refuses (the alert channel is one the bot is
not in, or does not exist) is parked like a command's (issue 16, item 22): nothing runs, it
shows in ``stratus incidents`` and in an admin's App Home with Retry, the alert group notified
again or Retry posts the thread (with the alerts that fired meanwhile) and the investigation
carries on, and after the bound it ends and frees the namespace. Over real HTTP: the
Alertmanager webhook of the running bot, the playground, the lab."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot import parking
from bot.app import StratusBot
from bot.config import AlertsConfig, BotConfig
from incidents.model import Incident, IncidentState
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.agents.alert_payloads import alert, payload
from tests.bot.conftest import (
    BotHandle,
    blocks_text,
    inject,
    make_runtime,
    resend_click,
    wait_for,
)
from tests.bot.test_alerts_webhook import TOKEN, send
from tests.bot.test_e2e_parked import card_in, home_of, home_view, parked_incident
from tests.conftest import Lab, stratus
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
OUTSIDE = "C0RANDOM"  # a channel the bot is not a member of
SCENARIO = "hotel-recommendation-scaled-to-zero"


class ParkedAlertBot(BotHandle):
    channel = OUTSIDE

    async def start(self) -> StratusBot:
        config = BotConfig(
            mode="http",
            bot_token=self.playground.bot_token,
            signing_secret=self.playground.signing_secret,
            api_url=self.playground.api_url,
            port=0,
            follow_interval=0.1,
            alerts=AlertsConfig(token=TOKEN, channel=self.channel),
        )
        self.bot = StratusBot(make_runtime(self.kube, self.path, self.policy), config)
        await self.bot.start()
        await AsyncPlaygroundClient(self.playground.url).configure(request_url=self.bot.url)
        return self.bot


@pytest_asyncio.fixture
async def alert_bot(
    playground: PlaygroundServer, lab: Lab, kube: KubeClient, db_path: Path, policy: PolicyBox
) -> AsyncIterator[ParkedAlertBot]:
    handle = ParkedAlertBot(playground, kube, db_path, policy)
    await handle.start()
    yield handle
    await handle.stop()


def url(handle: BotHandle) -> str:
    assert handle.bot is not None
    return handle.bot.alerts_url


async def fire(handle: BotHandle, name: str = "ServiceHighErrorRate") -> dict[str, Any]:
    status, answer = await send(url(handle), payload(alert(name, service="frontend")))
    assert status == 200, answer
    return answer


async def test_an_alert_whose_thread_slack_refuses_parks_its_incident_and_a_retry_carries_on(
    lab: Lab,
    slack: AsyncPlaygroundClient,
    alert_bot: ParkedAlertBot,
    playground: PlaygroundServer,
    db_path: Path,
) -> None:
    inject(lab, SCENARIO)
    answer = await fire(alert_bot)
    assert answer["groups"][0]["opened"]
    incident = await parked_incident(alert_bot)
    await alert_bot.settle()
    rt = alert_bot.runtime

    incident = await rt.call(rt.incidents.get, incident.id)
    assert incident.is_open and incident.state == IncidentState.DETECTING  # nothing ran
    assert "not_in_channel" in incident.parked and OUTSIDE in incident.parked
    assert await rt.call(rt.service.by_incident, incident.id) == []
    assert (await slack.messages(channel=OUTSIDE))["messages"] == []
    # Visible: the CLI, and the App Home of an admin (@sre) with Retry; not of anyone else.
    env = {**os.environ, "STRATUS_DB": str(db_path), "KUBECONFIG": str(lab.kubeconfig)}
    listed = stratus("incidents", "list", "--open", env=env)
    assert incident.id in listed.stdout and "[parked: its Slack thread" in listed.stdout
    home = await home_of(slack, "U0ALICE")  # in @sre, the policy's default approvers
    assert incident.id in home and parking.RETRY in home and "not_in_channel" in home
    assert incident.id not in await home_of(slack, "U0DAVE")

    # The group notified again while the bot still cannot post: still parked, nothing ran.
    again = await fire(alert_bot)
    assert again["groups"][0]["action"] == "repeat"
    await alert_bot.settle()
    assert (await rt.call(rt.incidents.get, incident.id)).parked
    assert await rt.call(rt.service.by_incident, incident.id) == []

    # Dave may not retry it; Alice may, once the bot was invited.
    assert playground.playground is not None
    ws = playground.playground.workspace
    forged = {  # Dave's Home has no Retry: a click he forged
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
    assert await resend_click(alert_bot, forged) == 200
    await alert_bot.settle()
    assert (await rt.call(rt.incidents.get, incident.id)).parked
    ws.members[OUTSIDE].add(ws.config.bot_user_id)
    view = await home_view(slack, "U0ALICE")
    await slack.click("U0ALICE", parking.RETRY, value=incident.id, view_id=str(view["view"]["id"]))
    await card_in(slack, OUTSIDE)
    await alert_bot.settle()
    moved = await rt.call(rt.incidents.get, incident.id)
    assert not moved.parked and moved.state == IncidentState.AWAITING_APPROVAL
    thread = await rt.call(rt.links.thread, incident.id)
    assert thread is not None and thread.channel == OUTSIDE
    replies = (await slack.messages(channel=OUTSIDE, thread_ts=thread.ts))["messages"]
    seen = "\n".join(blocks_text(m) for m in replies)
    assert "`ServiceHighErrorRate`" in seen  # the alert that fired while it was parked


async def test_the_alert_notified_again_once_the_bot_may_post_carries_the_incident_on(
    lab: Lab, slack: AsyncPlaygroundClient, alert_bot: ParkedAlertBot, playground: PlaygroundServer
) -> None:
    inject(lab, SCENARIO)
    await fire(alert_bot)
    incident = await parked_incident(alert_bot)
    await alert_bot.settle()
    assert playground.playground is not None
    ws = playground.playground.workspace
    ws.members[OUTSIDE].add(ws.config.bot_user_id)
    await fire(alert_bot, "KubeDeploymentReplicasMismatch")  # a new alert of the group
    await card_in(slack, OUTSIDE)
    await alert_bot.settle()
    rt = alert_bot.runtime
    moved = await rt.call(rt.incidents.get, incident.id)
    assert not moved.parked and moved.state == IncidentState.AWAITING_APPROVAL


async def test_an_alert_channel_that_does_not_exist_parks_and_the_bound_frees_the_namespace(
    lab: Lab, slack: AsyncPlaygroundClient, alert_bot: ParkedAlertBot
) -> None:
    await alert_bot.stop()
    alert_bot.channel = "C0NOSUCHCHANNEL"
    await alert_bot.start()
    rt = alert_bot.runtime
    rt.workflow.config.park_seconds = 0.3
    inject(lab, SCENARIO)
    await fire(alert_bot)
    parked = await parked_incident(alert_bot)
    assert "channel_not_found" in parked.parked
    released: list[Incident] = []

    async def ended() -> bool:
        released.extend(await rt.work(rt.workflow.release_parked))
        return bool(released)

    await wait_for(ended, timeout=10)
    gone = await rt.call(rt.incidents.get, parked.id)
    assert gone.state == IncidentState.ESCALATED and gone.reason == "unreachable"
    # The namespace is free: the next alert (another group) opens an incident of its own.
    status, answer = await send(
        url(alert_bot),
        payload(alert("KubeDeploymentReplicasMismatch", deployment="x"), group_key="other"),
    )
    assert status == 200 and answer["groups"][0]["opened"], answer
    newest = (await rt.call(rt.incidents.recent, limit=1))[0]
    assert newest.id != parked.id and newest.is_open


async def test_a_retried_parked_incident_shows_each_alert_once(
    lab: Lab, slack: AsyncPlaygroundClient, alert_bot: ParkedAlertBot, playground: PlaygroundServer
) -> None:
    inject(lab, SCENARIO)
    await fire(alert_bot)
    incident = await parked_incident(alert_bot)
    await alert_bot.settle()
    assert playground.playground is not None
    ws = playground.playground.workspace
    ws.members[OUTSIDE].add(ws.config.bot_user_id)
    # Another alert group of the namespace joins the open incident: a retry — which happens
    # before the follower reads the event that led to it (held here to make that certain).
    assert alert_bot.bot is not None
    follower = alert_bot.bot.follower
    await follower.stop()
    other = payload(
        alert("KubeDeploymentReplicasMismatch", service="frontend"),
        group_key='{}:{alertname="KubeDeploymentReplicasMismatch"}',
    )
    status, answer = await send(url(alert_bot), other)
    assert status == 200, answer
    rt = alert_bot.runtime

    async def posted() -> bool:
        return await rt.call(rt.links.thread, incident.id) is not None

    await wait_for(posted)
    await rt.drain()
    await follower.start()
    await card_in(slack, OUTSIDE)
    await alert_bot.settle()
    thread = await rt.call(rt.links.thread, incident.id)
    assert thread is not None
    replies = (await slack.messages(channel=OUTSIDE, thread_ts=thread.ts))["messages"]
    seen = [blocks_text(m) for m in replies]
    joined = [t for t in seen if "joined this open incident" in t]
    assert len(joined) == 1, [t[:120] for t in seen]
    assert len([t for t in seen if "KubeDeploymentReplicasMismatch" in t and "firing" in t]) == 1
