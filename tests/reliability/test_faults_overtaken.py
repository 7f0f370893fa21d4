"""Issue 19 §5, faults: a write whose answer was lost and that someone else overwrote before
recovery looked. The lab carried it out; by the time recovery reads the object, the object has
moved past the resourceVersion the write was planned on and none of the fields the write
changed shows it. Recovery cannot tell "it never landed and someone else changed the object"
from "it landed and someone changed it back" — the object keeps no history — and records it
*not applied*: no undo entry, since nothing of the write is left to undo.

This is the one way the lab's audit log can hold a write of an execution the store records as
not applied, and ``faults_invariants`` counts such executions as "may have landed" (the 100
incidents of ``test_faults_lab`` met it when recovery ran only at the next write to an object,
after the next incident had broken it again). What must still hold: the write reached the lab
exactly once, the record is settled with its reason, nothing is pending, the chain verifies.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.client import LabClient
from lab.runner import LabServer
from policies.model import Rule
from proposals.service import ProposalService
from store.db import Store
from tests.faultproxy import fault_proxy
from tests.proposals.conftest import PolicyBox
from tests.proposals.test_crashes import rows
from tests.reliability.faults_invariants import lab_writes, problems
from tools import errors
from tools.executor import Executor
from tools.k8s import KubeClient

SCENARIO = "hotel-recommendation-scaled-to-zero"
TARGET = ("deployments", "hotel", "recommendation")
ALLOW = Rule(name="allow-everything", decision="allow", allow_irreversible=True)


@pytest.fixture
def lab_server() -> Iterator[LabServer]:
    server = LabServer(apps=["hotel"]).start()
    yield server
    server.stop()


def test_a_lost_write_overwritten_before_recovery_looked_is_recorded_not_applied_once(
    lab_server: LabServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STRATUS_KUBE_TIMEOUT", "0.5")
    control = LabClient(lab_server.url)
    control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    db = tmp_path / "stratus.db"
    with fault_proxy(lab_server.url, tmp_path / "proxied-kubeconfig") as proxy:
        kube = KubeClient(kubeconfig=str(proxy.kubeconfig))
        store = Store(db)
        policy = PolicyBox()
        policy.set(ALLOW)
        executor = Executor(kube, store)
        service = ProposalService(store=store, executor=executor, policy=policy)
        try:
            proposal = service.propose(
                action="scale",
                kind="Deployment",
                name="recommendation",
                namespace="hotel",
                params={"replicas": 1},
                requester="cli:alice",
            )
            # The PUT lands and its answer is a 500; the read that would confirm it fails too.
            landed = proxy.fail(
                "PUT",
                r"/deployments/recommendation$",
                status=500,
                forward=True,
                dry_run=False,
                times=1,
            )
            proxy.fail("GET", r"/deployments/recommendation$", status=500, after=landed, times=1)
            with pytest.raises(errors.OutcomeUnknown):
                service.execute(proposal.id, actor="cli:alice")
            assert lab_writes(control)[TARGET] == 1  # it landed
            # Someone scales it back to zero (the lab's own fault, not through the API server)
            # before recovery looks, after the grace period.
            control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
            time.sleep(executor.settle_after + 0.1)
            service.reconcile()
        finally:
            kube.close()
            store.close()
    (execution,) = rows(db, "SELECT state, error FROM executions")
    assert execution["state"] == "aborted"
    assert "moved on" in execution["error"], execution["error"]
    found, figures = problems(db, control)
    assert not found, "\n".join(found)
    assert lab_writes(control)[TARGET] == 1  # once: recovery wrote no fence, nothing again
    assert figures["writes applied"] == figures["undo entries"] == 0
    assert figures["writes that may have landed, overwritten before recovery"] == 1
