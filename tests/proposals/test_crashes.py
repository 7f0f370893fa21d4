"""SIGKILL a ``stratus`` process at every step of propose → approve → execute, and of undo
(``STRATUS_CRASHPOINT``); then a later command recovers, and the records keep their promises.

After recovery (``stratus undo --list`` runs it first) every applied write has its undo entry
and its audit row, no execution is left pending, no proposal is stuck in ``executing``, no lock
is held, ``stratus audit verify`` passes and the object in the cluster is what the records say.
A proposal stored by a process that died is approved from another process.

The steps run side by side — one deployment and one database each — so a whole round of
crashes costs a few process start-ups, not one per step.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cli.context import load_policy
from proposals.service import ProposalService
from store.db import Store
from tests.conftest import REPO, stratus
from tools.crashpoints import SERVICE_STEPS, STEPS
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef, normalized

# One deployment per step: the hotel app has eight, each at 1 replica.
DEPLOYMENTS = (
    "geo",
    "search",
    "profile",
    "rate",
    "recommendation",
    "user",
    "reservation",
    "frontend",
)
WRITE_STEPS = (*SERVICE_STEPS, *STEPS)  # in the order a write meets them
LANDED = ("written", "recorded")  # the write reached the cluster before the kill
STILL_OPEN = {"proposed": "awaiting_approval", "answered": "approved"}


# ---------------------------------------------------------------------- the records' promises
# (also used by test_faults and test_concurrency)


class KnownBug(AssertionError):
    """A property the product is known to break today. Tests mark exactly this failure
    ``xfail(strict=True, raises=KnownBug)``: any other failed check still fails the test, and
    the day the bug is fixed the strict xfail says so."""


def known_bug(holds: bool, message: str) -> None:
    if not holds:
        raise KnownBug(message)


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """Read-only rows from a stratus database (opened read-only: the test never writes it)."""
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        connection.row_factory = sqlite3.Row
        return [dict(r) for r in connection.execute(sql, params)]
    finally:
        connection.close()


def proposals(db: Path) -> dict[str, dict[str, Any]]:
    """Every stored proposal's body, by id."""
    return {r["id"]: json.loads(r["body"]) for r in rows(db, "SELECT id, body FROM proposals")}


def record_problems(db: Path) -> list[str]:
    """Every broken promise of the records, in words; empty when the store is consistent."""
    problems: list[str] = []
    executions = rows(db, "SELECT * FROM executions ORDER BY created_at")
    entries = {e["execution_id"]: e for e in rows(db, "SELECT * FROM undo_entries")}
    audit = rows(db, "SELECT event, payload FROM audit_log ORDER BY seq")
    audited: dict[str, list[str]] = {}
    for row in audit:
        execution = json.loads(row["payload"]).get("execution")
        if execution:
            audited.setdefault(execution, []).append(row["event"])
    stored = proposals(db)
    by_id = {e["id"]: e for e in executions}

    for e in executions:
        what = f"execution {e['id']} ({e['intent']}, {e['state']})"
        if e["state"] == "pending":
            problems.append(f"{what} is still pending")
        writes = [ev for ev in audited.get(e["id"], []) if ev in ("write", "undo")]
        if e["state"] == "applied":
            if len(writes) != 1:
                problems.append(f"{what} has {len(writes)} audit write rows, not 1")
            if e["inverse_of"] is None and e["id"] not in entries:
                problems.append(f"{what} has no undo entry")
            if e["inverse_of"] is not None:
                undone = entries.get(e["inverse_of"])
                if undone is None or undone["state"] != "undone":
                    problems.append(f"{what} restored an object but its entry is not undone")
            if e["proposal_id"]:
                owner = stored.get(e["proposal_id"], {})
                if owner.get("state") not in ("executed", "undone"):
                    problems.append(f"{what} belongs to a proposal in state {owner.get('state')}")
                if owner.get("execution_id") != e["id"]:
                    problems.append(
                        f"{what}: its proposal names execution {owner.get('execution_id')}"
                    )
        elif e["state"] in ("aborted", "failed"):
            if e["id"] in entries:
                problems.append(f"{what} was not applied but has an undo entry")
            if writes:
                problems.append(f"{what} was not applied but has an audit {writes[0]} row")

    for entry in entries.values():
        execution = by_id.get(entry["execution_id"])
        if execution is None or execution["state"] != "applied":
            problems.append(f"undo entry {entry['id']} belongs to a write that was not applied")
        if entry["state"] == "undone" and not any(
            e["inverse_of"] == entry["execution_id"] and e["state"] == "applied" for e in executions
        ):
            problems.append(f"undo entry {entry['id']} is undone but no undo was applied")

    for proposal_id, body in stored.items():
        state = body["state"]
        applied = [
            e for e in executions if e["proposal_id"] == proposal_id and e["state"] == "applied"
        ]
        if state == "executing":
            problems.append(f"proposal {proposal_id} is stuck in executing")
        if len(applied) > 1:
            problems.append(f"proposal {proposal_id} was applied {len(applied)} times")
        if state in ("executed", "undone") and not applied:
            problems.append(f"proposal {proposal_id} is {state} but no write of it was applied")
        if applied and state not in ("executed", "undone"):
            problems.append(f"proposal {proposal_id} was applied but is {state}")
    for lock in rows(db, "SELECT resource, holder FROM locks"):
        problems.append(f"lock on {lock['resource']} still held by {lock['holder']}")
    return problems


