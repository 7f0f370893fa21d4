"""Issue 18 §1: a rejected or failed step ends its attempt by verifying first.

Seen: ``shop-payment-bad-config``; step 1 (restore ``payment-provider`` to ``mock``) approved
and applied, step 2 (restart the pods of deployment/payment) rejected. Stratus at once proposed
to undo step 1 — a diff ``mock → paypal-live`` that puts the diagnosed cause back — and, that
undo rejected too, escalated with health "4 → 4" although payment was Running again.

Wanted: the namespace is looked at first; better or healthy keeps what was done (and resolves
or re-plans), only worse or unchanged undoes the attempt — and that undo says it puts back the
cause found, rated high."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.model import Candidate, Step
from agents.planner import Planner
from agents.planner.offline import OfflinePlanner
from bot import buttons, cards
from incidents.memory import past_outcomes
from incidents.model import IncidentState
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from policies.evaluate import ProposalFacts, evaluate
from policies.model import Match, Rule
from proposals.model import LATE_FIELDS, ProposalState
from proposals.service import ProposalService, UndoRequest
from store.db import Store
from store.errors import StratusError
from tests.agents.test_workflow import ScriptedPlanner
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef

St = IncidentState
P = ProposalState
ASK = Rule(name="ask-everything", decision="ask")
SCENARIO = "shop-payment-bad-config"


@pytest.fixture
def policy() -> PolicyBox:
    box = PolicyBox()
    box.set(ASK)
    return box


@pytest.fixture
def service(kube: KubeClient, tmp_path: Path, policy: PolicyBox) -> Iterator[ProposalService]:
    store = Store(tmp_path / "workflow.db")
    yield ProposalService(store=store, executor=Executor(kube, store, lock_wait=0.5), policy=policy)
    store.close()


def workflow(
    lab: Lab, kube: KubeClient, service: ProposalService, planner: Planner
) -> IncidentWorkflow:
    return IncidentWorkflow(
        service=service,
        kube=kube,
        offline=planner,
        config=WorkflowConfig(settle_timeout=5, poll_interval=0.05),
        pause=lambda _: lab.settle(),
    )


def provider(kube: KubeClient) -> str:
    return str(kube.get(ObjectRef("ConfigMap", "shop-config", "shop"))["data"]["payment-provider"])


def test_a_rejected_second_step_after_a_fix_keeps_the_fix_and_resolves(
    lab: Lab, kube: KubeClient, service: ProposalService
) -> None:
    lab.control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    lab.settle()
    flow = workflow(lab, kube, service, OfflinePlanner())
    incident, _ = flow.start("shop", requester="cli:alice")
    waiting = flow.advance(incident.id)
    assert waiting.state == St.AWAITING_APPROVAL
    restore = service.get(waiting.attempts[0].proposals[0])
    assert restore.action == "restore-configmap-key", restore.action  # the offline plan
    service.answer(restore.id, user="U0BOB", choice="approve")
    second = flow.advance(incident.id)
    assert second.state == St.AWAITING_APPROVAL
    restart = service.get(second.attempts[0].proposals[1])
    assert restart.action == "rollout-restart", restart.action
    service.answer(restart.id, user="U0BOB", choice="reject", reason="no restarts at peak")
    lab.settle()
    done = flow.advance(incident.id)

    undos = [service.get(u) for u in done.attempts[0].undo_proposals]
    assert undos == [], [(u.intent, u.plan.diff) for u in undos]  # never re-breaks the fix
    assert provider(kube) == "mock"
    assert done.state == St.RESOLVED, (done.state, done.reason, done.attempts[0].outcome)
    assert done.attempts[0].verdict == "healthy"
    # One outcome word (issue 18 F2); why it stopped short is kept beside it.
    assert done.attempts[0].outcome == "fixed", done.attempts[0].outcome
    assert done.attempts[0].stopped.startswith(f"{restart.id} rejected"), done.attempts[0]
    assert lab.control.get(f"/lab/v1/scenarios/{SCENARIO}/check")["mitigated"]


def test_a_rejected_second_step_after_a_useless_first_undoes_the_first(
    lab: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    # Scaling geo changes nothing for recommendation scaled to zero: unchanged after the
    # stop, so TNR undoes it (and the incident plans the next candidate, of which none is left).
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    lab.settle()
    both = Candidate(
        steps=[
            Step(action="scale", kind="Deployment", name="geo", params={"replicas": 2}),
            Step(action="scale", kind="Deployment", name="rate", params={"replicas": 2}),
        ],
        intent="scale geo and rate",
    )
    flow = workflow(lab, kube, service, ScriptedPlanner(both))
    policy.set(
        Rule(name="allow-geo", decision="allow", match=Match(names=["geo"])),
        Rule(name="ask-rate", decision="ask", match=Match(names=["rate"])),
        Rule(name="allow-undo", decision="allow", match=Match(actions=["undo"])),
    )
    incident, _ = flow.start("hotel", requester="cli:alice")
    waiting = flow.advance(incident.id)
    assert waiting.state == St.AWAITING_APPROVAL
    rate = waiting.attempts[0].proposals[1]
    service.answer(rate, user="U0BOB", choice="reject", reason="not rate")
    done = flow.advance(incident.id)
    first = done.attempts[0]
    assert first.verdict == "same", first
    assert [service.get(u).state for u in first.undo_proposals] == [P.EXECUTED]
    assert int(kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"]) == 1
    assert first.outcome == "undone" and first.stopped.startswith(f"{rate} rejected"), first


def test_an_undo_of_the_fix_puts_back_the_cause_is_flagged_high_and_policies_see_it(
    lab: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    # The seen undo: "Undo: Restore key payment-provider … to 'mock'", diff mock →
    # paypal-live, rated medium with no warning. A rule allowing undos up to medium risk
    # must not let it through.
    lab.control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    lab.settle()
    flow = workflow(lab, kube, service, OfflinePlanner())
    incident, _ = flow.start("shop", requester="cli:alice")
    waiting = flow.advance(incident.id)
    restore = service.get(waiting.attempts[0].proposals[0])
    assert "configmap/shop-config key payment-provider" in restore.fixes, restore.fixes
    assert restore.risk_reason == "changes data.payment-provider of configmap/shop-config"
    service.answer(restore.id, user="U0BOB", choice="approve")
    flow.advance(incident.id)
    restore = service.get(restore.id)
    assert restore.state == P.EXECUTED and restore.undo_id

    policy.set(  # nothing else matches: the default is to ask
        Rule(
            name="undo-freely",
            decision="allow",
            match=Match(actions=["undo"], risk=["low", "medium"]),
        ),
    )
    undo = service.propose_undo(UndoRequest(entry_id=restore.undo_id), requester="U0BOB")
    assert "+  payment-provider: paypal-live" in undo.plan.diff
    assert undo.risk == "high" and undo.facts.risk == "high"
    assert undo.puts_back == restore.fixes
    assert undo.risk_reason == f"puts back the cause found: {restore.fixes}"
    assert undo.state == P.AWAITING_APPROVAL, undo.decision.reason  # not allowed as "medium"
    assert provider(kube) == "mock"
    # A proposal stored before these fields existed dumps (and so seals) as it did.
    bare = undo.model_copy(update=dict.fromkeys(LATE_FIELDS, ""))
    assert not set(LATE_FIELDS) & set(json.loads(bare.body()))
    # A proposal stored before these fields existed dumps (and so seals) as it did.
    bare = undo.model_copy(update=dict.fromkeys(LATE_FIELDS, ""))
    assert not set(LATE_FIELDS) & set(json.loads(bare.body()))


def test_a_rejected_step_after_a_partial_fix_keeps_it_and_plans_the_rest(
    lab: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    # Two faults: recommendation and geo both scaled to zero. Step 1 brings recommendation
    # back (better, not healthy); step 2 is rejected. The fix stays; the rest is re-planned.
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    geo = kube.get(ObjectRef("Deployment", "geo", "hotel"))
    geo["spec"]["replicas"] = 0
    kube.replace(geo)
    lab.settle()
    both = Candidate(
        steps=[
            Step(action="scale", kind="Deployment", name="recommendation", params={"replicas": 1}),
            Step(action="scale", kind="Deployment", name="rate", params={"replicas": 2}),
        ],
        intent="scale recommendation and rate",
    )
    flow = workflow(lab, kube, service, ScriptedPlanner(both))
    policy.set(
        Rule(name="allow-rec", decision="allow", match=Match(names=["recommendation"])),
        Rule(name="ask-rate", decision="ask", match=Match(names=["rate"])),
        Rule(name="allow-undo", decision="allow", match=Match(actions=["undo"])),
    )
    incident, _ = flow.start("hotel", requester="cli:alice")
    waiting = flow.advance(incident.id)
    assert waiting.state == St.AWAITING_APPROVAL
    service.answer(waiting.attempts[0].proposals[1], user="U0BOB", choice="reject", reason="no")
    done = flow.advance(incident.id)
    first = done.attempts[0]
    assert first.verdict == "better", first
    assert first.undo_proposals == [] and first.outcome == "improved", first.outcome
    assert first.stopped.endswith("rejected: no"), first.stopped
    recommendation = kube.get(ObjectRef("Deployment", "recommendation", "hotel"))
    assert recommendation["spec"]["replicas"] == 1
    # Nothing else to try (the only candidate was refused): a person takes over, fix in place.
    assert done.state == St.ESCALATED and done.reason == "no candidates left", done.reason


def test_undoing_a_fix_kept_after_a_refused_step_reopens_the_incident(
    lab: Lab, kube: KubeClient, service: ProposalService
) -> None:
    # Issue 18 F2: resolved "… what it did is kept"; bob's Undo of step 1 (carol approving)
    # said "incident left closed because that write was not the fix that resolved it" and the
    # incident stayed resolved over a ConfigMap put back to paypal-live.
    lab.control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    lab.settle()
    flow = workflow(lab, kube, service, OfflinePlanner())
    incident, _ = flow.start("shop", requester="cli:alice")
    waiting = flow.advance(incident.id)
    restore = service.get(waiting.attempts[0].proposals[0])
    service.answer(restore.id, user="U0BOB", choice="approve")
    second = flow.advance(incident.id)
    service.answer(second.attempts[0].proposals[1], user="U0BOB", choice="reject", reason="no")
    done = flow.advance(incident.id)
    assert done.state == St.RESOLVED, (done.state, done.reason)
    assert done.attempts[0].outcome == "fixed" and done.attempts[0].stopped

    undo = service.propose_undo(
        UndoRequest(entry_id=service.get(restore.id).undo_id, incident_id=incident.id),
        requester="U0BOB",
    )
    service.answer(undo.id, user="U0CAROL", choice="approve")
    service.execute(undo.id, actor="U0CAROL")
    assert provider(kube) == "paypal-live"
    noted = flow.fix_undone(undo.id)
    assert noted is not None and noted.fix_undone is not None, noted
    assert noted.fix_undone.reopened, noted.fix_undone.why
    assert noted.state == St.DETECTING

    # "Seen before" of a later incident on shop records the fix as a fix, not "rejected".
    _, lines = past_outcomes(flow.incidents, noted.model_copy(update={"id": "inc-later"}))
    assert any(incident.id in line and line.endswith("→ fixed") for line in lines), lines


def test_no_grant_lets_an_undo_put_the_cause_back_and_its_card_offers_none(
    lab: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    # Issue 18 F1(a): the undo card flagged "puts back the cause" still offered "Always allow
    # undo on ConfigMap/…"; bob clicked it, and TNR's undo of the fix later ran under the
    # grant ("Approved by policy: allowed: grant … by U0BOB") with no human.
    lab.control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    lab.settle()
    flow = workflow(lab, kube, service, OfflinePlanner())
    incident, _ = flow.start("shop", requester="cli:alice")
    restore = service.get(flow.advance(incident.id).attempts[0].proposals[0])
    service.answer(restore.id, user="U0BOB", choice="approve")
    flow.advance(incident.id)
    restore = service.get(restore.id)
    assert restore.state == P.EXECUTED and restore.undo_id

    remember = Rule(name="undo-remember", decision="ask", remember=True, max_grant="8h")
    policy.set(remember)
    undo_facts = ProposalFacts(
        action="undo",
        namespace="shop",
        kind="ConfigMap",
        name="shop-config",
        risk="high",
        reversible=True,
        requester="U0BOB",
    )
    now = service.store.clock.now()
    grant = service.grants.create(
        undo_facts, evaluate(undo_facts, policy(), [], now), created_by="U0BOB", now=now
    )
    assert evaluate(undo_facts, policy(), [grant], now).grant == grant.id  # a live grant

    undo = service.propose_undo(UndoRequest(entry_id=restore.undo_id), requester="U0BOB")
    assert undo.puts_back and undo.facts.puts_back
    assert undo.state == P.AWAITING_APPROVAL, undo.decision.reason  # not under the grant
    assert undo.decision.grant is None and not undo.decision.remember
    card = cards.proposal_card(undo, incident=None, telemetry=None)
    action_ids = [
        getattr(e, "action_id", "") for block in card for e in getattr(block, "elements", []) or []
    ]
    assert buttons.APPROVE in action_ids and buttons.ALWAYS not in action_ids, action_ids
    with pytest.raises(StratusError):
        service.answer(undo.id, user="U0CAROL", choice="always")
    assert provider(kube) == "mock"
