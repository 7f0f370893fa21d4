"""Issue 23 §3: a postmortem draft from the thread, for an incident with a rejected step and an
undo — ``shop-payment-bad-config``: the ConfigMap restore approved and applied, the restart of
deployment/payment rejected with a reason, the incident resolved; then a person undoes the
restore. ``/stratus postmortem`` posts a Markdown file in the incident's thread (the upload
API) and ``stratus incidents postmortem ID`` prints the same draft. Every timeline line is
checked against the stored event it names: its time, its kind and who acted; every other line
names only events of this incident and its proposals."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner

from cli.main import stratus as stratus_cli
from incidents import postmortem, postmortem_text
from lab.llm import FakeChatServer
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from proposals.model import ProposalState
from store.events import EventRow, EventStore
from tests.bot.conftest import BotHandle, inject, wait_for
from tests.bot.demo_process import REPO
from tests.bot.test_e2e import first_card, proposal_id
from tests.bot.test_e2e_questions import (  # noqa: F401 (a fixture)
    answerer,
    fake_llm,
    restart_with_model,
)
from tests.bot.test_e2e_rebreak import SCENARIO, _undo_card, fix_then_reject_the_restart, provider
from tests.conftest import Lab
from tools.k8s import KubeClient

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]
CHANNEL = "C0INCIDENT"
REF = re.compile(r"\[(#\d+(?:, #\d+)*)\]$")
REASON = "no restarts at peak hours"
ARTIFACTS = Path(os.environ.get("STRATUS_ARTIFACTS", REPO / "tmp" / "artifacts")) / "postmortem"


def sections(document: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    current = ""
    for line in document.splitlines():
        if line.startswith("## "):
            current = line[3:]
            found[current] = []
        elif current and line.startswith("- "):
            found[current].append(line)
    return found


def seqs(line: str) -> list[int]:
    match = REF.search(line)
    assert match is not None, f"a line without the events it comes from: {line!r}"
    return [int(part.strip().lstrip("#")) for part in match.group(1).split(",")]


async def postmortem_file(slack: AsyncPlaygroundClient) -> dict[str, Any] | None:
    for parent in (await slack.messages(channel=CHANNEL))["messages"]:
        replies = await slack.messages(channel=CHANNEL, thread_ts=parent["ts"])
        for message in replies["messages"]:
            for file in message.get("files") or []:
                if file["name"].startswith("postmortem-"):
                    return {"file": file, "message": message, "thread": parent["ts"]}
    return None


def check_timeline_line(line: str, row: EventRow, handles: dict[str, str]) -> None:
    """The line says what its event says: its time, its kind, who acted."""
    assert f"`{row.at[11:19]}`" in line, (line, row.at)
    payload = row.payload
    actor = str(payload.get("actor", ""))
    kind = row.type
    state = str(payload.get("state", ""))
    if kind == "incident.opened":
        assert "Incident opened by" in line
    elif kind == "incident.state_changed":
        assert f"→ {state}" in line and str(payload.get("previous_state")) in line
    elif kind == "incident.diagnosed":
        assert line.split("` ", 1)[1].startswith("Diagnosis: ")
    elif kind == "incident.verified":
        assert "Verification, attempt" in line and str(payload["data"]["verdict"]) in line
    elif kind == "proposal.proposed":
        assert "Proposed by" in line and str(payload["proposal_id"]) in line
    elif kind == "proposal.voted":
        assert "voted" in line
    elif kind == "proposal.state_changed":
        told = postmortem_text.PROPOSAL_STATES[state].split(" {")[0]
        assert told in line, (line, state)
        assert str(payload["target"]) in line
    if kind in ("proposal.voted",) or state in ("approved", "rejected"):
        assert f"@{handles[actor]}" in line if actor in handles else actor in line, (line, actor)


async def test_a_postmortem_tells_a_rejected_step_and_an_undo_and_every_line_traces_to_an_event(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    playground: PlaygroundServer,
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate shop")
    fix = proposal_id(await first_card(slack))
    incident = await fix_then_reject_the_restart(rt, slack, fix)

    # The fix is undone afterwards: asked for and approved from its card.
    await slack.click("U0ALICE", "stratus.undo", value=fix)
    undo_card = await wait_for(lambda: _undo_card(slack))
    undo = proposal_id(undo_card)
    await slack.click("U0ALICE", "stratus.approve", value=undo)

    async def undone() -> bool:
        return (await rt.call(rt.service.get, fix)).state == ProposalState.UNDONE

    await wait_for(undone, timeout=60)
    assert provider(kube) == "paypal-live"

    said = await slack.command("U0ALICE", "/stratus", f"postmortem {incident.id}")
    assert said["ok"], said
    shared = await wait_for(lambda: postmortem_file(slack), timeout=30)
    assert shared["message"]["thread_ts"] == shared["thread"]
    assert await rt.call(rt.links.incident_at, CHANNEL, shared["thread"]) == incident.id
    assert shared["file"]["mimetype"] == "text/markdown"
    document = requests.get(
        f"{playground.url}/playground/v1/files/{shared['file']['id']}", timeout=5
    ).text
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "postmortem.md").write_text(document)

    # The shape SRE teams use.
    parts = sections(document)
    assert list(parts) == [
        "Summary",
        "Impact",
        "Timeline (UTC)",
        "Root cause",
        "What went well",
        "Follow-ups",
    ], document
    assert "templated from the stored events" in document

    # Every line names stored events of this incident or its proposals; each timeline line
    # says what its event says.
    proposals = {p.id for p in await rt.call(rt.service.by_incident, incident.id)}
    assert {fix, undo} <= proposals
    rows = {row.seq: row for row in EventStore(rt.store).since(0, limit=100_000)}
    handles = stratus_bot.bot.follower.names.known() if stratus_bot.bot else {}
    for section, lines in parts.items():
        for line in lines:
            if line in ("- (nothing recorded)", "- No diagnosis was recorded."):
                continue
            for seq in seqs(line):
                row = rows[seq]
                assert row.subject in proposals | {incident.id}, (line, row.subject)
            if section == "Timeline (UTC)":
                (seq,) = seqs(line)
                check_timeline_line(line, rows[seq], handles)
    told = {s for line in parts["Timeline (UTC)"] for s in seqs(line)}
    stored = {
        seq
        for seq, row in rows.items()
        if row.subject in proposals | {incident.id}
        and row.type
        in ("incident.opened", "incident.diagnosed", "incident.verified", "proposal.proposed")
    }
    assert stored <= told, "a detection, diagnosis, proposal or verification left untold"

    # The story: the fix approved by Alice and executed, the restart rejected with her
    # reason, the fix undone later; the follow-ups ask about both.
    timeline = "\n".join(parts["Timeline (UTC)"])
    alice = f"@{handles['U0ALICE']}" if "U0ALICE" in handles else "U0ALICE"
    assert f"approved by {alice}" in timeline
    assert re.search(
        rf"Restart the pods of deployment/payment.* rejected by {re.escape(alice)}: {REASON}",
        timeline,
    ), timeline
    assert re.search(r"Restore .*configmap/shop-config.* undone", timeline), timeline
    assert "Incident verifying → resolved" in timeline
    assert "Incident resolved → detecting: fix undone by" in timeline  # the undo re-opened it
    summary = "\n".join(parts["Summary"])
    assert "It ended resolved after" in summary and "It is detecting now" in summary, summary
    follow = "\n".join(parts["Follow-ups"])
    assert f"“{REASON}”: decide whether it is still needed" in follow, follow
    assert "was undone: check that what it fixed has not come back" in follow
    well = "\n".join(parts["What went well"])
    assert f"ran only after {alice} approved it" in well
    cause = parts["Root cause"]
    assert "configmap/shop-config" in cause[0].lower() or "shop-config" in cause[0], cause
    assert any(line.startswith("- Evidence (") for line in cause[1:]), cause

    # The terminal prints the same draft (without Slack's handles).
    draft = await rt.call(postmortem.of_incident, rt.incidents, rt.service, incident.id)
    result = await asyncio.to_thread(
        CliRunner().invoke,
        stratus_cli,
        ["incidents", "postmortem", incident.id],
        # No model for the terminal: its draft is the template, as the bot's without one.
        env={
            "STRATUS_DB": str(stratus_bot.path),
            "KUBECONFIG": str(lab.kubeconfig),
            "OPENAI_API_KEY": None,
            "OPENAI_BASE_URL": None,
        },
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert result.output == postmortem_text.markdown(draft).rstrip("\n") + "\n"
    assert [seqs(line) for line in sections(result.output)["Timeline (UTC)"]] == [
        seqs(line) for line in parts["Timeline (UTC)"]
    ]


async def test_with_a_model_the_narrative_is_its_words_but_only_lines_naming_given_events(
    lab: Lab,
    slack: AsyncPlaygroundClient,
    stratus_bot: BotHandle,
    playground: PlaygroundServer,
    fake_llm: FakeChatServer,  # noqa: F811 (the fixture imported above)
) -> None:
    await restart_with_model(stratus_bot, answerer(fake_llm))
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate shop")
    fix = proposal_id(await first_card(slack))
    incident = await fix_then_reject_the_restart(rt, slack, fix)
    events = await rt.call(rt.incidents.events, incident_id=incident.id, limit=5000)
    opened = next(e.seq for e in events if e.event.type.value == "incident.opened")
    diagnosed = next(e.seq for e in events if e.event.type.value == "incident.diagnosed")
    fake_llm.load(
        [
            {
                "content": {
                    "summary": [
                        {"text": "Payment broke on a bad ConfigMap value.", "events": [diagnosed]},
                        {"text": "An invented outage of the whole cluster.", "events": [999_999]},
                        {"text": "A line that cites nothing.", "events": []},
                    ],
                    "went_well": [{"text": "The incident was opened at once.", "events": [opened]}],
                    "follow_ups": [],
                }
            }
        ]
    )
    thread = await rt.call(rt.links.thread, incident.id)
    assert thread is not None
    await slack.post_message(
        "U0ALICE", "write the postmortem", channel=CHANNEL, thread_ts=thread.ts
    )
    shared = await wait_for(lambda: postmortem_file(slack), timeout=30)
    document = requests.get(
        f"{playground.url}/playground/v1/files/{shared['file']['id']}", timeout=5
    ).text
    parts = sections(document)
    assert parts["Summary"] == [f"- Payment broke on a bad ConfigMap value. [#{diagnosed}]"]
    assert parts["What went well"] == [f"- The incident was opened at once. [#{opened}]"]
    assert "invented" not in document and "cites nothing" not in document
    # No follow-up from the model: the template's stand, each naming its events.
    assert any("decide whether it is still needed" in line for line in parts["Follow-ups"])
    assert "the model (local-model) drafted" in document
    # The model was given the events as fenced data, not as instructions.
    sent = json.dumps(fake_llm.requests[-1]["messages"])
    assert "the incident's stored events" in sent and fix in sent
    assert fake_llm.requests[-1].get("tools") in (None, [])
