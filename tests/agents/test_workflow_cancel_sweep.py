"""Nothing of a cancelled incident stays open, whoever asked for it, and nothing of it runs
after the cancel (issue 16, items 17 and 23, the gaps left after the first fix):

- an undo a person asked for from the incident's card (requester: that person) is withdrawn by
  the cancel's sweep, and its event and audit row say why and who cancelled;
- ``stratus proposals approve`` (an answer, then an execution, outside the workflow) racing a
  cancel either executes before the cancel is stored — and the cancelled incident's record
  shows the write, which stays: a one-step attempt that executed is complete, not half done —
  or is refused; a cancel never ends an incident while one of its writes is in flight.

Against the lab over HTTP with the real proposal service; the races run in threads and in a
real ``stratus`` process, and the in-flight write is held by a proxy in front of the API.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from agents.model import Candidate
from incidents.model import IncidentState
from incidents.repository import IncidentEventType
from incidents.workflow import IncidentWorkflow
from policies.model import Defaults, Match, Rule
from policies.reload import LivePolicy
from proposals.errors import AnswerRefused, NotExecutable
from proposals.model import ProposalState
from proposals.service import ProposalService, UndoRequest
from store.audit import AuditLog
from store.db import Store
from tests.agents.test_workflow import ScriptedPlanner, replicas, scale, workflow
from tests.agents.test_workflow_races import nothing_left_open, race
from tests.conftest import Lab, stratus
from tests.faultproxy import fault_proxy
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef

St = IncidentState
P = ProposalState
REC_PATH = r"/apis/apps/v1/namespaces/hotel/deployments/recommendation(/scale)?$"
FIX_REC = Candidate(steps=[scale("recommendation", 1)], intent="scale recommendation to 1")
FIX_GEO = Candidate(steps=[scale("geo", 1)], intent="scale geo to 1")
APPROVERS = Defaults(approvers=["U0BOB"])  # not "*": the sweep is no approver


def scale_to_zero(lab: Lab, kube: KubeClient, name: str) -> None:
    deployment = kube.get(ObjectRef("Deployment", name, "hotel"))
    deployment["spec"]["replicas"] = 0
    kube.replace(deployment)
    lab.settle()


def test_a_cancel_withdraws_an_undo_a_person_asked_for_and_says_why_and_who(
    broken: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox, wstore: Store
) -> None:
    # Attempt 1 (recommendation) is allowed and helps; attempt 2 (geo) waits for a human.
    policy.set(
        Rule(
            name="allow-rec",
            decision="allow",
            match=Match(actions=["scale"], names=["recommendation"]),
        ),
        Rule(name="ask-geo", decision="ask", match=Match(names=["geo"])),
        Rule(name="ask-undo", decision="ask", match=Match(actions=["undo"])),
        defaults=APPROVERS,
    )
    scale_to_zero(broken, kube, "geo")
    flow = workflow(service, kube, ScriptedPlanner(FIX_REC, FIX_GEO))
    incident, _ = flow.start("hotel", requester="cli:alice")
    iid = incident.id
    waiting = flow.advance(iid)
    assert waiting.state == St.AWAITING_APPROVAL, (waiting.state, waiting.reason)
    assert [a.verdict for a in waiting.attempts] == ["better", None], waiting.attempts
    kept = service.get(waiting.attempts[0].proposals[0])
    assert kept.state == P.EXECUTED and kept.undo_id
    # Carol presses Undo on attempt 1's card: her proposal, on the incident.
    carols = service.propose_undo(
        UndoRequest(entry_id=kept.undo_id, incident_id=iid), requester="U0CAROL"
    )
    assert carols.state == P.AWAITING_APPROVAL and carols.incident_id == iid

    cancelled = flow.cancel(iid, actor="cli:alice", reason="handled by hand")

    assert cancelled.state == St.CANCELLED
    nothing_left_open(flow, service, wstore, iid)
    withdrawn = service.get(carols.id)
    assert withdrawn.state == P.CANCELLED
    assert iid in withdrawn.reason and "cli:alice" in withdrawn.reason
    last = service.events.since(0, proposal_id=carols.id)[-1].event
    assert last.state == "cancelled" and iid in last.message and "cli:alice" in last.message
    audited = [
        r
        for r in AuditLog(wstore).records(limit=500)
        if r.payload.get("proposal") == carols.id and r.payload.get("to") == "cancelled"
    ]
    assert len(audited) == 1 and "cancelled by cli:alice" in str(audited[0].payload["message"])
    with pytest.raises(AnswerRefused, match="already cancelled"):
        service.answer(carols.id, user="U0BOB", choice="approve")
    assert replicas(kube, "recommendation") == 1  # the kept attempt stays, as a cancel keeps it
    # Undoing it stays possible: a fresh request after the cancel is a request of its own.
    again = service.propose_undo(UndoRequest(entry_id=kept.undo_id), requester="U0CAROL")
    assert again.id != carols.id and again.state == P.AWAITING_APPROVAL


def test_the_sweep_withdraws_only_proposals_of_the_incident(
    service: ProposalService, broken: Lab, policy: PolicyBox
) -> None:
    policy.set(Rule(name="ask", decision="ask"), defaults=APPROVERS)
    alone = service.propose(
        action="scale",
        kind="Deployment",
        name="geo",
        namespace="hotel",
        params={"replicas": 2},
        requester="U0CAROL",
    )
    with pytest.raises(AnswerRefused, match="belongs to no incident"):
        service.withdraw(alone.id, incident_id="inc-other", actor="cli:alice", reason="x")
    assert service.get(alone.id).state == P.AWAITING_APPROVAL


def _one_step_waiting(
    service: ProposalService, kube: KubeClient, policy: PolicyBox
) -> tuple[IncidentWorkflow, str, str]:
    policy.set(
        Rule(name="ask-scale", decision="ask", match=Match(actions=["scale"])),
        Rule(name="allow-undo", decision="allow", match=Match(actions=["undo"])),
        defaults=APPROVERS,
    )
    flow = workflow(service, kube, ScriptedPlanner(FIX_REC))
    incident, _ = flow.start("hotel", requester="cli:alice")
    waiting = flow.advance(incident.id)
    assert waiting.state == St.AWAITING_APPROVAL
    return flow, incident.id, waiting.attempts[0].proposals[0]


def executed_before_cancelled(
    flow: IncidentWorkflow, service: ProposalService, kube: KubeClient, iid: str
) -> None:
    """The record of a cancelled incident shows every write of it, and each landed before the
    incident was stored as cancelled. The attempt had one step: executed, it was complete —
    not half done — so its fix stays (issue 16 follow-up, L5); else nothing was written."""
    ended = [
        e.seq
        for e in flow.incidents.events(incident_id=iid)
        if e.event.type == IncidentEventType.STATE_CHANGED and e.event.state == "cancelled"
    ]
    assert len(ended) == 1
    incident = flow.incidents.get(iid)
    step = incident.attempts[0].proposals[0]
    executed = [
        e.seq for e in service.events.since(0, proposal_id=step) if e.event.state == "executed"
    ]
    assert incident.attempts[0].undo_proposals == []
    if not executed:
        assert service.get(step).state == P.CANCELLED
        assert replicas(kube, "recommendation") == 0
        return
    assert executed[0] < ended[0]
    assert service.get(step).state == P.EXECUTED
    assert "stay" in (incident.attempts[0].outcome or "")
    assert replicas(kube, "recommendation") == 1


def test_an_approve_racing_a_cancel_executes_before_it_or_is_refused(
    broken: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox, wstore: Store
) -> None:
    for _ in range(6):
        flow, iid, step = _one_step_waiting(service, kube, policy)

        def approve_and_execute(pid: str = step) -> None:  # what `proposals approve` does
            try:
                service.answer(pid, user="U0BOB", choice="approve")
                service.execute(pid, actor="U0BOB")
            except (AnswerRefused, NotExecutable):
                return  # the cancel came first: refused, with the reason

        race(approve_and_execute, lambda iid=iid, f=flow: f.cancel(iid, actor="cli:alice"))
        nothing_left_open(flow, service, wstore, iid)
        executed_before_cancelled(flow, service, kube, iid)
        scale_to_zero(broken, kube, "recommendation")  # broken again for the next round


def test_a_cancel_waits_for_a_write_in_flight_and_keeps_it(
    broken: Lab, wstore: Store, policy: PolicyBox, tmp_path: Path
) -> None:
    """Deterministic: the approved write's PUT is held 2 s by a proxy, and the cancel lands
    meanwhile. It used to store the incident as cancelled with the write still in flight;
    the write then landed on a cancelled incident. Now the cancel waits for it; the attempt is
    then complete, and its fix stays."""
    with fault_proxy(broken.url, tmp_path / "proxied") as proxy:
        slow = KubeClient(kubeconfig=str(proxy.kubeconfig))
        slow_service = ProposalService(
            store=wstore, executor=Executor(slow, wstore, lock_wait=0.5), policy=policy
        )
        direct = KubeClient(kubeconfig=str(broken.kubeconfig))
        service = ProposalService(
            store=wstore, executor=Executor(direct, wstore, lock_wait=0.5), policy=policy
        )
        flow, iid, step = _one_step_waiting(service, direct, policy)
        proxy.delay("PUT", REC_PATH, 2.0, times=1)
        slow_service.answer(step, user="U0BOB", choice="approve")
        writing = threading.Thread(target=lambda: slow_service.execute(step, actor="U0BOB"))
        writing.start()
        deadline = time.monotonic() + 10
        while not proxy.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        assert service.get(step).state == P.EXECUTING
        cancelled = flow.cancel(iid, actor="cli:alice")
        writing.join(30)
        assert proxy.seen("PUT", REC_PATH, outcome="delayed")
        assert cancelled.state == St.CANCELLED, (cancelled.state, cancelled.cancel_requested)
        nothing_left_open(flow, service, wstore, iid)
        executed_before_cancelled(flow, service, direct, iid)
        slow.close()
        direct.close()


def test_a_write_still_in_flight_after_the_wait_keeps_the_cancel_requested(
    broken: Lab, wstore: Store, policy: PolicyBox, tmp_path: Path
) -> None:
    """The write outlasts the cancel's wait: the incident is not stored as cancelled (it says
    why), and the next advance carries the cancel out once the write has landed."""
    with fault_proxy(broken.url, tmp_path / "proxied") as proxy:
        slow = KubeClient(kubeconfig=str(proxy.kubeconfig))
        slow_service = ProposalService(
            store=wstore, executor=Executor(slow, wstore, lock_wait=0.5), policy=policy
        )
        direct = KubeClient(kubeconfig=str(broken.kubeconfig))
        service = ProposalService(
            store=wstore, executor=Executor(direct, wstore, lock_wait=0.5), policy=policy
        )
        flow, iid, step = _one_step_waiting(service, direct, policy)
        flow.config.cancel_wait = 0.3
        proxy.delay("PUT", REC_PATH, 2.0, times=1)
        slow_service.answer(step, user="U0BOB", choice="approve")
        writing = threading.Thread(target=lambda: slow_service.execute(step, actor="U0BOB"))
        writing.start()
        deadline = time.monotonic() + 10
        while not proxy.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        waiting = flow.cancel(iid, actor="cli:alice")
        assert waiting.is_open and waiting.cancel_requested == "cli:alice"
        notes = [e.event.message for e in flow.incidents.events(incident_id=iid)]
        assert any(f"the cancel waits for {step}" in n for n in notes), notes
        writing.join(30)
        done = flow.advance(iid)
        assert done.state == St.CANCELLED
        nothing_left_open(flow, service, wstore, iid)
        executed_before_cancelled(flow, service, direct, iid)
        slow.close()
        direct.close()


def test_a_stratus_process_approving_while_the_incident_is_cancelled(
    broken: Lab, wstore: Store, policy: PolicyBox, tmp_path: Path
) -> None:
    """``stratus proposals approve`` in a process of its own, its PUT held by a proxy while
    the cancel runs here: the write lands before the incident is stored as cancelled, and it
    stays (the one-step attempt was complete); a second approve afterwards is refused."""
    policy_dir = tmp_path / "policies"
    policy_dir.mkdir()
    (policy_dir / "policy.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: t}\n"
        "defaults: {approvers: ['*']}\n"
        "rules:\n"
        "  - {name: ask-scale, decision: ask, match: {actions: [scale]}}\n"
        "  - {name: allow-undo, decision: allow, match: {actions: [undo]}}\n"
    )
    with fault_proxy(broken.url, tmp_path / "proxied") as proxy:
        direct = KubeClient(kubeconfig=str(broken.kubeconfig))
        source = LivePolicy(policy_dir)
        service = ProposalService(
            store=wstore, executor=Executor(direct, wstore, lock_wait=0.5), policy=source
        )
        flow = workflow(service, direct, ScriptedPlanner(FIX_REC))
        incident, _ = flow.start("hotel", requester="cli:alice")
        iid = incident.id
        step = flow.advance(iid).attempts[0].proposals[0]
        proxy.delay("PUT", REC_PATH, 3.0, times=1)
        env = {
            **os.environ,
            "STRATUS_DB": str(wstore.path),
            "KUBECONFIG": str(proxy.kubeconfig),
            "STRATUS_POLICY_DIR": str(policy_dir),
        }
        done: list[object] = []
        approving = threading.Thread(
            target=lambda: done.append(stratus("proposals", "approve", step, env=env))
        )
        approving.start()
        deadline = time.monotonic() + 60
        while not proxy.in_flight and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proxy.in_flight, "the approve never reached the API"
        cancelled = flow.cancel(iid, actor="cli:alice")
        approving.join(90)
        (result,) = done
        assert result.returncode == 0, (result.stdout, result.stderr)  # type: ignore[attr-defined]
        assert cancelled.state == St.CANCELLED
        nothing_left_open(flow, service, wstore, iid)
        executed_before_cancelled(flow, service, direct, iid)
        late = stratus(
            "proposals", "approve", step, env={**env, "KUBECONFIG": str(broken.kubeconfig)}
        )
        assert late.returncode != 0 and "applied" not in late.stdout
        direct.close()


def _moves(flow: IncidentWorkflow, iid: str) -> list[str]:
    return [
        f"{e.event.previous_state} -> {e.event.state}: {e.event.message}"
        for e in flow.incidents.events(incident_id=iid)
        if e.event.type == IncidentEventType.STATE_CHANGED
    ]


def test_a_refused_undo_of_a_half_done_attempt_is_asked_once_and_recorded_once(
    broken: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    """Two steps: the first executed, the second waiting. The cancel undoes the first (the
    policy asks a human), who rejects that undo: it is never asked again, and no move is
    recorded twice (the second look used to go to ``undoing`` again, "cancelled half-way")."""
    policy.set(
        Rule(name="allow-rec", decision="allow", match=Match(names=["recommendation"])),
        Rule(name="ask-geo", decision="ask", match=Match(names=["geo"])),
        Rule(name="ask-undo", decision="ask", match=Match(actions=["undo"])),
    )
    both = Candidate(steps=[scale("recommendation", 2), scale("geo", 2)], intent="scale both")
    flow = workflow(service, kube, ScriptedPlanner(both))
    incident, _ = flow.start("hotel", requester="cli:alice")
    flow.advance(incident.id)
    waiting = flow.cancel(incident.id, actor="cli:alice")
    assert waiting.state == St.AWAITING_APPROVAL
    (undo,) = waiting.attempts[0].undo_proposals
    service.answer(undo, user="U0BOB", choice="reject", reason="keep it")
    done = flow.advance(incident.id)
    again = flow.cancel(incident.id, actor="cli:alice")
    assert not done.is_open and again.state == done.state, (done.state, again.state)
    assert done.attempts[0].undo_proposals == [undo]  # asked once
    moves = _moves(flow, incident.id)
    assert [m for m, n in Counter(moves).items() if n > 1] == [], moves
    assert sum("-> undoing" in m for m in moves) == 1, moves
    assert replicas(kube, "recommendation") == 2  # the refused undo left it as it was


def test_a_cancel_after_every_step_of_a_two_step_attempt_executed_keeps_both(
    broken: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    """Complete is complete however many steps: both executed (the second approved outside
    the workflow), the cancel keeps them and ends the incident cancelled."""
    policy.set(
        Rule(name="allow-rec", decision="allow", match=Match(names=["recommendation"])),
        Rule(name="ask-geo", decision="ask", match=Match(names=["geo"])),
        Rule(name="allow-undo", decision="allow", match=Match(actions=["undo"])),
    )
    both = Candidate(steps=[scale("recommendation", 2), scale("geo", 2)], intent="scale both")
    flow = workflow(service, kube, ScriptedPlanner(both))
    incident, _ = flow.start("hotel", requester="cli:alice")
    second = flow.advance(incident.id).attempts[0].proposals[1]
    service.answer(second, user="U0BOB", choice="approve")
    service.execute(second, actor="U0BOB")
    cancelled = flow.cancel(incident.id, actor="cli:alice")
    assert cancelled.state == St.CANCELLED
    assert cancelled.attempts[0].undo_proposals == []
    assert cancelled.attempts[0].finished_at is not None
    assert "stay" in (cancelled.attempts[0].outcome or ""), cancelled.attempts[0].outcome
    assert replicas(kube, "recommendation") == 2 and replicas(kube, "geo") == 2
    moves = _moves(flow, incident.id)
    assert [m for m, n in Counter(moves).items() if n > 1] == [], moves
