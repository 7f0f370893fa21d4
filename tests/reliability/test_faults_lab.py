"""Issue 19 §5, faults: incidents (100 for the figure, 40 in the suite) through the real
workflow while the API server answers 500s, times out and answers 409s at random — afterwards
every applied write has its undo entry, nothing ran twice, nothing is left pending, and the
audit chain verifies.

The product (``IncidentWorkflow`` over ``ProposalService`` and ``Executor``, the offline
planner) talks to an in-process lab over HTTP through the fault proxy; the lab's scenarios
break a namespace again before each incident. A share of the requests, reads and writes, fail
at random (``faults_chaos``; the seed is printed, ``STRATUS_FAULTS_SEED`` replays it). Half the
incidents run under a policy that allows every write, half under one that asks, and the test
approves through the service as a person would. An incident a fault stopped is carried on as
the bot or ``stratus incidents resume`` would (advance again), and cancelled when it cannot
end. Then the faults stop, recovery runs, and the records are checked against the lab's own
audit log.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.planner.offline import OfflinePlanner
from incidents.model import Incident
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.client import LabClient
from lab.runner import LabServer
from policies.model import Rule
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.db import Store
from store.errors import StratusError
from tests.faultproxy import FaultProxy
from tests.proposals.conftest import PolicyBox
from tests.reliability.faults_chaos import Chaos, Rates, seed_from_env
from tests.reliability.faults_invariants import problems
from tools.executor import Executor
from tools.k8s import KubeClient

# The documented figure is for 100 (STRATUS_FAULTS_INCIDENTS=100). An incident costs about
# 1.1 s of CPU here — some 130 reads of the product's own looks (a snapshot, the health score
# with every pod's log lines, the verification), each through the proxy and the in-process lab
# — so 100 cannot fit the suite's budget on 2 cores (about 2 minutes of CPU alone). The suite
# runs 20: every scenario two or three times, under both policies, with some 90 faults of every
# kind, checked by the same invariants (40 took 70-84 s, too much of a 15-minute run).
INCIDENTS = int(os.environ.get("STRATUS_FAULTS_INCIDENTS", "20"))
TIMEOUT = 0.5  # the client's read timeout (STRATUS_KUBE_TIMEOUT's floor): a held request
ROUNDS = 12  # advances of one incident before it is cancelled
# The verification's bound, in seconds of wall time; each look lets POLL_INTERVAL seconds pass
# on the lab's instant clock (more than the health score's 1 s log window, as `stratus eval`).
SETTLE_TIMEOUT, POLL_INTERVAL = 10.0, 2.0
REQUESTER, APPROVER = "cli:alice", "cli:bob"
ALLOW = Rule(name="allow-everything", decision="allow", allow_irreversible=True)
ASK = Rule(name="ask-everything", decision="ask")
# Cheap to run and between them every kind of write the offline planner makes here: scale a
# Deployment and a StatefulSet, patch a Service's port and selector, restore a ConfigMap key
# and restart its readers, set an image.
SCENARIOS = (
    ("hotel-recommendation-scaled-to-zero", "hotel"),
    ("shop-catalog-target-port", "shop"),
    ("hotel-geo-target-port", "hotel"),
    ("s1-shop-statefulset-scaled-to-zero", "shop"),
    ("hotel-profile-image-not-found", "hotel"),
    ("shop-payment-bad-config", "shop"),
    ("shop-catalog-selector", "shop"),
)


@pytest.fixture
def lab_server() -> Iterator[LabServer]:
    """A lab of its own: its audit log holds this test's writes and nothing else."""
    server = LabServer(apps=["hotel", "shop"]).start()
    yield server
    server.stop()


