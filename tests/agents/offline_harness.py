"""Running the offline planner's candidates through the real proposal service, as the
workflow does: propose each step, execute it under an allow-all policy, settle, judge with the
scenario's oracle; an attempt that made the namespace's health score worse is undone before
the next one (Transactional No-Regression), and at most three attempts are made.

An attempt that leaves the score the same is kept here (the workflow undoes it): with two
faults at once, fixing one can leave the same caller pods failing because of the other. One
that made it worse only by revealing a callee's fault behind its fixed target is kept too, as
the workflow keeps it (``agents.attribution``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents import health
from agents.attribution import attribute
from agents.model import Candidate, PlanResult
from agents.planner.offline import plan_offline
from agents.snapshot import take
from agents.verify import written_names
from policies.model import Rule
from proposals.model import ProposalState
from proposals.service import ProposalService, UndoRequest
from store.db import Store
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient

MAX_ATTEMPTS = 3
AGENT = "agent:test"
APPROVER = "U0APPROVER"


def allow_all_service(kube: KubeClient, path: Path) -> ProposalService:
    store = Store(path)
    policy = PolicyBox()
    policy.set(Rule(name="allow-all", decision="allow"))
    return ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=policy
    )


@dataclass
class Attempt:
    candidate: Candidate
    verdict: str  # health verdict after it: healthy | better | same | worse
    undone: bool


@dataclass
class Outcome:
    oracle: dict[str, Any]
    attempts: list[Attempt] = field(default_factory=list)
    plans: list[PlanResult] = field(default_factory=list)


def apply(service: ProposalService, candidate: Candidate, namespace: str) -> list[str]:
    """Execute the candidate's steps; returns their undo entry ids, newest last."""
    undo_ids = []
    for step in candidate.steps:
        proposal = service.propose(
            action=step.action,
            kind=step.kind,
            name=step.name,
            namespace=namespace,
            params=dict(step.params),
            requester=AGENT,
        )
        if proposal.state == ProposalState.AWAITING_APPROVAL:
            # Some writes ask a person whatever the rules say (an irreversible delete).
            service.answer(proposal.id, user=APPROVER, choice="approve")
        done = service.execute(proposal.id, actor=AGENT)
        if done.undo_id is not None:
            undo_ids.append(done.undo_id)
    return undo_ids


def undo(service: ProposalService, undo_ids: list[str]) -> None:
    for entry in reversed(undo_ids):
        proposal = service.propose_undo(UndoRequest(entry_id=entry), requester=AGENT)
        service.execute(proposal.id, actor=AGENT)


def mitigate(
    lab: Lab, kube: KubeClient, service: ProposalService, scenario: str, namespace: str
) -> Outcome:
    outcome = Outcome(oracle={})
    tried: list[str] = []
    for _ in range(MAX_ATTEMPTS):
        plan = plan_offline(take(kube, namespace), tried=tried)
        outcome.plans.append(plan)
        if not plan.candidates:
            break
        candidate = plan.candidates[0]
        tried.append(candidate.key())
        before = health.score(health.collect(kube, namespace))
        undo_ids = apply(service, candidate, namespace)
        lab.settle()
        outcome.oracle = lab.control.get(f"/lab/v1/scenarios/{scenario}/check")
        if outcome.oracle["passed"]:
            outcome.attempts.append(Attempt(candidate, "healthy", False))
            return outcome
        after = health.score(health.collect(kube, namespace))
        verdict = health.verdict(before, after)
        # As the workflow judges it (issue 22): a worse score whose new failures all come from
        # callees the attempt did not write is a fault it revealed, and the fix is kept.
        written = written_names(kube, namespace, [(s.kind, s.name) for s in candidate.steps])
        revealed = attribute(before, after, written=written).revealed_only
        regressed = verdict == "worse" and not revealed
        if regressed:
            undo(service, undo_ids)
            lab.settle()
        outcome.attempts.append(Attempt(candidate, verdict, regressed))
    outcome.oracle = lab.control.get(f"/lab/v1/scenarios/{scenario}/check")
    return outcome
