"""Issue 19 §5, bad input from Slack: thousands of generated payloads — slash commands, clicks,
modal submissions and events with wrong, missing or garbled parts, signed with the app's
secret — then forged (another secret, a stale or future timestamp, a tampered body, no
signature) and replayed requests, all through the real HTTP door and bolt app in process
(tests/reliability/input_slack.py). Property: no request crashes the bot (no 500, no handler
error in the log), and none from someone who is not an approver records anything — no audit
row, no event, no grant, no pause, no write to the cluster. A valid approval by the approver at
the end shows the measure sees a vote when there is one.

The payloads come from a seeded generator (``SEED``), so a run is repeatable. The smaller
property tests of the same door over real HTTP are tests/bot/test_signatures.py and
tests/bot/test_malformed.py; this is the same door at the scale the issue asks."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pytest

from agents.planner.offline import OfflinePlanner
from bot import buttons, http, replay
from bot.app import StratusBot
from bot.config import BotConfig
from bot.runtime import Runtime
from bot.text import command_words
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from policies.model import Defaults, Rule
from proposals.service import ProposalService
from store.db import Store
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tests.reliability import input_slack
from tests.reliability.input_slack import (
    ADMIN,
    CHANNEL,
    SRE_GROUP,
    Door,
    Generator,
    LogErrors,
    Recorded,
    Reply,
    Tally,
    Targets,
    signed_headers,
)
from tests.unit import slack
from tools.executor import Executor
from tools.k8s import KubeClient

SEED = 19
SIGNED = int(os.environ.get("STRATUS_BADINPUT_N", "2000"))  # generated, validly signed requests
FORGED = 500
REPLAYED = 300  # generated requests sent again, a sample of every kind
FORM = "application/x-www-form-urlencoded"
# What a user may be shown: words, never the insides of the program.
NOT_WORDS = ("Traceback", "Error(", "object at 0x", "KeyError", "TypeError", "NoneType")
WORDS_CALLS = ("chat.postEphemeral", "chat.postMessage", "views.open", "views.publish")


@dataclass
class World:
    bot: StratusBot
    web: slack.InProcessSlack
    door: Door
    targets: Targets
    lab: Lab

    def recorded(self) -> Recorded:
        return Recorded.read(self.bot.rt.store)

    def untouched(self) -> tuple[Recorded, bool, str]:
        """Everything a request could change: the store's records, the kill switch and the
        lab's resourceVersion (it moves on any write to the cluster)."""
        version = str(self.lab.control.get("/lab/v1/info")["resource_version"])
        return self.recorded(), self.bot.rt.switch.state().paused, version

    async def send(self, body: bytes, headers: dict[str, str]) -> Reply:
        reply = await self.door.send(body, headers)
        await self.bot.rt.drain(timeout=20)
        return reply


def _propose(service: ProposalService, action: str, kind: str, name: str, **params: object) -> str:
    return service.propose(
        action=action,
        kind=kind,
        name=name,
        namespace="" if kind == "Node" else "hotel",
        params=dict(params),
        requester="cli:ops",
    ).id


@asynccontextmanager
async def world(lab: Lab, tmp_path: Path) -> AsyncIterator[World]:
    """The bot on the lab, with proposals waiting, one executed (its undo entry) and a grant."""
    lab.fresh()
    kube = KubeClient(kubeconfig=str(lab.kubeconfig))
    policy = PolicyBox()
    policy.set(
        Rule(name="ask-remember", decision="ask", remember=True, max_grant="1h"),
        defaults=Defaults(approvers=[SRE_GROUP]),
    )
    store = Store(tmp_path / "bot.db")
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=policy
    )
    waiting = [
        _propose(service, "scale", "Deployment", "geo", replicas=2),
        _propose(service, "set-env", "Deployment", "profile", variable="FOO", value="bar"),
        _propose(service, "rollout-restart", "Deployment", "search"),
        _propose(service, "cordon", "Node", "node-1"),
    ]
    executed = _propose(service, "scale", "Deployment", "rate", replicas=2)
    service.answer(executed, user=ADMIN, choice="approve", groups=(SRE_GROUP,))
    done = service.execute(executed, actor=ADMIN)
    assert done.undo_id
    granted = _propose(service, "scale", "Deployment", "user", replicas=2)
    service.answer(granted, user=ADMIN, choice="always", groups=(SRE_GROUP,))
    service.execute(granted, actor=ADMIN)
    grant = str(store.query("SELECT id FROM grants")[0]["id"])
    workflow = IncidentWorkflow(
        service=service, kube=kube, offline=OfflinePlanner(), config=WorkflowConfig()
    )
    web = slack.InProcessSlack({"usergroups.users.list": {"users": [ADMIN]}})
    config = BotConfig(mode="http", bot_token="xoxb-unit", signing_secret=slack.SIGNING_SECRET)
    bot = StratusBot(
        Runtime(service=service, workflow=workflow, policy=policy), config, client=web.client()
    )
    seen = await bot.rt.call(replay.SeenRequests, store, window=http.MAX_AGE)
    try:
        yield World(bot, web, Door(bot, seen), Targets(waiting, executed, done.undo_id, grant), lab)
    finally:
        await bot.stop()
        kube.close()
        store.close()


def _words(world: World, reply: Reply, calls_before: int) -> list[str]:
    """What the request showed its sender: the acknowledgement's text and the messages and
    views the bot sent because of it."""
    shown = [reply.body] if reply.status == 200 and reply.body else []
    for call in world.web.calls[calls_before:]:
        if call.method in WORDS_CALLS:
            shown.append(json.dumps(call.args))
    return shown


