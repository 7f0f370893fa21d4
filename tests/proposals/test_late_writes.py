"""A write sent by a process that was then killed may still land: its outcome stays unknown
until the object says what happened, however its owner died.

``stratus`` runs in real processes against the fault proxy (``tests.faultproxy``), which
holds the PUT; the process is SIGKILLed while its request waits there. The next command's
recovery must not call the write "not applied" while the object still sits at the
resourceVersion the write was planned on; when the held write lands, recovery records it as
applied with its undo entry (for an undo: the entry it undoes is marked undone). A write that
never lands is settled "not applied" once the grace period from its sending has passed, and
at once when the object moved past its resourceVersion (its precondition can no longer hold).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, Lab, stratus
from tests.faultproxy import FaultProxy, Rule, fault_proxy
from tests.proposals.test_crashes import (
    Processes,
    audit_verified,
    only_proposal,
    proposals,
    record_problems,
    rows,
)
from tests.proposals.test_faults import (
    GEO,
    GEO_PATH,
    INTENT,
    SCALE,
    entry_states,
    execution_states,
    replicas,
    wait_for,
)
from tools.k8s import KubeClient


@pytest.fixture
def proxy(lab: Lab, tmp_path: Path) -> Iterator[FaultProxy]:
    with fault_proxy(lab.url, tmp_path / "proxied-kubeconfig") as proxy:
        yield proxy


@pytest.fixture
def env(env: dict[str, str], proxy: FaultProxy, tmp_path: Path) -> dict[str, str]:
    return {**env, "KUBECONFIG": str(proxy.kubeconfig), "STRATUS_HOME": str(tmp_path / "home")}


@pytest.fixture
def db(env: dict[str, str]) -> Path:
    return Path(env["STRATUS_DB"])


@pytest.fixture
def processes() -> Iterator[Processes]:
    started = Processes()
    yield started
    started.close()


def killed_while_held(processes: Processes, held: Rule, *args: str, env: dict[str, str]) -> None:
    """Start ``stratus ARGS``, wait until its real PUT is held at the proxy, SIGKILL it."""
    process = processes.start(*args, env=env)
    wait_for(lambda: held.hits == 1, "the write to reach the proxy")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def scale_state(db: Path) -> str:
    """The state of the proposal behind the killed write (others may exist beside it)."""
    found = [p for p in proposals(db).values() if p["intent"] == INTENT]
    assert len(found) == 1, found
    return str(found[0]["state"])


def reconcile_rows(db: Path) -> list[str]:
    found = rows(db, "SELECT payload FROM audit_log WHERE event = 'reconcile'")
    return [r["payload"] for r in found]


def test_a_write_that_lands_after_its_process_was_killed_keeps_its_undo_entry(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    held = proxy.delay("PUT", GEO_PATH, 60, dry_run=False)
    killed_while_held(processes, held, *SCALE, env=env)
    assert replicas(kube) == 1

    early = stratus("undo", "--list", env=env)
    assert early.returncode == 0, early.stderr
    assert "not applied" not in early.stderr, early.stderr
    assert "not settled yet" in early.stderr and "may still be on its way" in early.stderr
    assert execution_states(db) == ["pending"]
    assert scale_state(db) == "executing"
    assert reconcile_rows(db) == []

    # While its outcome is unknown, no other write to the object starts.
    other = stratus("act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes", env=env)
    assert other.returncode != 0
    assert "outcome is not recorded yet" in other.stderr, other.stderr
    assert "Traceback" not in other.stderr and "internal error" not in other.stderr
    assert len(proxy.forwarded("PUT", GEO_PATH)) == 0

    proxy.release()  # the held write lands now, long after its process died
    wait_for(lambda: replicas(kube) == 3, "the held write to land")

    listed = stratus("undo", "--list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "recovered an interrupted write: " in listed.stderr
    assert f"({INTENT}): applied" in listed.stderr
    assert INTENT in listed.stdout
    assert execution_states(db) == ["applied"]
    assert entry_states(db) == ["active"]
    assert scale_state(db) == "executed"
    assert record_problems(db) == []
    assert not audit_verified(env)

    undone = stratus("undo", "--last", "--yes", env=env)
    assert undone.returncode == 0, undone.stderr
    assert replicas(kube) == 1
    assert entry_states(db) == ["undone"]
    assert record_problems(db) == []


def test_an_undo_that_lands_after_its_process_was_killed_marks_the_entry_undone(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    scaled = stratus(*SCALE, env=env)
    assert scaled.returncode == 0, scaled.stderr
    assert replicas(kube) == 3
    held = proxy.delay("PUT", GEO_PATH, 60, dry_run=False)
    killed_while_held(processes, held, "undo", "--last", "--yes", env=env)

    early = stratus("undo", "--list", env=env)
    assert early.returncode == 0, early.stderr
    assert "not applied" not in early.stderr, early.stderr
    assert entry_states(db) == ["active"]
    assert execution_states(db) == ["applied", "pending"]

    proxy.release()
    wait_for(lambda: replicas(kube) == 1, "the held undo to land")

    listed = stratus("undo", "--list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert f"(Undo: {INTENT}): applied" in listed.stderr
    assert "nothing to undo" in listed.stdout
    assert execution_states(db) == ["applied", "applied"]
    assert entry_states(db) == ["undone"]
    assert only_proposal(db, "undo")["state"] == "executed"
    assert only_proposal(db, "scale")["state"] == "undone"
    undo_rows = rows(db, "SELECT payload FROM audit_log WHERE event = 'undo'")
    assert len(undo_rows) == 1 and '"verdict":"applied"' in undo_rows[0]["payload"]
    assert reconcile_rows(db) == []
    assert record_problems(db) == []
    assert not audit_verified(env)


def test_a_write_that_never_lands_is_settled_after_the_grace_period(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    """The held write is not released in time: recovery waits two read timeouts from its
    sending (two times 3 s here), then fences the object (``tools.fences``) and says "not
    applied"; the object is free again and a new write applies exactly once. (The held PUT,
    released, meets 409: the fence moved the object past its precondition.)"""
    env = {**env, "STRATUS_KUBE_TIMEOUT": "3"}
    held = proxy.delay("PUT", GEO_PATH, 600, dry_run=False, times=1)
    killed_while_held(processes, held, *SCALE, env=env)
    early = stratus("undo", "--list", env=env)
    assert "may still be on its way" in early.stderr, early.stderr
    assert execution_states(db) == ["pending"]

    time.sleep(6.5)
    settled = stratus("undo", "--list", env=env)
    assert settled.returncode == 0, settled.stderr
    assert f"({INTENT}): not applied (the object did not show it within 6 s" in settled.stderr
    assert "recovery fenced it" in settled.stderr, settled.stderr
    assert execution_states(db) == ["aborted"]
    assert only_proposal(db, "scale")["state"] == "failed"
    assert entry_states(db) == []
    assert record_problems(db) == []

    proxy.clear()  # from now on writes pass, and the held one arrives
    wait_for(lambda: len(proxy.forwarded("PUT", GEO_PATH)) == 2, "the held write to arrive")
    assert [s.status for s in proxy.forwarded("PUT", GEO_PATH)] == [200, 409]  # fence, held
    assert replicas(kube) == 1
    again = stratus("act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes", env=env)
    assert again.returncode == 0, again.stderr
    assert replicas(kube) == 2
    assert entry_states(db) == ["active"]
    assert not audit_verified(env)


def test_a_write_overtaken_by_someone_else_is_settled_at_once(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    """While the PUT is held, someone else changes the object (straight to the lab): its
    resourceVersion moves, so the held write can never land. Recovery settles it at once —
    without waiting for the grace period — and the held write, released, changes nothing."""
    held = proxy.delay("PUT", GEO_PATH, 60, dry_run=False)
    killed_while_held(processes, held, *SCALE, env=env)
    current = kube.get(GEO)
    current["metadata"]["labels"] = {**current["metadata"].get("labels", {}), "team": "web"}
    kube.replace(current)

    listed = stratus("undo", "--list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert f"({INTENT}): not applied (the object moved on" in listed.stderr, listed.stderr
    assert execution_states(db) == ["aborted"]
    assert only_proposal(db, "scale")["state"] == "failed"

    proxy.release()
    wait_for(lambda: len(proxy.forwarded("PUT", GEO_PATH)) == 1, "the held write to arrive")
    assert proxy.forwarded("PUT", GEO_PATH)[0].status == 409
    assert replicas(kube) == 1
    assert record_problems(db) == []
    assert not audit_verified(env)


def _no_sigxfsz() -> None:
    """In the child: a write past the file-size limit fails (as on a full disk) instead of
    killing the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def test_a_full_disk_after_the_write_landed_says_the_change_is_in_the_cluster(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path
) -> None:
    """The disk fills while the PUT is on its way: the process's file-size limit is lowered
    to just past the database's write-ahead log (``prlimit``), so SQLite's next append is cut
    short and it answers "database or disk is full" — exactly what a full disk does. The
    command must say that the change is in the cluster and that recovery will record it; the
    next command (with room again) records it, with its undo entry."""
    assert stratus("undo", "--list", env=env).returncode == 0  # the database exists
    held = proxy.delay("PUT", GEO_PATH, 60, dry_run=False)
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", *SCALE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        preexec_fn=_no_sigxfsz,  # noqa: PLW1509 - only a signal disposition, before exec
    )
    try:
        wait_for(lambda: held.hits == 1, "the write to reach the proxy")
        wal = Path(f"{db}-wal")
        room = wal.stat().st_size + 100  # less than one more page
        resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (room, room))
        proxy.release()
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert replicas(kube) == 3  # the write landed
    assert process.returncode == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, err
    assert "the change is in the cluster" in lines[0], lines[0]
    assert "disk is full" in lines[0] and "recovery records it" in lines[0], lines[0]
    assert "applied:" not in out
    assert execution_states(db) == ["pending"]

    listed = stratus("undo", "--list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert f"({INTENT}): applied" in listed.stderr
    assert execution_states(db) == ["applied"]
    assert entry_states(db) == ["active"]
    assert only_proposal(db, "scale")["state"] == "executed"
    assert record_problems(db) == []
    assert not audit_verified(env)
