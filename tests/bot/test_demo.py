"""``stratus demo`` end to end, as a user runs it: a fresh process on free ports, driven
through the playground's control API (the same endpoints the page calls) — inject a scenario
from the page's menu, ``/stratus investigate hotel``, approve the card as an approver, see it
executed and verified, click Undo, read the thread — then Ctrl-C, and everything stops."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.slack.client import PlaygroundClient, PlaygroundRequestFailed
from tests.bot.demo_process import DemoProcess, text_of, wait_for

SCENARIO = "hotel-recommendation-scaled-to-zero"
pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    process = DemoProcess(tmp_path / "demo").start()
    yield process
    process.stop()


def messages(slack: PlaygroundClient) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = slack.messages(channel="C0INCIDENT")["messages"]
    return found


def card(slack: PlaygroundClient, *needles: str) -> dict[str, Any] | None:
    listed: list[dict[str, Any]] = messages(slack)
    for message in reversed(listed):
        if all(n in text_of(message) for n in needles):
            return dict(message)
    return None


def button_value(message: dict[str, Any], action_id: str) -> str:
    for block in message["blocks"]:
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                return str(element["value"])
    raise AssertionError(f"no {action_id} button")


def test_the_demo_investigates_approves_verifies_undoes_and_stops_cleanly(
    demo: DemoProcess,
) -> None:
    slack = demo.slack
    offered = {s["name"]: s for s in slack.scenarios()["scenarios"]}
    assert SCENARIO in offered and offered[SCENARIO]["namespace"] == "hotel"
    assert not any(name.startswith("noop") for name in offered)
    assert offered.keys() == {s["name"] for s in slack.config()["scenarios"]}  # the page's menu

    injected = slack.inject(SCENARIO)
    assert injected["ok"] and injected["namespace"] == "hotel", injected
    assert injected["applied"] == ["patched deployment/recommendation"]
    with pytest.raises(PlaygroundRequestFailed) as unknown:
        slack.inject("no-such-scenario")
    assert unknown.value.status == 404 and unknown.value.error == "scenario_not_found"

    delivery = slack.command("U0ALICE", "/stratus", "investigate hotel")
    assert delivery["ok"] and delivery["attempts"][0]["status"] == 200, delivery
    waiting = wait_for(lambda: card(slack, "stratus.approve", "recommendation"), timeout=60)
    pid = button_value(waiting, "stratus.approve")
    assert "demo-asks-for-everything" in text_of(waiting) and "stratus.always" in text_of(waiting)

    # dave is not in @sre: refused, nothing runs.
    slack.click("U0DAVE", "stratus.approve", value=pid)
    wait_for(
        lambda: any(
            "not an approver" in e["message"]["text"]
            for e in slack.ephemerals("U0DAVE")["ephemerals"]
        )
    )
    slack.click("U0ALICE", "stratus.approve", value=pid)
    done = wait_for(
        lambda: card(slack, f"`{pid}`", "Verification", "healthy", "stratus.undo"), timeout=120
    )
    assert "U0ALICE" in text_of(done)
    summary = wait_for(lambda: card(slack, "Incident summary"), timeout=60)
    assert "Root cause" in text_of(summary)

    slack.click("U0ALICE", "stratus.undo", value=pid)
    undo = wait_for(lambda: card(slack, "as before Stratus", "stratus.approve"), timeout=60)
    slack.click("U0ALICE", "stratus.approve", value=button_value(undo, "stratus.approve"))
    wait_for(lambda: card(slack, f"`{pid}`", "Undone", "Diff"), timeout=60)
    wait_for(lambda: card(slack, "Undone:"), timeout=60)
    thread = slack.messages(channel="C0INCIDENT", thread_ts=done.get("thread_ts") or done["ts"])
    assert any("Undone:" in text_of(m) for m in thread["messages"])

    children = demo.children()
    assert len(children) == 2
    used = _secrets_of(children)
    assert {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "STRATUS_ALERTS_TOKEN"} <= set(used), used
    assert demo.stop() == 0, "\n".join(demo.lines)
    # Issue 19: no token or secret the run used is in anything it logged or printed.
    logs = {path.name: path.read_text(errors="replace") for path in demo.directory.glob("*.log")}
    logs["stdout"] = "\n".join(demo.lines)
    assert {"bot.log", "lab.log"} <= set(logs), sorted(logs)
    leaks = [(name, key) for name, text in logs.items() for key, v in used.items() if v in text]
    assert leaks == [], leaks
    assert demo.lines[-1] == "stratus demo stopped"
    for pid_ in children:
        assert not os.path.exists(f"/proc/{pid_}") or _zombie(pid_), f"{pid_} still runs"
    assert "Traceback" not in demo.log("bot") and "Traceback" not in demo.log("lab")


SECRET_VARIABLES = (
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "STRATUS_ALERTS_TOKEN",
    "STRATUS_AUDIT_KEY",
)


def _secrets_of(pids: list[int]) -> dict[str, str]:
    """The tokens and secrets the demo's processes were given, read from their environments."""
    found: dict[str, str] = {}
    for pid in pids:
        raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        for entry in raw:
            key, _, value = entry.decode(errors="replace").partition("=")
            if key in SECRET_VARIABLES and len(value) >= 8:
                found[key] = value
    return found


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True