def _approve_from_home(world: World, user: str, proposal: str, choice: str) -> bytes:
    """A click on a proposal's button in the clicker's App Home, as Slack sends it."""
    payload = input_slack.home_click(user, proposal, choice, stamp=f"9.{len(world.web.calls)}")
    return urlencode({"payload": payload}).encode()


def _command(words: str, user: str) -> bytes:
    fields = {
        "command": "/stratus",
        "text": words,
        "user_id": user,
        "channel_id": CHANNEL,
        "team_id": slack.TEAM,
        "trigger_id": "1.2.3",
    }
    return urlencode(fields).encode()


@pytest.mark.asyncio
async def test_thousands_of_bad_slack_requests_crash_nothing_and_authorize_nothing(
    lab_session: Lab, tmp_path: Path
) -> None:
    errors = LogErrors()
    logging.getLogger().addHandler(errors)
    try:
        async with world(lab_session, tmp_path) as w:
            await _run(w, errors)
    finally:
        logging.getLogger().removeHandler(errors)


async def _run(w: World, errors: LogErrors) -> None:
    generate = Generator(SEED, w.targets)
    tally = Tally()
    start = w.untouched()
    captured: list[tuple[bytes, dict[str, str]]] = []

    # 1. Generated requests, validly signed, from people who are not approvers.
    for case in range(SIGNED):
        kind, body, content = generate.request()
        headers = signed_headers(body, content)
        before, calls = w.recorded(), len(w.web.calls)
        reply = await w.send(body, headers)
        tally.count(kind, reply.status)
        where = f"case {case} (seed {SEED}): {kind} {body[:300]!r} → {reply}"
        assert reply.status in (200, 400, 413), where
        assert errors.found == [], where
        shown = _words(w, reply, calls)
        assert not [s for s in shown if any(bad in s for bad in NOT_WORDS)], (where, shown)
        if reply.status != 200:
            tally.refused += 1
        elif shown:
            tally.errors_shown += 1
        after = w.recorded()
        if after != before:
            tally.unauthorized += 1
            pytest.fail(f"{where}: recorded {before} → {after}")
        captured.append((body, headers))
    assert w.untouched() == start, "something was written to the store or the cluster"

    # 2. Forged: what a real approver would send, and generated requests, signed wrongly.
    genuine = [
        _command("pause", ADMIN),
        _approve_from_home(w, ADMIN, w.targets.waiting[0], buttons.APPROVE),
        _approve_from_home(w, ADMIN, w.targets.waiting[1], buttons.ALWAYS),
    ]
    forgeries = 0
    for case in range(FORGED):
        body = genuine[case % len(genuine)] if case % 2 else generate.request()[1]
        how = case % 6
        if how == 0:
            headers = signed_headers(body, FORM, secret="not-the-app-secret")
        elif how == 1:
            headers = signed_headers(body, FORM, age=http.MAX_AGE + 1 + case)
        elif how == 2:
            headers = signed_headers(body, FORM, age=-(http.MAX_AGE + 60))
        elif how == 3:
            headers = signed_headers(body, FORM)
            body = body + b"&text=resume"
        elif how == 4:
            headers = {"content-type": FORM}
        else:
            headers = {**signed_headers(body, FORM), "x-slack-signature": "v0=" + "0" * 64}
        calls = len(w.web.calls)
        reply = await w.send(body, headers)
        assert reply.status == 401, (case, how, reply)
        assert len(w.web.calls) == calls and errors.found == []
        forgeries += 1
    assert w.untouched() == start

    # 3. Replayed: a sample of the generated requests again, then a real approver's pause and
    # resume, the pause's capture sent again after the resume.
    replays = 0
    for body, headers in captured[:: max(1, len(captured) // REPLAYED)]:
        calls = len(w.web.calls)
        reply = await w.send(body, headers)
        if reply.status == 200:  # the first delivery reached bolt: the second does nothing
            assert reply.body == "" and len(w.web.calls) == calls, (body[:200], reply)
            replays += 1
    assert w.untouched() == start and errors.found == []
    pause = _command("pause", ADMIN)
    pause_headers = signed_headers(pause, FORM)
    assert (await w.send(pause, pause_headers)).body == command_words.switch_flipped(True)
    resume = _command("resume", ADMIN)
    assert (
        await w.send(resume, signed_headers(resume, FORM))
    ).body == command_words.switch_flipped(False)
    resumed = w.untouched()
    assert (await w.send(pause, pause_headers)) == Reply(200, "")
    assert w.untouched() == resumed and not resumed[1]
    replays += 1

    # 4. The measure sees a vote: the approver's click in their App Home counts.
    vote = _approve_from_home(w, ADMIN, w.targets.waiting[0], buttons.APPROVE)
    assert (await w.send(vote, signed_headers(vote, FORM))).status == 200
    for _ in range(100):
        if w.recorded().audit > resumed[0].audit:
            break
        await asyncio.sleep(0.05)
    assert w.recorded().audit > resumed[0].audit, "a valid approval recorded nothing"
    assert errors.found == []

    print(
        f"\nbad input, Slack: {tally.payloads:,} generated signed requests "
        f"({', '.join(f'{n:,} {k}' for k, n in sorted(tally.by_kind.items()))}; "
        f"statuses {dict(sorted(tally.statuses.items()))}): {tally.refused:,} refused at the "
        f"door, {tally.errors_shown:,} answered in words, 0 crashes; "
        f"{forgeries:,} forged requests, {forgeries:,} refused (401); "
        f"{replays:,} replays, {replays:,} ignored; "
        f"unauthorized actions: {tally.unauthorized}"
    )
