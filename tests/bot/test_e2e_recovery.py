"""A write the bot sent whose answer was lost is recorded when it lands — without a restart.

The bot talks to the lab through the fault proxy (``tests.faultproxy``). The approved write's
PUT is answered 504 at once by the "gateway" and reaches the API server seconds later: the
executor reads the object, finds it unchanged and leaves the record pending (outcome
unknown). The write then lands. Recovery ran only at start-up before, so the card stayed
"executing" and the undo entry never appeared until the next write to the same object or a
restart; the bot's periodic recovery (``bot.recovery``) now records it, and the card shows
the Undo button.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from proposals.model import ProposalState
from tests.bot.conftest import BotHandle, blocks_text, inject, wait_for
from tests.bot.test_e2e import SCENARIO, first_card, messages, proposal_id, replicas
from tests.conftest import Lab, stratus
from tests.faultproxy import FaultProxy, fault_proxy
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient
from undo.entries import UndoEntries

pytestmark = pytest.mark.asyncio
PATH = r"/apis/apps/v1/namespaces/hotel/deployments/recommendation$"


@pytest.fixture
def proxy(lab: Lab, tmp_path: Path) -> Iterator[FaultProxy]:
    with fault_proxy(lab.url, tmp_path / "proxied-kubeconfig") as proxy:
        yield proxy


@pytest_asyncio.fixture
async def proxied_bot(
    playground: PlaygroundServer, proxy: FaultProxy, db_path: Path, policy: PolicyBox
) -> AsyncIterator[BotHandle]:
    kube = KubeClient(kubeconfig=str(proxy.kubeconfig))
    handle = BotHandle(playground, kube, db_path, policy)
    handle.reconcile_interval = 0.5
    await handle.start()
    yield handle
    await handle.stop()
    kube.close()


async def card_of(slack: AsyncPlaygroundClient, pid: str) -> str:
    for message in await messages(slack):
        text = blocks_text(message)
        if f"`{pid}`" in text and "Diff" in text:
            return text
    return ""


async def test_a_write_that_lands_after_its_answer_was_lost_gets_its_undo_button(
    lab: Lab,
    kube: KubeClient,
    slack: AsyncPlaygroundClient,
    proxy: FaultProxy,
    proxied_bot: BotHandle,
) -> None:
    inject(lab, SCENARIO)
    late = proxy.fail("PUT", PATH, status=504, forward_after=3.0, dry_run=False, times=1)
    await slack.command("U0ALICE", "/stratus", "investigate hotel why is search failing?")
    pid = proposal_id(await first_card(slack))
    await slack.click("U0ALICE", "stratus.approve", value=pid)
    service = proxied_bot.runtime.service

    async def unknown() -> bool:
        return late.hits == 1 and service.get(pid).state == ProposalState.EXECUTING

    await wait_for(unknown)
    assert replicas(kube, "recommendation") == 0  # answered 504; not landed yet
    assert UndoEntries(proxied_bot.runtime.store).active() == []

    # The write lands seconds later; nothing else writes to the object, nobody restarts.
    async def recorded() -> bool:
        return service.get(pid).state in (ProposalState.EXECUTED, ProposalState.UNDONE)

    await wait_for(recorded, timeout=30)
    assert replicas(kube, "recommendation") == 1
    assert [s.status for s in proxy.seen("PUT", PATH, dry_run=False, outcome="late")] == [200]
    entries = UndoEntries(proxied_bot.runtime.store).history()
    assert len(entries) == 1 and entries[0].execution.proposal_id == pid

    async def undo_button() -> str:
        text = await card_of(slack, pid)
        return text if "stratus.undo" in text else ""

    card = await wait_for(undo_button, timeout=30)
    assert "Executing" not in card
    rows = proxied_bot.runtime.store.query(
        "SELECT payload FROM audit_log WHERE event = 'write' ORDER BY seq"
    )
    verdicts = [json.loads(r["payload"])["verdict"] for r in rows]
    assert verdicts == ["applied"]


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf", "301", "soon", ""])
async def test_a_reconcile_interval_out_of_bounds_is_one_line(
    seconds: str, env: dict[str, str]
) -> None:
    """The interval is bounded: a late-landing write waits at most 300 s to be recorded, and
    0 would spin. ``stratus serve`` refuses before it opens anything."""
    served = stratus(
        "serve",
        "--mode",
        "http",
        env={
            **env,
            "SLACK_BOT_TOKEN": "xoxb-test",
            "SLACK_SIGNING_SECRET": "secret",
            "STRATUS_RECONCILE_SECONDS": seconds,
        },
    )
    assert served.returncode != 0
    assert "Traceback" not in served.stderr and "internal error" not in served.stderr
    errors = [line for line in served.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "STRATUS_RECONCILE_SECONDS" in errors[0], served.stderr
