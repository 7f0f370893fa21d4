"""The fleet through the bot (issue 19 §4): ``/stratus investigate hotel --cluster b`` in the
Slack playground opens b's incident, its thread and cards name the cluster, the fix lands in
b's lab only; an unknown cluster or a ``--cluster`` without a name is answered at once with
what to type, and nothing opens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config import AlertsConfig
from incidents.model import IncidentState
from policies.model import Rule
from tests.agents.alert_payloads import alert, payload
from tests.bot.conftest import blocks_text, wait_for
from tests.bot.test_alerts_webhook import TOKEN, send
from tests.fleet.conftest import FleetBot, FleetLabs, fleet_bot
from tests.proposals.conftest import PolicyBox

pytestmark = pytest.mark.asyncio
ALLOW = Rule(name="allow-everything", decision="allow", allow_irreversible=True)
SCENARIO = "hotel-recommendation-scaled-to-zero"


async def channel_text(bot: FleetBot) -> list[str]:
    found = await bot.slack.messages(channel="C0INCIDENT")
    texts = [blocks_text(m) for m in found["messages"]]
    for message in found["messages"]:
        if message.get("reply_count") or message.get("thread_ts"):
            replies = await bot.slack.messages(channel="C0INCIDENT", thread_ts=message["ts"])
            texts += [blocks_text(m) for m in replies["messages"]]
    return texts


async def ephemerals(bot: FleetBot, user: str) -> list[str]:
    return [e["message"]["text"] for e in (await bot.slack.ephemerals(user))["ephemerals"]]


async def test_investigate_with_a_cluster_opens_and_fixes_it_there(
    labs: FleetLabs, tmp_path: Path
) -> None:
    labs.reset()
    labs.inject("b", SCENARIO)
    policy = PolicyBox()
    policy.set(ALLOW)
    async with fleet_bot(labs, tmp_path / "bot.db", policy) as bot:
        delivery = await bot.slack.command(
            "U0DAVE", "/stratus", "investigate hotel --cluster b why is search failing?"
        )
        assert delivery["ok"] and delivery["attempts"][0]["ms"] < 3000, delivery

        async def resolved() -> Any:
            found = bot.stack.flow.incidents.recent()
            return found if found and not found[0].is_open else None

        (incident,) = await wait_for(resolved, timeout=120)
        assert incident.state == IncidentState.RESOLVED, incident.reason
        assert incident.cluster == "b" and "search" in incident.question
        assert not incident.question.startswith("--cluster")
        assert [bot.stack.replicas(c) for c in ("a", "b", "c")] == [1, 1, 1]
        (proposal,) = bot.stack.service.by_incident(incident.id)
        assert proposal.cluster == "b"
        await bot.settle()

        async def named() -> Any:
            texts = await channel_text(bot)
            shown = [t for t in texts if "Cluster *b*" in t]
            # The thread's parent, the proposal's card and the summary each name it.
            return shown if len(shown) >= 3 else None

        await wait_for(named, timeout=60)


async def test_an_unknown_cluster_or_a_missing_name_is_answered_at_once(
    labs: FleetLabs, tmp_path: Path
) -> None:
    async with fleet_bot(labs, tmp_path / "bot.db", PolicyBox()) as bot:
        delivery = await bot.slack.command("U0DAVE", "/stratus", "investigate hotel --cluster prod")
        assert delivery["ok"] and delivery["attempts"][0]["ms"] < 3000, delivery
        delivery = await bot.slack.command("U0DAVE", "/stratus", "investigate hotel --cluster")
        assert delivery["ok"], delivery

        async def answered() -> Any:
            seen = await ephemerals(bot, "U0DAVE")
            return seen if len(seen) >= 2 else None

        unknown, missing = await wait_for(answered)
        assert "'prod' is not one this Stratus serves" in unknown
        assert "name one of `a`, `b`, `c`" in unknown
        assert "`--cluster` needs a name" in missing
        await bot.settle()
        assert bot.stack.flow.incidents.recent() == []


async def test_an_alert_naming_an_unknown_cluster_posts_an_error_card(
    labs: FleetLabs, tmp_path: Path
) -> None:
    alerts = AlertsConfig(token=TOKEN, channel="C0INCIDENT", port=0)
    async with fleet_bot(labs, tmp_path / "bot.db", PolicyBox(), alerts=alerts) as bot:
        body = payload(alert(cluster="prod"), group_key='{}:{cluster="prod"}')
        status, answer = await send(bot.bot.alerts_url, body)
        assert status == 200 and answer["refused"][0]["cluster"] == "prod"

        async def card() -> Any:
            return [t for t in await channel_text(bot) if "No incident opened" in t]

        (shown,) = await wait_for(card)
        assert "KubePodCrashLooping" in shown and "&#39;prod&#39;" not in shown
        assert "prod" in shown and "a, b, c" in shown
        await bot.settle()
        assert bot.stack.flow.incidents.recent() == []


async def test_status_names_the_cluster_of_each_open_incident(
    labs: FleetLabs, tmp_path: Path
) -> None:
    labs.reset()
    labs.inject("c", SCENARIO)
    policy = PolicyBox()
    policy.set(Rule(name="ask-everything", decision="ask"))
    async with fleet_bot(labs, tmp_path / "bot.db", policy) as bot:
        await bot.slack.command("U0DAVE", "/stratus", "investigate hotel --cluster c")

        async def waiting() -> Any:
            found = bot.stack.flow.incidents.recent(open_only=True)
            return found if found and found[0].state == IncidentState.AWAITING_APPROVAL else None

        await wait_for(waiting, timeout=120)
        delivery = await bot.slack.command("U0DAVE", "/stratus", "status")
        assert delivery["ok"], delivery

        async def listed() -> Any:
            return [
                t for t in await ephemerals(bot, "U0DAVE") if "Open incidents" in t or "inc-" in t
            ]

        shown = await wait_for(listed)
        assert any("in cluster `c`" in t for t in shown), shown
