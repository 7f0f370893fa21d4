"""An answer racing a cancel (issue 16, item 23): whatever the interleaving, nothing of a
cancelled incident stays open — no proposal waiting or approved, no lease — and the cancel is
carried out without anyone advancing the incident again.

Threads race for real against the lab over HTTP and the real proposal service; the
interleavings differ from run to run, so each test tries several times.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from agents.model import Candidate
from incidents.model import IncidentState
from incidents.workflow import IncidentWorkflow
from policies.model import Match, Rule
from proposals.errors import AnswerRefused
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.db import Store
from store.locks import LeaseLocks
from tests.agents.test_workflow import ScriptedPlanner, replicas, scale, workflow
from tests.conftest import Lab
from tests.faultproxy import fault_proxy
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient

St = IncidentState
P = ProposalState
OPEN = (P.AWAITING_APPROVAL, P.APPROVED, P.EXECUTING)
GEO_PATH = r"/apis/apps/v1/namespaces/hotel/deployments/geo$"
TWO_STEPS = Candidate(
    steps=[scale("recommendation", 2), scale("geo", 2)], intent="scale recommendation and geo"
)


def race(*works: Callable[[], object]) -> None:
    failures: list[BaseException] = []
    start = threading.Barrier(len(works))

    def run(work: Callable[[], object]) -> None:
        try:
            start.wait(10)
            work()
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=run, args=(w,)) for w in works]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures


def nothing_left_open(
    flow: IncidentWorkflow, service: ProposalService, wstore: Store, iid: str
) -> None:
    incident = flow.incidents.get(iid)
    assert incident.state == St.CANCELLED, (incident.state, incident.cancel_requested)
    left = [(p.id, p.state) for p in service.by_incident(iid) if p.state in OPEN]
    assert not left, left
    assert LeaseLocks(wstore).holder_of(f"incident:{iid}") is None


def test_approve_racing_cancel_leaves_no_proposal_waiting_on_the_cancelled_incident(
    broken: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox, wstore: Store
) -> None:
    policy.set(
        Rule(name="ask-scale", decision="ask", match=Match(actions=["scale"])),
        Rule(name="allow-undo", decision="allow", match=Match(actions=["undo"])),
    )
    flow = workflow(service, kube, ScriptedPlanner(TWO_STEPS))
    for _ in range(8):
        incident, joined = flow.start("hotel", requester="cli:alice")
        assert not joined
        iid = incident.id
        waiting = flow.advance(iid)
        assert waiting.state == St.AWAITING_APPROVAL
        first = waiting.attempts[0].proposals[0]

        def approve(pid: str = first, iid: str = iid) -> None:
            try:
                service.answer(pid, user="U0BOB", choice="approve")
            except AnswerRefused:
                return  # the cancel came first: the answer is refused, with the reason
            flow.advance(iid)

        race(approve, lambda iid=iid: flow.cancel(iid, actor="cli:alice", reason="by hand"))
        nothing_left_open(flow, service, wstore, iid)
    assert replicas(kube, "recommendation") == 0 and replicas(kube, "geo") == 1


def test_a_cancel_landing_while_the_next_step_is_proposed_withdraws_that_proposal(
    broken: Lab, wstore: Store, policy: PolicyBox, tmp_path: Path
) -> None:
    """Deterministic: the read that plans step 2 is slowed by a proxy in front of the API, and
    the cancel lands during it. The approving thread's proposal of step 2 was then recorded
    nowhere and stayed waiting on the cancelled incident."""
    policy.set(
        Rule(name="ask-scale", decision="ask", match=Match(actions=["scale"])),
        Rule(name="allow-undo", decision="allow", match=Match(actions=["undo"])),
    )
    with fault_proxy(broken.url, tmp_path / "proxied") as proxy:
        kube = KubeClient(kubeconfig=str(proxy.kubeconfig))
        service = ProposalService(
            store=wstore, executor=Executor(kube, wstore, lock_wait=0.5), policy=policy
        )
        flow = workflow(service, kube, ScriptedPlanner(TWO_STEPS))
        incident, _ = flow.start("hotel", requester="cli:alice")
        iid = incident.id
        first = flow.advance(iid).attempts[0].proposals[0]
        proxy.delay("GET", GEO_PATH, 2.0, times=1)

        def approve() -> None:
            service.answer(first, user="U0BOB", choice="approve")
            flow.advance(iid)

        approving = threading.Thread(target=approve)
        approving.start()
        deadline = time.monotonic() + 10
        while not proxy.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # the step-2 read is held by the proxy now
        flow.cancel(iid, actor="cli:alice", reason="by hand")
        approving.join(30)
        assert proxy.seen("GET", GEO_PATH, outcome="delayed")
        nothing_left_open(flow, service, wstore, iid)
        assert len(service.by_incident(iid)) >= 3  # step 1, its undo, and the withdrawn step 2
        kube.close()


def test_a_cancel_while_another_process_holds_the_lease_is_carried_out_when_it_lets_go(
    broken: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox, wstore: Store
) -> None:
    """The cancel writes its flag without the lease and finds the lease taken by a process
    whose last move came before the flag: when that process lets go, nobody acted on it."""
    policy.set(Rule(name="ask-scale", decision="ask", match=Match(actions=["scale"])))
    flow = workflow(service, kube, ScriptedPlanner(TWO_STEPS))
    incident, _ = flow.start("hotel", requester="cli:alice")
    iid = incident.id
    first = flow.advance(iid).attempts[0].proposals[0]
    other = "workflow@elsewhere:4242/x"
    locks = LeaseLocks(wstore)
    assert locks.try_acquire(f"incident:{iid}", other, 60) is None
    threading.Timer(0.5, lambda: locks.release(f"incident:{iid}", other)).start()
    done = flow.cancel(iid, actor="cli:alice")
    assert done.state == St.CANCELLED
    assert service.get(first).state == P.CANCELLED
    nothing_left_open(flow, service, wstore, iid)
