"""Writes made as the approver, end to end: a lab with RBAC on, Stratus on a ServiceAccount
token that may read everything and write nothing but may impersonate ``alice`` and ``bob``,
the bot on the Slack playground, and an impersonation mapping U0ALICE → alice, U0BOB → bob.

Alice's Kubernetes user may change deployments in ``hotel``: her approval of the scale is
applied, and the lab's audit log names her (sent by the ServiceAccount). Bob's user may only
read them: his approval is refused by the cluster, the card says "the cluster refused this
for @bob", and nothing is recorded as applied (the proposal failed, no execution record, no
undo entry, no write in Stratus's audit).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agents.planner.offline import OfflinePlanner
from bot.app import StratusBot
from bot.config import BotConfig
from bot.runtime import Runtime
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.client import LabClient
from lab.runner import LabServer
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from policies import impersonation
from policies.model import Defaults
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.audit import AuditLog
from store.db import Store
from tests.bot.conftest import ASK, blocks_text, wait_for
from tests.bot.test_e2e import SCENARIO, _undo_card, first_card, proposal_id
from tests.conftest import Lab
from tests.impersonation_lab import SA_USER, set_up
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from undo.entries import UndoEntries

pytestmark = pytest.mark.asyncio

MAPPING = """\
apiVersion: stratus/v1
kind: Impersonation
people:
  - who: U0ALICE
    user: alice
    groups: [hotel-operators]
  - who: U0BOB
    user: bob
