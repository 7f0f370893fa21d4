"""A held write that outlives the grace period is fenced, never guessed "not applied".

A proxy may hold a request for any time. Once the grace period (``settle_after``) has passed
and the object still sits at the resourceVersion the write was planned on, recovery makes the
object say what happened: it writes a *fence* with the same precondition (the object as read,
plus the annotation ``stratus.io/fenced: <execution id>``). Exactly one of the held write and
the fence can land. The fence landed: the write can never land ("not applied", and the
object shows why). The fence met 409: the held write landed first, and recovery records it as
applied, with its undo entry. A create has no precondition: its fence is the create itself
(the approved object, under its name), so whichever of the two lands, the object shows the
planned create, and the other one meets AlreadyExists.

``stratus`` runs in real processes against the fault proxy (``tests.faultproxy``), which
holds the write; the process is SIGKILLed while its request waits there; two read timeouts
of 3 s make the grace period 6 s.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Lab, kubectl_for, stratus
from tests.faultproxy import FaultProxy, Rule, fault_proxy
from tests.proposals.test_crashes import (
    Processes,
    audit_verified,
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
from tests.proposals.test_secrets_at_rest import DRIFTED, assert_no_value_stored, password
from tools.k8s import KubeClient
from tools.objects import ObjectRef

FENCE = "stratus.io/fenced"
GRACE = 6.5  # two read timeouts of 3 s, and a little


@pytest.fixture
def proxy(lab: Lab, tmp_path: Path) -> Iterator[FaultProxy]:
    with fault_proxy(lab.url, tmp_path / "proxied-kubeconfig") as proxy:
        yield proxy


@pytest.fixture
def env(env: dict[str, str], proxy: FaultProxy, tmp_path: Path) -> dict[str, str]:
    return {
        **env,
        "KUBECONFIG": str(proxy.kubeconfig),
        "STRATUS_HOME": str(tmp_path / "home"),
        "STRATUS_KUBE_TIMEOUT": "3",
    }


@pytest.fixture
def db(env: dict[str, str]) -> Path:
    return Path(env["STRATUS_DB"])


@pytest.fixture
def processes() -> Iterator[Processes]:
    started = Processes()
    yield started
    started.close()


def killed_while_held(processes: Processes, held: Rule, *args: str, env: dict[str, str]) -> None:
    process = processes.start(*args, env=env)
    wait_for(lambda: held.hits == 1, "the write to reach the proxy")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def annotations(kube: KubeClient, ref: ObjectRef = GEO) -> dict[str, str]:
    return dict(kube.get(ref)["metadata"].get("annotations") or {})


def execution_ids(db: Path) -> list[str]:
    return [r["id"] for r in rows(db, "SELECT id FROM executions ORDER BY created_at")]


def fence_rows(db: Path) -> list[dict[str, object]]:
    found = rows(db, "SELECT payload FROM audit_log WHERE event = 'fence' ORDER BY seq")
    return [json.loads(r["payload"]) for r in found]


def state_of(db: Path, intent: str) -> str:
    found = [p for p in proposals(db).values() if p["intent"] == intent]
    assert len(found) == 1, found
    return str(found[0]["state"])


def test_a_write_held_past_the_grace_period_is_fenced_and_can_never_land(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    """The reproduction: today recovery says "not applied" after the grace period, then the
    held write lands — the object changed and no undo entry exists. Now recovery fences the
    object first; the held write, released, meets 409 and changes nothing."""
    first = stratus("act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes", env=env)
    assert first.returncode == 0, first.stderr
    held = proxy.delay("PUT", GEO_PATH, 600, dry_run=False, times=1)
    killed_while_held(processes, held, *SCALE[:3], "replicas=3", *SCALE[4:], env=env)
    write = execution_ids(db)[-1]
    planned_on = kube.get(GEO)["metadata"]["resourceVersion"]

    time.sleep(GRACE)
    settled = stratus("undo", "--list", env=env)
    assert settled.returncode == 0, settled.stderr
    assert "Traceback" not in settled.stderr
    assert f"{write} (" in settled.stderr and "): not applied (" in settled.stderr
    assert "fenced" in settled.stderr, settled.stderr
    assert annotations(kube)[FENCE] == write  # the object says so
    assert kube.get(GEO)["metadata"]["resourceVersion"] != planned_on
    assert execution_states(db) == ["applied", "aborted"]
    assert fence_rows(db) == [
        {
            "execution": write,
            "operation": "replace",
            "precondition": planned_on,
            "annotation": FENCE,
        }
    ]

    proxy.release()  # the held write arrives at last
    wait_for(lambda: len(proxy.forwarded("PUT", GEO_PATH)) == 3, "the held write to arrive")
    statuses = [s.status for s in proxy.forwarded("PUT", GEO_PATH)]
    assert statuses == [200, 200, 409], statuses  # the first write, the fence, the held one
    assert replicas(kube) == 2
    assert execution_states(db) == ["applied", "aborted"]
    assert record_problems(db) == []
    assert not audit_verified(env)

    # The annotation is no change a person made: undo of the earlier write is not refused as
    # "changed since Stratus wrote it", and its diff does not show the annotation.
    undone = stratus("undo", "--last", "--yes", env=env)
    assert undone.returncode == 0, undone.stderr
    assert FENCE not in undone.stdout + undone.stderr
    assert replicas(kube) == 1
    assert entry_states(db) == ["undone"]
    assert record_problems(db) == []


def test_a_fence_that_meets_409_finds_the_held_write_landed_and_records_it(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    """The held write lands while recovery's fence is on its way: the fence meets 409, and
    recovery reads the object again — it shows the write, which is recorded as applied with
    its undo entry."""
    held = proxy.delay("PUT", GEO_PATH, 600, dry_run=False, times=1)
    killed_while_held(processes, held, *SCALE, env=env)
    time.sleep(GRACE)
    fence = proxy.delay("PUT", GEO_PATH, 600, dry_run=False, times=1)
    recovering = processes.start("undo", "--list", env=env)
    wait_for(lambda: fence.hits == 1, "the fence to reach the proxy")
    proxy.open(held)  # the held write lands first ...
    wait_for(lambda: replicas(kube) == 3, "the held write to land")
    proxy.open(fence)  # ... then the fence arrives
    out, err = recovering.communicate(timeout=60)
    assert recovering.returncode == 0, err
    wait_for(lambda: len(proxy.forwarded("PUT", GEO_PATH)) == 2, "the fence to arrive")
    if "the fence's answer was lost" in err:
        # A loaded machine opened the fence after its 3 s read timeout: the fence is then as
        # unknown as the write, and the next recovery reads the object (no second fence).
        again = stratus("undo", "--list", env=env)
        out, err = again.stdout, again.stderr
    statuses = [s.status for s in proxy.forwarded("PUT", GEO_PATH)]
    assert statuses == [200, 409], statuses
    assert f"({INTENT}): applied" in err, err
    assert INTENT in out
    assert FENCE not in annotations(kube)
    assert execution_states(db) == ["applied"]
    assert entry_states(db) == ["active"]
    assert state_of(db, INTENT) == "executed"
    assert record_problems(db) == []
    assert not audit_verified(env)

    undone = stratus("undo", "--last", "--yes", env=env)
    assert undone.returncode == 0, undone.stderr
    assert replicas(kube) == 1


def test_a_fence_killed_on_its_way_is_fenced_again_and_only_one_write_lands(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    """Recovery itself is killed while its fence is held: the next recovery fences again
    (same precondition); of the held write and the two fences exactly one lands."""
    held = proxy.delay("PUT", GEO_PATH, 600, dry_run=False, times=1)
    killed_while_held(processes, held, *SCALE, env=env)
    write = execution_ids(db)[-1]
    time.sleep(GRACE)
    fence = proxy.delay("PUT", GEO_PATH, 600, dry_run=False, times=1)
    killed_while_held(processes, fence, "undo", "--list", env=env)
    assert execution_states(db) == ["pending"]

    again = stratus("undo", "--list", env=env)
    assert again.returncode == 0, again.stderr
    assert f"({INTENT}): not applied (" in again.stderr and "fenced" in again.stderr
    assert annotations(kube)[FENCE] == write
    proxy.release()
    wait_for(lambda: len(proxy.forwarded("PUT", GEO_PATH)) == 3, "the held writes to arrive")
    statuses = sorted(s.status or 0 for s in proxy.forwarded("PUT", GEO_PATH))
    assert statuses == [200, 409, 409], statuses
    assert replicas(kube) == 1
    assert execution_states(db) == ["aborted"]
    assert state_of(db, INTENT) == "failed"
    assert len(fence_rows(db)) == 2
    assert record_problems(db) == []
    assert not audit_verified(env)


def test_a_held_delete_is_fenced_and_the_pod_stays(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    pod = kube.list("v1", "Pod", namespace="hotel", label_selector="app=geo")[0]
    name = pod["metadata"]["name"]
    path = rf"/api/v1/namespaces/hotel/pods/{name}$"
    held = proxy.delay("DELETE", path, 600, dry_run=False, times=1)
    killed_while_held(
        processes, held, "act", "delete-pod", f"pod/{name}", "-n", "hotel", "--yes", env=env
    )
    write = execution_ids(db)[-1]
    time.sleep(GRACE)
    settled = stratus("undo", "--list", env=env)
    assert settled.returncode == 0, settled.stderr
    assert "): not applied (" in settled.stderr and "fenced" in settled.stderr, settled.stderr
    ref = ObjectRef("Pod", name, "hotel")
    assert annotations(kube, ref)[FENCE] == write
    proxy.release()
    wait_for(lambda: len(proxy.forwarded("DELETE", path)) == 1, "the held delete to arrive")
    assert proxy.forwarded("DELETE", path)[0].status == 409
    assert kube.get(ref)["metadata"]["uid"] == pod["metadata"]["uid"]
    assert execution_states(db) == ["aborted"]
    assert record_problems(db) == []
    assert not audit_verified(env)


SERVICES = r"/api/v1/namespaces/hotel/services$"
CREATE = (
    "act",
    "create-service",
    "service/geo-extra",
    "selector=app=geo",
    "ports=main:8083:8083",
    "-n",
    "hotel",
    "--yes",
)


def test_a_held_create_is_fenced_by_creating_the_approved_object(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    """Nothing but the name itself stops a held create. Recovery's fence is the approved
    create: it lands, the write is recorded as applied with its undo entry, and the held
    create, released, meets AlreadyExists. Undo then deletes the one Service."""
    held = proxy.delay("POST", SERVICES, 600, dry_run=False, times=1)
    killed_while_held(processes, held, *CREATE, env=env)
    ref = ObjectRef("Service", "geo-extra", "hotel")
    early = stratus("undo", "--list", env=env)
    assert "may still be on its way" in early.stderr, early.stderr
    assert kube.find(ref) is None

    time.sleep(GRACE)
    settled = stratus("undo", "--list", env=env)
    assert settled.returncode == 0, settled.stderr
    assert "Create service/geo-extra" in settled.stderr and "): applied" in settled.stderr
    assert kube.find(ref) is not None
    assert execution_states(db) == ["applied"]
    assert entry_states(db) == ["active"]
    assert [r["operation"] for r in fence_rows(db)] == ["create"]
    proxy.release()
    wait_for(lambda: len(proxy.forwarded("POST", SERVICES)) == 2, "the held create to arrive")
    assert [s.status for s in proxy.forwarded("POST", SERVICES)] == [201, 409]
    assert record_problems(db) == []
    assert not audit_verified(env)

    undone = stratus("undo", "--last", "--yes", env=env)
    assert undone.returncode == 0, undone.stderr
    assert kube.find(ref) is None
    assert record_problems(db) == []


def test_a_held_create_is_not_completed_while_stratus_is_paused(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    """A create's fence is the approved create itself, a real change: under an emergency
    pause recovery leaves the write unknown and says why, and completes it after resume."""
    from proposals.killswitch import KillSwitch
    from store.db import Store

    held = proxy.delay("POST", SERVICES, 600, dry_run=False, times=1)
    killed_while_held(processes, held, *CREATE, env=env)
    ref = ObjectRef("Service", "geo-extra", "hotel")
    switch = KillSwitch(Store(str(db)))
    switch.pause(actor="U0ALICE", reason="freeze")
    time.sleep(GRACE)
    paused = stratus("undo", "--list", env=env)
    assert "Stratus is paused" in paused.stderr, paused.stderr
    assert kube.find(ref) is None
    assert execution_states(db) == ["pending"]
    assert fence_rows(db) == []

    switch.resume(actor="U0ALICE", reason="over")
    settled = stratus("undo", "--list", env=env)
    assert "): applied" in settled.stderr, settled.stderr
    assert kube.find(ref) is not None
    assert execution_states(db) == ["applied"]
    proxy.release()


def test_kubectl_apply_and_diff_leave_the_fence_alone(
    env: dict[str, str],
    proxy: FaultProxy,
    kube: KubeClient,
    db: Path,
    processes: Processes,
    lab: Lab,
    tmp_path: Path,
) -> None:
    """The manifest a person keeps for geo shows no difference after a fence (``kubectl
    diff`` exits 0), and applying it again changes nothing the fence set."""
    kubectl = kubectl_for("system", lab, tmp_path)
    manifest = tmp_path / "geo.json"
    live = json.loads(kubectl.out("get", "deployment", "geo", "-o", "json"))
    live.pop("status", None)
    for field in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
        live["metadata"].pop(field, None)
    manifest.write_text(json.dumps(live))
    held = proxy.delay("PUT", GEO_PATH, 600, dry_run=False, times=1)
    killed_while_held(processes, held, *SCALE, env=env)
    time.sleep(GRACE)
    assert "fenced" in stratus("undo", "--list", env=env).stderr
    assert FENCE in annotations(kube)

    diff = kubectl.run("diff", "-f", str(manifest), check=False)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    kubectl.run("apply", "-f", str(manifest))
    assert FENCE in annotations(kube) and replicas(kube) == 1
    proxy.release()
    wait_for(lambda: len(proxy.forwarded("PUT", GEO_PATH)) == 2, "the held write to arrive")
    assert replicas(kube) == 1


def test_a_held_undo_is_fenced_and_its_entry_stays_active(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    """The undo variant: the restoring write is held past the grace period; recovery fences
    it, the entry stays on the stack (the object still shows the write), and a later undo
    applies exactly once, not refused because of the fence."""
    scaled = stratus(*SCALE, env=env)
    assert scaled.returncode == 0, scaled.stderr
    held = proxy.delay("PUT", GEO_PATH, 600, dry_run=False, times=1)
    killed_while_held(processes, held, "undo", "--last", "--yes", env=env)
    time.sleep(GRACE)
    settled = stratus("undo", "--list", env=env)
    assert f"(Undo: {INTENT}): not applied (" in settled.stderr, settled.stderr
    assert "fenced" in settled.stderr and INTENT in settled.stdout
    assert entry_states(db) == ["active"]
    assert execution_states(db) == ["applied", "aborted"]
    proxy.release()
    wait_for(lambda: len(proxy.forwarded("PUT", GEO_PATH)) == 3, "the held undo to arrive")
    assert replicas(kube) == 3
    undone = stratus("undo", "--last", "--yes", env=env)
    assert undone.returncode == 0, undone.stderr
    assert replicas(kube) == 1
    assert entry_states(db) == ["undone"]
    assert record_problems(db) == []
    assert not audit_verified(env)


SECRET = ObjectRef("Secret", "mongodb-rate-auth", "hotel")
SECRET_PATH = r"/api/v1/namespaces/hotel/secrets/mongodb-rate-auth$"


def test_a_held_secret_write_is_fenced_its_keeper_goes_and_no_value_is_stored(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    drifted = kube.get(SECRET)
    drifted["data"]["password"] = base64.b64encode(DRIFTED.encode()).decode()
    kube.replace(drifted)
    held = proxy.delay("PUT", SECRET_PATH, 600, dry_run=False, times=1)
    restore = ("act", "restore-secret-key", "mongodb-rate-auth", "key=password", "-n", "hotel")
    killed_while_held(processes, held, *restore, "--yes", env=env)
    keepers = kube.list("v1", "Secret", namespace="hotel", label_selector="stratus.io/undo-of")
    assert len(keepers) == 1
    time.sleep(GRACE)
    settled = stratus("undo", "--list", env=env)
    assert "): not applied (" in settled.stderr and "fenced" in settled.stderr, settled.stderr
    assert password(kube) == DRIFTED  # the fence wrote the values back exactly as read
    assert FENCE in annotations(kube, SECRET)
    assert kube.list("v1", "Secret", namespace="hotel", label_selector="stratus.io/undo-of") == []
    proxy.release()
    wait_for(lambda: len(proxy.forwarded("PUT", SECRET_PATH)) == 2, "the held write to arrive")
    assert password(kube) == DRIFTED
    assert_no_value_stored(env)
    assert record_problems(db) == []
    assert not audit_verified(env)


def test_no_fence_outside_the_write_scope_or_from_an_edited_record(
    env: dict[str, str], proxy: FaultProxy, kube: KubeClient, db: Path, processes: Processes
) -> None:
    """A fence is a write: never outside today's write scope, and never from a record edited
    since it was written (a create's fence sends the object the record names). The write stays
    unknown, and says why."""
    held = proxy.delay("POST", SERVICES, 600, dry_run=False, times=1)
    killed_while_held(processes, held, *CREATE, env=env)
    time.sleep(GRACE)
    narrowed = stratus("undo", "--list", env={**env, "STRATUS_WRITE_NAMESPACES": "shop"})
    assert "cannot tell yet (" in narrowed.stderr and "cannot fence it" in narrowed.stderr
    assert "not allowed" in narrowed.stderr or "scope" in narrowed.stderr, narrowed.stderr

    [row] = rows(db, "SELECT id, planned_after FROM executions")
    planned = json.loads(row["planned_after"])
    planned["spec"]["selector"] = {"app": "frontend"}
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE executions SET planned_after = ? WHERE id = ?",
            [json.dumps(planned), row["id"]],
        )
    edited = stratus("undo", "--list", env=env)
    assert edited.returncode == 0, edited.stderr
    assert "applied" not in edited.stderr, edited.stderr
    # Recovery leaves a record its digest does not prove as found; verify names it.
    checked = stratus("audit", "verify", env=env)
    assert checked.returncode == 1 and row["id"] in checked.stderr, checked.stderr
    assert "images were edited" in checked.stderr, checked.stderr
    assert proxy.forwarded("POST", SERVICES) == []
    assert fence_rows(db) == []
    assert kube.find(ObjectRef("Service", "geo-extra", "hotel")) is None
