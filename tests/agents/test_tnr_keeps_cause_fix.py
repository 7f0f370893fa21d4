"""Issue 18 F1(b): an automatic (TNR) undo never puts the diagnosed cause back.

Seen (shop-payment-bad-config): the single step "set payment-provider to mock" approved while
payment crash-looped; 2 s later the verdict was "worse (4 → 5: crash looping 1, new warning
events 1, unready 1)" — the pod had not restarted to read the restored key — and Stratus then
proposed, by itself, the undo that puts the cause back; run, the incident escalated "no
candidate action is left".

Wanted: the fix of the cause is kept whatever a too-early look says; the incident says so (a
person may still Undo it from its card, flagged) and no undo of it is proposed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.model import Candidate, PlanResult
from agents.planner import PlanRequest
from agents.planner.offline import OfflinePlanner
from incidents.model import IncidentState
from incidents.repository import IncidentEventType
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.cluster.clock import REALTIME
from lab.runner import LabServer, write_kubeconfig
from policies.model import Match, Rule
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.db import Store
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef

St = IncidentState
P = ProposalState
SCENARIO = "shop-payment-bad-config"


class FirstStepOnly:
    """The offline planner's diagnosis, and its first candidate cut to its first step: the
    single "restore the key" attempt seen."""

    name = "offline"

    def plan(self, request: PlanRequest) -> PlanResult:
        result = OfflinePlanner().plan(request)
        cut = [
            Candidate(steps=c.steps[:1], intent="restore the key", mechanism=c.mechanism)
            for c in result.candidates[:1]
        ]
        return result.model_copy(
            update={"candidates": [c for c in cut if c.key() not in request.tried]}
        )


@pytest.fixture
def policy() -> PolicyBox:
    box = PolicyBox()
    # Undos are allowed freely: the undo of the fix must still never be proposed by Stratus.
    box.set(
        Rule(name="allow-undo", decision="allow", match=Match(actions=["undo"])),
        Rule(name="ask-everything", decision="ask"),
    )
    return box


def provider(kube: KubeClient) -> str:
    return str(kube.get(ObjectRef("ConfigMap", "shop-config", "shop"))["data"]["payment-provider"])


@pytest.fixture
def shop_realtime(tmp_path: Path) -> Iterator[Lab]:
    server = LabServer(mode=REALTIME, apps=["shop"]).start()
    kubeconfig = write_kubeconfig(tmp_path / "kube" / "config", server.url, "shop")
    lab = Lab(server, kubeconfig)
    deadline = time.monotonic() + 60
    lab.control.post("/lab/v1/scenarios/noop-shop/inject")
    while not lab.control.get("/lab/v1/scenarios/noop-shop/check")["passed"]:
        assert time.monotonic() < deadline, "the realtime lab never came up"
        time.sleep(0.5)
    yield lab
    server.stop()


def payment_restarts(kube: KubeClient) -> int:
    pods = kube.list("v1", "Pod", namespace="shop", label_selector="app=payment")
    return max(
        (
            int(c.get("restartCount") or 0)
            for p in pods
            for c in (p.get("status") or {}).get("containerStatuses") or []
        ),
        default=0,
    )


def test_a_too_early_worse_verdict_keeps_the_fix_of_the_cause(
    shop_realtime: Lab, tmp_path: Path, policy: PolicyBox
) -> None:
    lab = shop_realtime
    kube = KubeClient(kubeconfig=str(lab.kubeconfig))
    store = Store(tmp_path / "stratus.db")
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=policy
    )
    lab.control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    # payment has crashed a few times: its next restart waits out a back-off longer than the
    # settle bound, so the look after the fix comes before it reads the restored key.
    deadline = time.monotonic() + 60
    while payment_restarts(kube) < 2:
        assert time.monotonic() < deadline, "payment never crash-looped"
        time.sleep(0.5)
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=FirstStepOnly(),
        config=WorkflowConfig(settle_timeout=2, poll_interval=0.5, unfold_timeout=0),
    )
    incident, _ = flow.start("shop", requester="cli:alice")
    waiting = flow.advance(incident.id)
    assert waiting.state == St.AWAITING_APPROVAL, (waiting.state, waiting.reason)
    restore = service.get(waiting.attempts[0].proposals[0])
    assert restore.action == "restore-configmap-key" and restore.fixes, restore
    service.answer(restore.id, user="U0BOB", choice="approve")
    done = flow.advance(incident.id)

    attempt = done.attempts[0]
    said = [e.event.message for e in flow.incidents.events(incident_id=incident.id)]
    assert attempt.verdict not in ("healthy", "better"), (attempt.verdict, said)  # too early
    undos = [service.get(u) for u in attempt.undo_proposals]
    assert undos == [], [(u.intent, u.plan.diff) for u in undos]  # never re-breaks the fix
    assert provider(kube) == "mock"
    assert service.get(restore.id).state == P.EXECUTED
    assert done.state == St.ESCALATED and done.reason == "fix of the cause kept", said
    assert any("fix of the cause found was kept" in m and restore.id in m for m in said), said
    # The verdict says why it cannot judge the fix yet when payment has not restarted to read
    # it by the end of the settle bound (on a loaded machine its back-off may have ended in
    # time: then it is judged, still too early to be healthy, and nothing names it).
    verified = [
        e.event.data
        for e in flow.incidents.events(incident_id=incident.id)
        if e.event.type == IncidentEventType.VERIFIED
    ]
    assert verified, said
    if verified[-1].get("not_restarted"):
        assert any("not judged yet: payment-" in m for m in said), said
    store.close()