def cluster_problems(db: Path, kube: KubeClient) -> list[str]:
    """Each object Stratus wrote looks as its last applied write left it."""
    problems = []
    last: dict[tuple[str, str, str], dict[str, Any]] = {}
    for e in rows(db, "SELECT * FROM executions WHERE state = 'applied' ORDER BY created_at"):
        last[(e["kind"], e["name"], e["namespace"])] = e
    for (kind, name, namespace), e in last.items():
        current = kube.get(ObjectRef(kind, name, namespace))
        wanted = json.loads(e["planned_after"])
        now_spec = (normalized(current) or {}).get("spec")
        if now_spec != (normalized(wanted) or {}).get("spec"):
            problems.append(
                f"{kind}/{namespace}/{name} does not look as {e['id']} ({e['intent']}) left it"
            )
    return problems


class Processes:
    """``stratus`` processes a test starts and does not wait for at once. ``close`` kills
    (by pid) and reaps whatever is still running, so a failed test leaves nothing behind."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[str]] = []

    def start(self, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
        )
        self.started.append(process)
        return process

    def close(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
            process.communicate()


def replicas(kube: KubeClient, name: str) -> int:
    return int(kube.get(ObjectRef("Deployment", name, "hotel"))["spec"]["replicas"])


def audit_verified(env: dict[str, str]) -> str:
    """'' when ``stratus audit verify`` passes, else what it said."""
    verified = stratus("audit", "verify", env=env)
    return "" if verified.returncode == 0 else f"audit verify: {verified.stderr.strip()}"


# ---------------------------------------------------------------------- running steps side by side


@dataclass(frozen=True)
class Scenario:
    step: str
    deployment: str
    env: dict[str, str]
    db: Path


def scenarios(env: dict[str, str], tmp_path: Path, steps: tuple[str, ...]) -> list[Scenario]:
    made = []
    for step, deployment in zip(steps, DEPLOYMENTS, strict=False):
        db = tmp_path / f"{step}.db"
        made.append(Scenario(step, deployment, {**env, "STRATUS_DB": str(db)}, db))
    return made


def run_side_by_side(runs: list[Scenario], body: Callable[[Scenario], None]) -> None:
    """Run ``body`` for every scenario at once; fail naming every step that failed."""
    failures: list[str] = []
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        futures = {pool.submit(body, run): run for run in runs}
        for future, run in futures.items():
            error = future.exception()
            if error is not None:
                detail = "".join(traceback.format_exception_only(error)).strip()
                failures.append(f"step {run.step} ({run.deployment}): {detail}")
    assert not failures, "\n\n".join(failures)


def killed(env: dict[str, str], step: str, *args: str) -> None:
    crashed = stratus(*args, env={**env, "STRATUS_CRASHPOINT": step})
    assert crashed.returncode == -signal.SIGKILL, (
        f"`stratus {' '.join(args)}` was not killed at {step}: {crashed.stderr}"
    )


def recovered(env: dict[str, str]) -> str:
    """Run the command that recovers first; return what it listed."""
    listed = stratus("undo", "--list", env=env)
    assert listed.returncode == 0, listed.stderr
    return listed.stdout


def consistent(run: Scenario, kube: KubeClient) -> None:
    problems = record_problems(run.db) + cluster_problems(run.db, kube)
    assert not problems, "\n".join(problems)


def scaled_in_process(run: Scenario, name: str) -> None:
    """The write an undo scenario starts from, through the same service the CLI uses but in
    the test's own process (it only sets the scene: no start-up to pay for)."""
    store = Store(run.db)
    kube = KubeClient(kubeconfig=run.env["KUBECONFIG"])
    try:
        service = ProposalService(
            store=store, executor=Executor(kube, store), policy=lambda: load_policy(None)
        )
        proposal = service.propose(
            action="scale",
            kind="Deployment",
            name=name,
            namespace="hotel",
            params={"replicas": 3},
            requester="cli:sre-alice",
        )
        if proposal.state == "awaiting_approval":
            service.answer(proposal.id, user="cli:sre-alice", choice="approve")
        assert service.execute(proposal.id, actor="cli:sre-alice").state == "executed"
    finally:
        kube.close()
        store.close()


def only_proposal(db: Path, action: str) -> dict[str, Any]:
    found = [p for p in proposals(db).values() if p["action"] == action]
    assert len(found) == 1, f"{len(found)} {action} proposals"
    return found[0]


# ---------------------------------------------------------------------- the tests


