"""The bot's handlers, reached the way Slack reaches them — a signed request through bolt's
signature check, the authorization middleware and the listener — dispatched in process into
the real ``StratusBot`` with the real proposal service and incident workflow on an in-memory
store. The handlers' Web API calls go to an in-process client that records them
(tests/unit/slack.py); nothing here opens a socket. The same paths over real HTTP, with the
playground rendering the cards, are in tests/bot/ (e2e tier)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pytest
import pytest_asyncio

from agents.planner.offline import OfflinePlanner
from bot import buttons
from bot.app import StratusBot
from bot.config import BotConfig
from bot.runtime import Runtime
from bot.text import command_words, error_words
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from policies.model import Defaults, Rule
from proposals.service import ProposalService
from store.db import Store
from tests.proposals.conftest import PolicyBox
from tests.unit import slack
from tools.executor import Executor
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
ADMIN, OTHER = "U0ADMIN", "U0OTHER"
SRE_GROUP = "S0SRE"  # the policy's approvers, hence the admins who may pause Stratus


@dataclass
class Bot:
    bot: StratusBot
    slack: slack.InProcessSlack

    @property
    def app(self):  # type: ignore[no-untyped-def]
        return self.bot.app


@pytest_asyncio.fixture
async def bot(memory_store: Store, tmp_path: Path) -> AsyncIterator[Bot]:
    # A kubeconfig naming a closed port: the handlers tested here never read the cluster, and
    # the unit tier's socket guard would fail any test that tried.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts: [{name: c, context: {cluster: c, namespace: hotel}}]\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
    )
    kube = KubeClient(kubeconfig=str(kubeconfig))
    policy = PolicyBox()
    policy.set(
        Rule(name="ask-everything", decision="ask"), defaults=Defaults(approvers=[SRE_GROUP])
    )
    service = ProposalService(
        store=memory_store, executor=Executor(kube, memory_store, lock_wait=0.5), policy=policy
    )
    workflow = IncidentWorkflow(
        service=service, kube=kube, offline=OfflinePlanner(), config=WorkflowConfig()
    )
    web = slack.InProcessSlack({"usergroups.users.list": {"users": [ADMIN]}})
    config = BotConfig(mode="http", bot_token="xoxb-unit", signing_secret=slack.SIGNING_SECRET)
    running = StratusBot(
        Runtime(service=service, workflow=workflow, policy=policy), config, client=web.client()
    )
    yield Bot(running, web)
    await running.stop()
    kube.close()


async def test_a_command_without_words_is_answered_with_the_help(bot: Bot) -> None:
    answer = slack.acknowledged(await slack.command(bot.app, "", user=OTHER))
    assert answer == command_words.HELP


async def test_an_unknown_subcommand_names_itself(bot: Bot) -> None:
    answer = slack.acknowledged(await slack.command(bot.app, "frobnicate now", user=OTHER))
    assert answer == command_words.unknown_command("frobnicate")


async def test_status_reads_the_store(bot: Bot) -> None:
    answer = slack.acknowledged(await slack.command(bot.app, "status", user=OTHER))
    assert command_words.STATUS_RUNNING in answer
    assert command_words.NO_OPEN_INCIDENTS in answer and command_words.NO_PENDING in answer


@pytest.mark.parametrize(
    "headers",
    [
        {"x-slack-request-timestamp": "0", "x-slack-signature": "v0=00"},
        "another secret",
        "ten minutes old",
    ],
)
async def test_a_request_slack_did_not_sign_just_now_is_refused(
    bot: Bot, headers: dict[str, str] | str
) -> None:
    body = urlencode({"command": "/stratus", "text": "pause", "user_id": ADMIN, "channel_id": "C1"})
    if headers == "another secret":
        headers = slack.signed(body, secret="not-the-app-s")
    elif headers == "ten minutes old":
        headers = slack.signed(body, age=600)
    assert isinstance(headers, dict)
    response = await slack.dispatch(
        bot.app, body, content_type="application/x-www-form-urlencoded", headers=headers
    )
    assert response.status == 401
    assert bot.slack.calls == [] and not bot.bot.rt.switch.state().paused


async def test_only_an_admin_may_pause_and_the_channel_is_told(bot: Bot) -> None:
    refused = slack.acknowledged(await slack.command(bot.app, "pause", user=OTHER))
    assert refused == command_words.PAUSE_REFUSED and not bot.bot.rt.switch.state().paused

    flipped = await slack.command(bot.app, "pause deploy freeze", user=ADMIN, channel="C0OPS")
    assert slack.acknowledged(flipped) == command_words.switch_flipped(True)
    state = bot.bot.rt.switch.state()
    assert state.paused and state.actor == ADMIN
    announced = await bot.slack.wait_for("chat.postMessage")
    assert announced["channel"] == "C0OPS"
    assert announced["text"] == command_words.paused(ADMIN, "deploy freeze")
    assert bot.slack.called("usergroups.users.list") == [{"usergroup": SRE_GROUP}]


async def test_a_click_on_a_proposal_that_does_not_exist_is_refused_in_a_whisper(
    bot: Bot,
) -> None:
    payload = {
        "type": "block_actions",
        "team": {"id": slack.TEAM},
        "user": {"id": OTHER},
        "channel": {"id": "C0OPS"},
        "message": {"ts": "1.1", "thread_ts": "1.0"},
        "trigger_id": "1.2.3",
        "actions": [
            {
                "action_id": buttons.APPROVE,
                "value": "prop-0000000000",
                "action_ts": "2.2",
                "type": "button",
            }
        ],
    }
    response = await slack.click(bot.app, payload)
    assert response.status == 200
    whisper = await bot.slack.wait_for("chat.postEphemeral")
    assert whisper == {
        "channel": "C0OPS",
        "user": OTHER,
        "text": error_words.UNKNOWN_ACTION,
        "thread_ts": "1.0",
        "team_id": slack.TEAM,  # bolt's per-request client names the workspace
    }
    assert response.body == ""