"""


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    server = LabServer(apps=["hotel"], rbac=True).start()
    folder = tmp_path_factory.mktemp("imperson-e2e")
    admin = server.write_kubeconfig(folder / "admin", "hotel")
    account = set_up(server, admin, folder / "stratus")
    yield Lab(server, admin), account
    server.stop()


class Running:
    def __init__(self, bot: StratusBot, store: Store, admin: KubeClient, lab: Lab) -> None:
        self.bot, self.store, self.admin, self.lab = bot, store, admin, lab

    @property
    def rt(self) -> Runtime:
        return self.bot.rt

    def replicas(self, name: str) -> int:
        return int(self.admin.get(ObjectRef("Deployment", name, "hotel"))["spec"]["replicas"])

    def lab_audit(self, name: str) -> list[dict[str, Any]]:
        items = LabClient(self.lab.url).get("/lab/v1/audit")["items"]
        return [e for e in items if e.get("objectRef", {}).get("name") == name]


@pytest_asyncio.fixture
async def running(
    rbac_lab: tuple[Lab, Path], playground: PlaygroundServer, tmp_path: Path
) -> AsyncIterator[Running]:
    lab, account = rbac_lab
    mapping = tmp_path / "impersonation.yaml"
    mapping.write_text(MAPPING)
    policy = PolicyBox()
    policy.set(ASK, defaults=Defaults(approvers=["*"]))
    kube = KubeClient(kubeconfig=str(account))  # the ServiceAccount: reads, never writes
    admin = KubeClient(kubeconfig=str(lab.kubeconfig))
    store = Store(tmp_path / "bot.db")
    service = ProposalService(
        store=store,
        executor=Executor(kube, store, lock_wait=0.5),
        policy=policy,
        impersonation=impersonation.parse(mapping),
    )
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=OfflinePlanner(),
        config=WorkflowConfig(settle_timeout=8, poll_interval=0.1),
    )
    config = BotConfig(
        mode="http",
        bot_token=playground.bot_token,
        signing_secret=playground.signing_secret,
        api_url=playground.api_url,
        port=0,
        follow_interval=0.1,
    )
    bot = StratusBot(Runtime(service=service, workflow=flow, policy=policy), config)
    await bot.start()
    await AsyncPlaygroundClient(playground.url).configure(request_url=bot.url)
    LabClient(lab.url).post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    LabClient(lab.url).post("/lab/v1/settle")
    try:
        yield Running(bot, store, admin, lab)
    finally:
        await bot.stop()
        store.close()
        kube.close()
        admin.close()


async def _first_card(slack: AsyncPlaygroundClient) -> dict[str, Any]:
    try:
        return await first_card(slack)
    except TimeoutError:
        posted = (await slack.messages(channel="C0INCIDENT"))["messages"]
        raise AssertionError([blocks_text(m)[:600] for m in posted]) from None


async def _card(slack: AsyncPlaygroundClient, pid: str) -> str:
    """The card of ``pid`` as a person reads it (with or without buttons)."""
    for message in (await slack.messages(channel="C0INCIDENT"))["messages"]:
        text = blocks_text(message)
        if f"`{pid}`" in text and "Diff" in text:
            return text
    return ""


async def _card_says(slack: AsyncPlaygroundClient, pid: str, needle: str) -> str | None:
    text = await _card(slack, pid)
    return text if needle in text else None


async def test_a_write_approved_by_alice_is_made_as_alice_and_the_cluster_records_her(
    running: Running, slack: AsyncPlaygroundClient
) -> None:
    assert running.replicas("recommendation") == 0
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await _first_card(slack))
    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def executed() -> bool:
        state = (await running.rt.call(running.rt.service.get, pid)).state
        return state in (ProposalState.EXECUTED, ProposalState.FAILED)

    await wait_for(executed, timeout=60)
    proposal = running.rt.service.get(pid)
    assert proposal.state == ProposalState.EXECUTED, proposal.reason
    assert running.replicas("recommendation") == 1
    # The write left as the ServiceAccount acting as alice; the cluster's record says so.
    writes = [
        e
        for e in running.lab_audit("recommendation")
        if e["verb"] == "update" and "dryRun" not in e["requestURI"]
    ]
    assert writes, running.lab_audit("recommendation")
    assert writes[-1]["user"]["username"] == SA_USER
    assert writes[-1]["impersonatedUser"]["username"] == "alice"
    assert "hotel-operators" in writes[-1]["impersonatedUser"]["groups"]
    assert writes[-1]["responseStatus"]["code"] == 200
    # Stratus's own audit row says whom it was sent as.
    rows = [r for r in AuditLog(running.store).records(limit=1000) if r.event == "write"]
    assert rows and "alice" in str(rows[-1].payload.get("sent_as"))

    # Her undo is made as her too.
    await wait_for(lambda: _card_says(slack, pid, "stratus.undo"), timeout=60)
    await slack.click("U0ALICE", "stratus.undo", value=pid)
    undo_id = proposal_id(await wait_for(lambda: _undo_card(slack), timeout=60))
    await slack.click("U0ALICE", "stratus.approve", value=undo_id)

    async def undone() -> bool:
        state = (await running.rt.call(running.rt.service.get, undo_id)).state
        return state in (ProposalState.EXECUTED, ProposalState.FAILED)

    await wait_for(undone, timeout=60)
    assert running.rt.service.get(undo_id).state == ProposalState.EXECUTED
    assert running.replicas("recommendation") == 0
    undo_write = [
        e
        for e in running.lab_audit("recommendation")
        if e["verb"] == "update" and "dryRun" not in e["requestURI"]
    ][-1]
    assert undo_write["impersonatedUser"]["username"] == "alice"
    assert undo_write is not writes[-1] and undo_write["auditID"] != writes[-1]["auditID"]


async def test_a_write_approved_by_bob_is_refused_by_the_cluster_and_nothing_is_applied(
    running: Running, slack: AsyncPlaygroundClient
) -> None:
    assert running.replicas("recommendation") == 0
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await _first_card(slack))
    await slack.click("U0BOB", "stratus.approve", value=pid)
    try:
        text = await wait_for(
            lambda: _card_says(slack, pid, "the cluster refused this for <@U0BOB>"), timeout=60
        )
    except TimeoutError:
        raise AssertionError(await _card(slack, pid)) from None
    assert (
        'User \\"bob\\" cannot update resource \\"deployments\\" in API group \\"apps\\" '
        'in the namespace \\"hotel\\"'
    ) in text or 'User "bob" cannot update resource "deployments"' in text, text
    proposal = running.rt.service.get(pid)
    assert proposal.state == ProposalState.FAILED
    assert proposal.error and proposal.error["code"] == "cluster_refused"
    assert proposal.error["details"]["user"] == "bob"
    # Nothing was applied: the object, the execution records, the undo stack, the audit.
    assert running.replicas("recommendation") == 0
    assert running.rt.service.executions.by_proposal(pid) == []
    assert UndoEntries(running.store).active() == []
    assert not [r for r in AuditLog(running.store).records(limit=1000) if r.event == "write"]
    refused = [e for e in running.lab_audit("recommendation") if e["verb"] == "update"]
    assert refused and refused[-1]["impersonatedUser"]["username"] == "bob"
    assert refused[-1]["responseStatus"]["code"] == 403


async def test_an_approver_with_no_kubernetes_identity_is_refused_and_the_card_stays_open(
    running: Running, slack: AsyncPlaygroundClient
) -> None:
    """Finding 5: an unmapped approver's vote is refused when it is cast — nothing is sent,
    the attempt is not spent — and someone mapped approves the same card."""
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await _first_card(slack))
    sent_before = len([e for e in running.lab_audit("recommendation") if e["verb"] == "update"])
    await slack.click("U0CAROL", "stratus.approve", value=pid)

    async def told() -> str | None:
        said = [e["message"]["text"] for e in (await slack.ephemerals("U0CAROL"))["ephemerals"]]
        return next((t for t in said if "no Kubernetes identity" in t), None)

    refusal = await wait_for(told, timeout=60)
    assert "someone mapped must approve" in refusal and "Nothing changed" in refusal
    await running.bot.rt.drain()
    proposal = running.rt.service.get(pid)
    assert proposal.state == ProposalState.AWAITING_APPROVAL and proposal.votes == []
    assert proposal.incident_id is not None
    incident = running.rt.incidents.get(proposal.incident_id)
    assert incident.state.value == "awaiting_approval"  # the attempt goes on: not spent
    assert running.replicas("recommendation") == 0
    assert running.rt.service.executions.by_proposal(pid) == []
    sent_after = len([e for e in running.lab_audit("recommendation") if e["verb"] == "update"])
    assert sent_after == sent_before  # not even a dry-run left for the cluster

    await slack.click("U0ALICE", "stratus.approve", value=pid)

    async def executed() -> bool:
        return running.rt.service.get(pid).state == ProposalState.EXECUTED

    await wait_for(executed, timeout=60)
    assert running.replicas("recommendation") > 0