@pytest.fixture
def env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The shared CLI environment; crash logs stay in the test's own directory."""
    return {**env, "STRATUS_HOME": str(tmp_path / "home")}


def test_a_crash_at_any_step_of_a_write_is_recovered(
    env: dict[str, str], kube: KubeClient, tmp_path: Path
) -> None:
    """Kill ``stratus act`` at each step; recover; a proposal left open by the dead process
    is approved (and executed) by bob from another process."""

    def crash_and_recover(run: Scenario) -> None:
        name = run.deployment
        killed(run.env, run.step, "act", "scale", f"deploy/{name}", "replicas=3", "-n", "hotel",
               "--yes")  # fmt: skip
        landed = run.step in LANDED
        assert replicas(kube, name) == (3 if landed else 1)
        listed = recovered(run.env)
        consistent(run, kube)
        proposal = only_proposal(run.db, "scale")
        bob = {**run.env, "STRATUS_ACTOR": "sre-bob"}
        if run.step in STILL_OPEN:
            # The dead process's proposal waits, whole, for anyone to answer it.
            assert proposal["state"] == STILL_OPEN[run.step], proposal["state"]
            assert "nothing to undo" in listed
            approved = stratus("proposals", "approve", proposal["id"], env=bob)
            assert approved.returncode == 0, approved.stderr
            assert "applied: Scale deployment/" in approved.stdout
            assert replicas(kube, name) == 3
            consistent(run, kube)
            proposal = only_proposal(run.db, "scale")
            landed = True
        expected = "executed" if landed else "failed"
        assert proposal["state"] == expected, (proposal["state"], proposal.get("reason"))
        if landed and run.step not in STILL_OPEN:
            assert f"Scale deployment/{name} in hotel from 1 to 3 replicas" in listed
        if not landed:
            assert "nothing to undo" in listed
        assert replicas(kube, name) == (3 if landed else 1)
        entries = [e["state"] for e in rows(run.db, "SELECT state FROM undo_entries")]
        assert entries == (["active"] if landed else []), entries
        assert not audit_verified(run.env)

    run_side_by_side(scenarios(env, tmp_path, WRITE_STEPS), crash_and_recover)


def test_a_crash_at_any_step_of_an_undo_is_recovered(
    env: dict[str, str], kube: KubeClient, tmp_path: Path
) -> None:
    """Kill ``stratus undo --last`` at each step; recover; an undo the dead process left open
    is taken over by bob's ``undo --last`` from another process; the object ends restored."""

    def crash_and_recover(run: Scenario) -> None:
        name = run.deployment
        scaled_in_process(run, name)
        killed(run.env, run.step, "undo", "--last", "--yes")
        restored = run.step in LANDED
        assert replicas(kube, name) == (1 if restored else 3)
        listed = recovered(run.env)
        consistent(run, kube)
        undo = only_proposal(run.db, "undo")
        if restored:
            assert "nothing to undo" in listed
            assert undo["state"] == "executed"
            assert only_proposal(run.db, "scale")["state"] == "undone"
        else:
            assert f"Scale deployment/{name}" in listed
            assert undo["state"] == STILL_OPEN.get(run.step, "failed"), undo["state"]
            bob = {**run.env, "STRATUS_ACTOR": "sre-bob"}
            again = stratus("undo", "--last", "--yes", env=bob)
            assert again.returncode == 0, again.stderr
            assert replicas(kube, name) == 1
            consistent(run, kube)
            undos = [p for p in proposals(run.db).values() if p["action"] == "undo"]
            executed = [p for p in undos if p["state"] == "executed"]
            assert len(executed) == 1, [(p["id"], p["state"]) for p in undos]
            if run.step in STILL_OPEN:
                # The open undo proposal of the dead process is the one that ran.
                assert [p["id"] for p in executed] == [undo["id"]]
            assert only_proposal(run.db, "scale")["state"] == "undone"
        states = [e["state"] for e in rows(run.db, "SELECT state FROM undo_entries")]
        assert states == ["undone"], states
        assert not audit_verified(run.env)

    run_side_by_side(scenarios(env, tmp_path, WRITE_STEPS), crash_and_recover)


def test_the_checks_see_what_a_crash_leaves_until_recovery(
    env: dict[str, str], kube: KubeClient
) -> None:
    """The checks above are not vacuous: right after a kill at write-ahead they name the
    pending record, the proposal stuck in executing and the dead process's lock; the next
    command's recovery clears all three."""
    killed(env, "write-ahead", "act", "scale", "deploy/geo", "replicas=3", "-n", "hotel", "--yes")
    db = Path(env["STRATUS_DB"])
    problems = "\n".join(record_problems(db))
    assert "is still pending" in problems
    assert "is stuck in executing" in problems
    assert "still held by cli:sre-alice@" in problems
    recovered(env)
    assert [e["state"] for e in rows(db, "SELECT state FROM executions")] == ["aborted"]
    assert only_proposal(db, "scale")["state"] == "failed"
    assert not record_problems(db)
    assert replicas(kube, "geo") == 1
