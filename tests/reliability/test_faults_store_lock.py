"""Issue 19 §5, faults: the store locked by another process. A separate process holds SQLite's
exclusive lock on the database for a few seconds (``BEGIN EXCLUSIVE``, as a backup tool or a
stuck ``sqlite3`` shell would) while approvals and writes happen — one of them with its PUT
already on its way to the API server, so its record waits for the lock after the change
landed. They wait for the lock (SQLite's busy timeout) and carry on; nothing is lost: every
write has its record and undo entry, the lab carried out each exactly once, and the audit
chain verifies.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lab.client import LabClient
from lab.runner import LabServer
from policies.model import Rule
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.db import Store
from tests.faultproxy import fault_proxy
from tests.proposals.conftest import PolicyBox
from tests.reliability.faults_invariants import problems
from tools.executor import Executor
from tools.k8s import KubeClient

HOLD = 3.0  # seconds the other process keeps the database to itself
ASK = Rule(name="ask-everything", decision="ask")
# One write per deployment; the first is the one whose PUT is in flight when the lock is taken.
TARGETS = ("geo", "profile", "rate", "search", "user")
LOCKER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
print("released", flush=True)
"""


@pytest.fixture
def lab_server() -> Iterator[LabServer]:
    server = LabServer(apps=["hotel"]).start()
    yield server
    server.stop()


def timed(work: Callable[[], object], took: dict[str, float], name: str) -> threading.Thread:
    def run() -> None:
        started = time.monotonic()
        work()
        took[name] = time.monotonic() - started

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread


def test_writes_and_approvals_wait_for_a_store_locked_by_another_process_and_lose_nothing(
    lab_server: LabServer, tmp_path: Path
) -> None:
    db = tmp_path / "stratus.db"
    control = LabClient(lab_server.url)
    with fault_proxy(lab_server.url, tmp_path / "proxied-kubeconfig") as proxy:
        kube = KubeClient(kubeconfig=str(proxy.kubeconfig))
        store = Store(db)
        policy = PolicyBox()
        policy.set(ASK)
        service = ProposalService(store=store, executor=Executor(kube, store), policy=policy)
        asked = {
            name: service.propose(
                action="scale",
                kind="Deployment",
                name=name,
                namespace="hotel",
                params={"replicas": 2},
                requester="cli:alice",
            ).id
            for name in TARGETS
        }
        first, *others = TARGETS
        service.answer(asked[first], user="cli:bob", choice="approve")
        held = proxy.delay(
            "PUT", rf"/deployments/{first}$", 30, dry_run=False, times=1
        )  # until the lock is taken
        took: dict[str, float] = {}
        threads = [timed(lambda: service.execute(asked[first], actor="cli:bob"), took, first)]
        deadline = time.monotonic() + 30
        while held.hits == 0:
            assert time.monotonic() < deadline, "the first write never reached the API server"
            time.sleep(0.01)

        locker = subprocess.Popen(
            [sys.executable, "-c", LOCKER, str(db), str(HOLD)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
            locked_at = time.monotonic()
            proxy.open(held)  # the write lands while the database is locked
            for name in others:

                def approve_and_write(pid: str = asked[name]) -> None:
                    service.answer(pid, user="cli:bob", choice="approve")
                    service.execute(pid, actor="cli:bob")

                threads.append(timed(approve_and_write, took, name))
            for thread in threads:
                thread.join(60)
            assert locker.wait(30) == 0
        finally:
            if locker.poll() is None:
                locker.kill()
            locker.communicate()
        waited = time.monotonic() - locked_at
        states = {name: service.get(pid).state for name, pid in asked.items()}
        kube.close()
        store.close()
    found, figures = problems(db, control)
    print(
        f"\nfaults: store locked by another process for {HOLD:.0f} s: "
        f"{len(TARGETS)} approvals and writes made meanwhile (1 with its PUT in flight), "
        f"each waited {min(took.values()):.1f}-{max(took.values()):.1f} s, all finished "
        f"{waited:.1f} s after the lock was taken; lost: {len(found)}"
    )
    for name, value in figures.items():
        print(f"faults: store lock: {name}: {value}")
    assert states == dict.fromkeys(TARGETS, ProposalState.EXECUTED), states
    assert len(took) == len(TARGETS), took
    assert min(took.values()) >= HOLD - 0.5, took  # they waited for the lock, not around it
    assert not found, "\n".join(found)
    assert figures["writes applied"] == figures["undo entries"] == len(TARGETS)