class Run:
    """The product wired as ``stratus serve`` wires it, against the proxied lab."""

    def __init__(self, control: LabClient, proxy: FaultProxy, db: Path) -> None:
        self.kube = KubeClient(kubeconfig=str(proxy.kubeconfig))
        self.store = Store(db)
        self.policy = PolicyBox()
        self.service = ProposalService(
            store=self.store, executor=Executor(self.kube, self.store), policy=self.policy
        )
        self.flow = IncidentWorkflow(
            service=self.service,
            kube=self.kube,
            offline=OfflinePlanner(),
            config=WorkflowConfig(
                settle_timeout=SETTLE_TIMEOUT,
                poll_interval=POLL_INTERVAL,
                unfold_timeout=0,
                reopen_seconds=0,
                # A cancel waits for another process's write to finish; here no other process
                # runs, so a write in flight is one whose answer was lost, and only recovery
                # (``recover``) settles it.
                cancel_wait=0.0,
            ),
            # The lab's instant clock: letting time pass is settling it (as `stratus eval`).
            pause=lambda seconds: control.post("/lab/v1/settle", {"horizon": seconds}),
        )
        self.errors: Counter[str] = Counter()
        self.crashes: list[str] = []
        self.endings: Counter[str] = Counter()
        self.took: list[tuple[float, int]] = []  # (seconds, incident number)

    def close(self) -> None:
        self.kube.close()
        self.store.close()

    def _guarded(self, what: str, work: object) -> object:
        try:
            return work()  # type: ignore[operator]
        except StratusError as error:
            self.errors[error.code] += 1
        except Exception as error:  # anything else escaping the product is a crash
            self.crashes.append(f"{what}: {type(error).__name__}: {error}")
        return None

    def approve_waiting(self, incident_id: str) -> None:
        for proposal in self.service.by_incident(incident_id):
            if proposal.state == ProposalState.AWAITING_APPROVAL:
                self._guarded(
                    f"approving {proposal.id}",
                    lambda p=proposal.id: self.service.answer(p, user=APPROVER, choice="approve"),
                )

    def recover(self) -> None:
        """What the bot's recovery (``bot.recovery.Reconciler``) does every few seconds:
        settle the writes whose answers were lost. Their grace period is waited out first — in
        the bot that wait is the reconcile interval; here nothing else would happen meanwhile."""
        executor = self.service.executor
        pending = executor.executions.pending()
        if pending:
            last = max(executor.settles_by(execution) for execution in pending)
            left = (last - executor.store.clock.now()).total_seconds()
            time.sleep(min(max(left, 0.0), executor.settle_after) + 0.05)
        self._guarded("recovery", self.service.reconcile)

    def incident(self, number: int, namespace: str) -> None:
        started = time.monotonic()
        try:
            self._incident(namespace)
        finally:
            self.took.append((time.monotonic() - started, number))

    def _incident(self, namespace: str) -> None:
        """One incident to its end, carried on after each fault as a surface would."""
        opened: Incident | None = None
        for _ in range(ROUNDS):
            if opened is None:
                started = self._guarded(
                    "start", lambda: self.flow.start(namespace, requester=REQUESTER)
                )
                if started is None:
                    continue
                opened = started[0]  # type: ignore[index]
            self.approve_waiting(opened.id)
            moved = self._guarded(f"advance {opened.id}", lambda i=opened.id: self.flow.advance(i))
            if isinstance(moved, Incident) and not moved.is_open:
                self.endings[moved.state.value] += 1
                return
            self.recover()  # a fault stopped it, or it waits on a write whose answer was lost
        if opened is None:
            self.endings["never opened"] += 1
            return
        self.endings["cancelled (still open after the faults)"] += 1
        self.finish(opened.id)

    def finish(self, incident_id: str) -> None:
        """End an incident left open, once the API server is reliable again."""
        for _ in range(ROUNDS):
            incident = self.flow.incidents.get(incident_id)
            if not incident.is_open:
                return
            self.recover()
            self.approve_waiting(incident_id)
            self._guarded(
                f"cancel {incident_id}",
                lambda: self.flow.cancel(incident_id, actor=REQUESTER, reason="faults"),
            )


@pytest.mark.timeout(900)
# The first runs found the lab had carried out 5 writes of 111 more than the store accounted
# for. Each was a write whose answer was lost and which landed; this driver then ran no
# recovery until the next write to the object, 7 incidents later, after that incident's fault
# had changed the object back; recovery found it moved on without the write and recorded it
# "not applied" (``faults_invariants`` allows for that, ``test_faults_overtaken`` shows it).
# Recovery now runs as the bot's does (``recover``) and the count has come out exact since.
def test_incidents_under_random_500s_timeouts_and_409s_leave_every_write_undoable(
    lab_server: LabServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed = seed_from_env()
    print(f"\nfaults seed: {seed} (STRATUS_FAULTS_SEED={seed} replays it)")
    monkeypatch.setenv("STRATUS_KUBE_TIMEOUT", str(TIMEOUT))
    control = LabClient(lab_server.url)
    proxy = FaultProxy(lab_server.url, tmp_path / "proxied-kubeconfig")
    db = tmp_path / "stratus.db"
    run = Run(control, proxy, db)
    started, cpu = time.monotonic(), time.process_time()
    try:
        chaos = Chaos(proxy, seed=seed, timeout=TIMEOUT, rates=Rates())
        for number in range(INCIDENTS):
            scenario, namespace = SCENARIOS[number % len(SCENARIOS)]
            run.policy.set(ALLOW if number % 2 else ASK)
            control.post(f"/lab/v1/scenarios/{scenario}/inject")  # straight to the lab
            run.incident(number, namespace)
        fired = chaos.counts()
        chaos.stop()
        # Recovery, with the API server reliable again: settle what the faults left unknown
        # (after the grace period of two read timeouts), then end what is still open.
        time.sleep(2 * TIMEOUT + 0.2)
        recovered = run.service.reconcile()
        for incident in run.flow.incidents.recent(limit=1000, open_only=True):
            run.finish(incident.id)
        recovered += run.service.reconcile()
        elapsed, cpu = time.monotonic() - started, time.process_time() - cpu
    finally:
        run.close()
        proxy.close()
    found, figures = problems(db, control)
    # CPU seconds of the whole process (product, proxy and lab threads): what the run costs
    # whatever else the machine is doing; the wall time adds the timeouts and grace periods.
    print(f"faults: {INCIDENTS} incidents in {elapsed:.1f} s, {cpu:.1f} s of CPU (seed {seed})")
    print(f"faults: requests through the proxy: {len(proxy.seen())}")
    print(f"faults: injected by kind: {dict(sorted(fired.items()))} (total {sum(fired.values())})")
    print(f"faults: incidents ended: {dict(sorted(run.endings.items()))}")
    print(f"faults: errors the product raised: {dict(sorted(run.errors.items()))}")
    for name, value in figures.items():
        print(f"faults: {name}: {value}")
    print(f"faults: interrupted writes recovered: {len(recovered)}")
    slowest = ", ".join(f"#{n} {s:.1f} s" for s, n in sorted(run.took, reverse=True)[:5])
    print(f"faults: slowest incidents: {slowest}")
    print(f"faults: duplicates found: {sum('the lab carried out' in p for p in found)}")
    assert not run.crashes, "\n".join(run.crashes)
    twice = [p for p in found if "the lab carried out" in p]
    rest = [p for p in found if p not in twice and not p.startswith(("  ", "story of "))]
    assert not rest, f"seed {seed}:\n" + "\n".join(rest)
    assert not twice, f"seed {seed}: writes the store does not account for:\n" + "\n".join(found)
    assert sum(fired.values()) > 0 and figures["writes applied"] > 0
