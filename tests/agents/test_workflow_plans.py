"""Issue 18 §1: an attempt of several steps is a plan. ``shop-payment-bad-config`` is fixed
in two steps (restore ``payment-provider`` in shop-config, then restart deployment/payment);
each used to be asked on its own. Where the policy's rule says ``approve_plan: true``, one
"Approve plan" on the first step approves the second as well, bound to its digest; a second
step whose object moved since is asked alone; a rule that does not opt in keeps every step
asked. The real offline planner, the real proposal service, the lab over HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.planner.offline import OfflinePlanner
from incidents import plans
from incidents.model import Incident, IncidentState
from incidents.repository import IncidentEventType
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from policies.model import Match, Rule
from proposals.errors import AnswerRefused
from proposals.model import Proposal, ProposalState
from proposals.service import ProposalService
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient
from tools.objects import ObjectRef

St = IncidentState
P = ProposalState
PLAN_RULE = Rule(
    name="shop-steps-as-a-plan",
    decision="ask",
    approve_plan=True,
    approvers=["cli:alice", "cli:bob"],
    match=Match(namespaces=["shop"]),
)
ALWAYS_ASK_RESTARTS = Rule(
    name="restarts-always-ask", decision="ask", match=Match(actions=["rollout-restart"])
)


@pytest.fixture
def shop(lab: Lab) -> Lab:
    lab.control.post("/lab/v1/scenarios/shop-payment-bad-config/inject")
    lab.settle()
    return lab


def workflow(service: ProposalService, kube: KubeClient) -> IncidentWorkflow:
    return IncidentWorkflow(
        service=service,
        kube=kube,
        offline=OfflinePlanner(),
        config=WorkflowConfig(settle_timeout=5, poll_interval=0.05),
    )


def waiting_step(flow: IncidentWorkflow, incident: Incident) -> Proposal:
    assert incident.state == St.AWAITING_APPROVAL, (incident.state, incident.reason)
    attempt = incident.current
    assert attempt is not None
    return flow.service.get(attempt.proposals[-1])


def start(flow: IncidentWorkflow) -> Incident:
    incident, _ = flow.start("shop", requester="cli:carol")
    incident = flow.advance(incident.id)
    attempt = incident.current
    assert attempt is not None and len(attempt.candidate.steps) == 2, attempt
    return incident


def provider(kube: KubeClient) -> str:
    config = kube.get(ObjectRef("ConfigMap", "shop-config", "shop"))
    return str(config["data"]["payment-provider"])


def test_the_plan_is_computed_once_and_posted_and_each_step_says_which_it_is(
    shop: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(PLAN_RULE)
    flow = workflow(service, kube)
    incident = start(flow)
    attempt = incident.current
    assert attempt is not None
    assert [s.number for s in attempt.plan] == [1, 2]
    assert all(s.digest and s.decision is not None for s in attempt.plan)
    assert "configmap/shop-config" in attempt.plan[0].target
    assert attempt.plan[1].action == "rollout-restart"
    (started,) = [
        e.event
        for e in flow.incidents.events(incident_id=incident.id)
        if e.event.type == IncidentEventType.ATTEMPT
    ]
    assert [s["number"] for s in started.data["plan"]] == [1, 2]
    first = waiting_step(flow, incident)
    assert plans.position(incident, first.id) == (1, 2)
    # Its digest is the one planned: what "Approve plan" binds is what is proposed.
    assert first.plan.digest == attempt.plan[0].digest
    assert plans.plan_offered(incident, first)


def test_approve_plan_runs_the_second_step_without_asking_again(
    shop: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(PLAN_RULE)
    flow = workflow(service, kube)
    incident = start(flow)
    first = waiting_step(flow, incident)
    voted = plans.approve_plan(
        service, incident, first, user="cli:alice", groups=(), now=service.clock.now()
    )
    assert voted.state == P.APPROVED
    done = flow.advance(incident.id)
    assert done.state == St.RESOLVED, (done.state, done.reason)
    assert provider(kube) == "mock"
    attempt = done.current
    assert attempt is not None and len(attempt.proposals) == 2
    second = service.get(attempt.proposals[1])
    assert second.state == P.EXECUTED
    (vote,) = second.votes
    assert (vote.user, vote.with_plan) == ("cli:alice", first.id)
    assert plans.position(done, second.id) == (2, 2)
    moves = [e.event.message for e in flow.incidents.events(incident_id=incident.id)]
    assert any("approved with the plan by cli:alice" in m for m in moves), moves


def test_a_second_step_whose_object_moved_is_asked_alone(
    shop: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(PLAN_RULE)
    flow = workflow(service, kube)
    incident = start(flow)
    first = waiting_step(flow, incident)
    plans.approve_plan(
        service, incident, first, user="cli:alice", groups=(), now=service.clock.now()
    )
    # Someone changes deployment/payment between the plan approval and its second step.
    payment = kube.get(ObjectRef("Deployment", "payment", "shop"))
    payment["metadata"].setdefault("annotations", {})["team"] = "moved-by-hand"
    kube.replace(payment)
    after = flow.advance(incident.id)
    second = waiting_step(flow, after)
    assert second.id != first.id and second.state == P.AWAITING_APPROVAL
    assert plans.position(after, second.id) == (2, 2)
    notes = [e.event.message for e in flow.incidents.events(incident_id=incident.id)]
    assert any(f"{second.id} is asked alone" in m and "changed since" in m for m in notes), notes
    assert not plans.plan_offered(after, second)


def test_a_step_whose_rule_always_asks_is_never_covered_and_no_plan_is_offered(
    shop: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(PLAN_RULE, ALWAYS_ASK_RESTARTS)
    flow = workflow(service, kube)
    incident = start(flow)
    first = waiting_step(flow, incident)
    attempt = incident.current
    assert attempt is not None
    assert not plans.coverable(attempt.plan[1])
    assert not plans.plan_offered(incident, first)
    with pytest.raises(AnswerRefused, match="not available"):
        plans.approve_plan(
            service, incident, first, user="cli:alice", groups=(), now=service.clock.now()
        )
    assert service.get(first.id).state == P.AWAITING_APPROVAL  # the refused click changed nothing


def test_someone_who_may_not_approve_every_step_is_refused_and_nothing_changes(
    shop: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    restarts_by_bob = Rule(
        name="restarts-by-bob",
        decision="ask",
        approve_plan=True,
        approvers=["cli:bob"],
        match=Match(actions=["rollout-restart"]),
    )
    policy.set(PLAN_RULE, restarts_by_bob)
    flow = workflow(service, kube)
    incident = start(flow)
    first = waiting_step(flow, incident)
    assert plans.plan_offered(incident, first)
    with pytest.raises(AnswerRefused, match="may not approve step 2"):
        plans.approve_plan(
            service, incident, first, user="cli:alice", groups=(), now=service.clock.now()
        )
    assert service.get(first.id).votes == []
    # A second click by the same person, once approved, is refused as a double vote.
    plans.approve_plan(service, incident, first, user="cli:bob", groups=(), now=service.clock.now())
    with pytest.raises(AnswerRefused):
        plans.approve_plan(
            service, incident, first, user="cli:bob", groups=(), now=service.clock.now()
        )


def test_the_terminal_prints_the_plan_and_which_step_it_asks(
    shop: Lab, env: dict[str, str], tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from cli.main import stratus as stratus_cli

    directory = tmp_path / "policy"
    directory.mkdir()
    (directory / "policy.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: ask}\n"
        "rules:\n- {name: ask-all, decision: ask, approve_plan: true}\n"
    )
    result = CliRunner().invoke(
        stratus_cli,
        ["investigate", "shop", "--planner", "offline", "--yes"],
        env={**env, "STRATUS_POLICY_DIR": str(directory)},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "plan (2 steps):" in out and "1. Restore key payment-provider" in out, out
    assert "2. Restart the pods of deployment/payment" in out
    # --yes answers each step as it is asked: the terminal never approves a plan silently.
    assert out.index("step 1 of 2") < out.index("step 2 of 2")


def test_a_terminal_approves_the_plan_and_the_next_advance_runs_the_second_step(
    shop: Lab, env: dict[str, str], tmp_path: Path, kube: KubeClient
) -> None:
    from click.testing import CliRunner

    from cli.main import stratus as stratus_cli
    from store.db import Store

    directory = tmp_path / "policy"
    directory.mkdir()
    (directory / "policy.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: ask}\n"
        "rules:\n- {name: ask-all, decision: ask, approve_plan: true}\n"
    )
    env = {**env, "STRATUS_POLICY_DIR": str(directory)}

    def run(*args: str) -> str:
        result = CliRunner().invoke(stratus_cli, list(args), env=env, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    run("investigate", "shop", "--planner", "offline")  # no terminal: it waits, stored
    store = Store(env["STRATUS_DB"])
    try:
        (row,) = store.query("SELECT id FROM proposals")
        (incident,) = store.query("SELECT id FROM incidents")
    finally:
        store.close()
    approved = run("proposals", "approve", str(row["id"]), "--plan")
    assert "step 1 of 2" in approved and "applied:" in approved, approved
    assert provider(kube) == "mock"
    resumed = run("incidents", "resume", str(incident["id"]))
    assert "approved with the plan by cli:sre-alice" in resumed, resumed
    assert "resolved" in resumed


def test_an_approver_who_lost_the_right_since_is_not_stood_in_for(
    shop: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(PLAN_RULE)
    flow = workflow(service, kube)
    incident = start(flow)
    first = waiting_step(flow, incident)
    plans.approve_plan(
        service, incident, first, user="cli:alice", groups=(), now=service.clock.now()
    )
    # Before the second step is proposed, the policy lets only bob approve restarts.
    restarts_by_bob = Rule(
        name="restarts-by-bob",
        decision="ask",
        approve_plan=True,
        approvers=["cli:bob"],
        match=Match(actions=["rollout-restart"]),
    )
    policy.set(PLAN_RULE, restarts_by_bob)
    after = flow.advance(incident.id)
    second = waiting_step(flow, after)
    assert second.id != first.id and second.votes == []
    notes = [e.event.message for e in flow.incidents.events(incident_id=incident.id)]
    alone = [m for m in notes if f"{second.id} is asked alone" in m]
    assert alone and "cli:alice, who approved the plan, may not approve" in alone[0], notes[-4:]
