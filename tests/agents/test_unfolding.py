"""A fault caught in the act (issue 18 §2): ``investigate`` moments after a scenario was
injected, in a lab on the wall clock, must keep looking while the namespace is still moving
and reach the fix — not escalate at once with "no catalog action fixes this"."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents import snapshot as snapshots
from agents.planner.offline import OfflinePlanner, plan_offline
from incidents.alert_store import AlertIntake
from incidents.alerts import AlertmanagerPayload
from incidents.model import IncidentState
from incidents.repository import IncidentClosed, IncidentEventType
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.cluster.clock import REALTIME
from lab.runner import LabServer, write_kubeconfig
from policies.model import Rule
from proposals.service import ProposalService
from store.db import Store
from tests.agents.alert_payloads import alert, payload
from tests.agents.test_workflow import FIX, ScriptedPlanner
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient

SCENARIO = "shop-payment-bad-config"


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


def flow_for(lab: Lab, tmp_path: Path, *, unfold: float) -> tuple[IncidentWorkflow, Store]:
    kube = KubeClient(kubeconfig=str(lab.kubeconfig))
    store = Store(tmp_path / "stratus.db")
    box = PolicyBox()
    box.set(Rule(name="allow-everything", decision="allow", allow_irreversible=True))
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=box
    )
    config = WorkflowConfig(settle_timeout=30, poll_interval=0.5, unfold_timeout=unfold)
    return IncidentWorkflow(
        service=service, kube=kube, offline=OfflinePlanner(), config=config
    ), store


@pytest.mark.parametrize("moment", ["immediately", "while-nothing-can-be-tried"])
def test_an_investigation_started_as_the_fault_unfolds_looks_again_and_reaches_the_fix(
    shop_realtime: Lab, tmp_path: Path, moment: str
) -> None:
    lab = shop_realtime
    flow, store = flow_for(lab, tmp_path, unfold=30)
    lab.control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    if moment == "while-nothing-can-be-tried":
        # The moment issue 18 saw: the payment pod restarting after its crash, when a look
        # names deployment/payment but nothing that can be tried (about a second long).
        deadline = time.monotonic() + 15
        while True:
            early = plan_offline(snapshots.take(flow.kube, "shop"))
            if early.diagnosis is not None and not early.candidates:
                break
            if time.monotonic() > deadline:
                pytest.skip("the lab moved past that moment before the test could catch it")
            time.sleep(0.05)
    incident, _ = flow.start("shop", requester="cli:alice")
    done = flow.advance(incident.id)
    lines = [e.event.message for e in flow.incidents.events(incident_id=incident.id)]
    store.close()
    assert done.state == IncidentState.RESOLVED, "\n".join(lines)
    assert done.diagnosis is not None and done.diagnosis.resource.kind == "ConfigMap"
    assert not any("no catalog action fixes" in line for line in lines), lines
    assert lab.control.get(f"/lab/v1/scenarios/{SCENARIO}/check")["mitigated"]


def test_an_escalation_is_looked_at_again_in_the_same_incident(
    broken: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    """Look again, and a later investigation of the namespace, re-open the escalated
    incident (its thread, what it learned) instead of pointing at it or starting anew."""
    policy.set(Rule(name="allow-everything", decision="allow", allow_irreversible=True))
    planner = ScriptedPlanner(FIX, diagnose=False)
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=planner,
        config=WorkflowConfig(settle_timeout=5, poll_interval=0.05),
    )
    first, _ = flow.start("hotel", requester="cli:alice")
    escalated = flow.advance(first.id)
    assert escalated.state == IncidentState.ESCALATED and escalated.reason == "no diagnosis"

    planner.diagnose = True  # what a second look finds
    again, joined = flow.start("hotel", requester="cli:bob", question="still broken?")
    assert joined and again.id == first.id
    assert again.state == IncidentState.DIAGNOSING and again.reopened == 1
    done = flow.advance(again.id)
    assert done.state == IncidentState.RESOLVED, done.reason
    lines = [e.event.message for e in flow.incidents.events(incident_id=first.id)]
    assert any("cli:bob asked to look again" in line for line in lines), lines
    with pytest.raises(IncidentClosed) as resolved:
        flow.reopen(first.id, actor="cli:carol")
    assert resolved.value.details == {
        "state": "resolved",
        "reason": "mitigated",
        "reopenable": False,
        "namespace": "hotel",
    }


def test_a_later_alert_reopens_the_escalation_instead_of_opening_beside_it(
    broken: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(Rule(name="allow-everything", decision="allow", allow_irreversible=True))
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=ScriptedPlanner(FIX, diagnose=False),
        config=WorkflowConfig(settle_timeout=5, poll_interval=0.05),
    )
    first, _ = flow.start("hotel", requester="cli:alice")
    assert flow.advance(first.id).state == IncidentState.ESCALATED
    intake = AlertIntake(flow)
    result = intake.receive(AlertmanagerPayload.model_validate(payload(alert())))
    assert result.opened == [first.id]  # the bot drives it again, in its thread
    again = flow.incidents.get(first.id)
    assert again.state == IncidentState.DIAGNOSING and again.reopened == 1
    assert len(flow.incidents.recent()) == 1
    fired = [
        e.event
        for e in flow.incidents.events(incident_id=first.id)
        if e.event.type == IncidentEventType.ALERT_FIRED
    ]
    assert len(fired) == 1
