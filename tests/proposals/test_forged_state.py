"""Forged state that gates writes: someone who can write the database file (but does not hold
``STRATUS_AUDIT_KEY``) edits the kill switch, an execution record, an undo entry or a
proposal's columns, and then lets Stratus carry on. Nothing may be written that no human
approved, no record of a write may be lost, and ``stratus audit verify`` names what was done.
The service runs against the lab over real HTTP; the tampering is plain SQL on the file."""

from __future__ import annotations

import json
import socket
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_cli
from policies.model import Match, Rule
from proposals.killswitch import KillSwitch
from proposals.model import ProposalState
from proposals.service import ProposalService, UndoRequest
from store.db import Store
from store.errors import StratusError
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient
from tools.objects import ObjectRef

S = ProposalState
GEO = ObjectRef("Deployment", "geo", "hotel")
ALLOW = Rule(name="allow-scale", decision="allow", match=Match(actions=["scale"]))
ASK = Rule(name="ask-everything", decision="ask")
KEY = "k" * 32


@pytest.fixture
def audit_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The installation's key, set before the service (and its audit log) is made."""
    monkeypatch.setenv("STRATUS_AUDIT_KEY", KEY)
    yield KEY


def sql(store: Store, statement: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """The attacker's tool: the database file, without Stratus in the way."""
    db = sqlite3.connect(store.path)
    try:
        rows = db.execute(statement, params).fetchall()
        db.commit()
        return rows
    finally:
        db.close()


def verify(store: Store, kube_env: dict[str, str]) -> Result:
    return CliRunner().invoke(
        stratus_cli,
        ["audit", "verify"],
        env={**kube_env, "STRATUS_DB": str(store.path), "STRATUS_AUDIT_KEY": KEY},
        catch_exceptions=False,
    )


def scale(service: ProposalService, replicas: int) -> Any:
    return service.propose(
        action="scale", target=GEO, params={"replicas": replicas}, requester="U0REQ"
    )


# ------------------------------------------------------------------------- the kill switch


def _resumed_event(store: Store, payload: dict[str, Any]) -> None:
    sql(
        store,
        "INSERT INTO events (at, stream, subject, type, version, payload) "
        "VALUES ('2030-01-01T00:00:00+00:00', 'killswitch', 'stratus', 'killswitch.resumed', 1, ?)",
        (json.dumps(payload),),
    )


def _replayed_resume(store: Store) -> None:
    # A genuine, sealed "resumed" event from before the pause, appended again.
    [(payload,)] = sql(
        store,
        "SELECT payload FROM events WHERE type = 'killswitch.resumed' ORDER BY seq LIMIT 1",
    )
    _resumed_event(store, json.loads(payload))


def _inserted_resume(store: Store) -> None:
    _resumed_event(store, {"paused": False, "actor": "U0ADMIN", "reason": "all clear"})


def _edited_pause(store: Store) -> None:
    sql(store, "DROP TRIGGER events_no_update")
    sql(
        store,
        "UPDATE events SET payload = json_set(payload, '$.paused', json('false')), "
        "type = 'killswitch.resumed' WHERE seq = "
        "(SELECT MAX(seq) FROM events WHERE stream = 'killswitch')",
    )


def _removed_pause(store: Store) -> None:
    # The pause, its event and its audit row, gone (the attacker drops the triggers).
    sql(store, "DROP TRIGGER events_no_delete")
    sql(store, "DROP TRIGGER audit_log_no_delete")
    sql(
        store,
        "DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events WHERE stream = 'killswitch')",
    )
    sql(
        store,
        "DELETE FROM audit_log WHERE seq = (SELECT MAX(seq) FROM audit_log WHERE event = 'pause')",
    )


def _removed_events(store: Store) -> None:
    sql(store, "DROP TRIGGER events_no_delete")
    sql(store, "DELETE FROM events WHERE stream = 'killswitch'")


def _renamed_stream(store: Store) -> None:
    sql(store, "DROP TRIGGER events_no_update")
    sql(
        store,
        "UPDATE events SET stream = 'killswitch-old' WHERE seq = "
        "(SELECT MAX(seq) FROM events WHERE stream = 'killswitch')",
    )


def _deleted_pause_event(store: Store) -> None:
    sql(store, "DROP TRIGGER events_no_delete")
    sql(
        store,
        "DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events WHERE stream = 'killswitch')",
    )


def _resumed_payload(store: Store) -> None:
    # The pause's own row, its payload edited to say "resumed" (seal and all kept).
    sql(store, "DROP TRIGGER events_no_update")
    sql(
        store,
        "UPDATE events SET payload = json_set(payload, '$.paused', json('false')) WHERE seq = "
        "(SELECT MAX(seq) FROM events WHERE stream = 'killswitch')",
    )


@pytest.mark.parametrize(
    "forge",
    [
        _inserted_resume,
        _replayed_resume,
        _edited_pause,
        _removed_pause,
        _removed_events,
        _renamed_stream,
        _deleted_pause_event,
        _resumed_payload,
    ],
    ids=[
        "inserted-resume",
        "replayed-resume",
        "edited-pause",
        "removed-pause",
        "no-events",
        "renamed-stream",
        "deleted-pause-event",
        "payload-resumed",
    ],
)
def test_a_forged_resume_still_counts_as_paused(
    audit_key: str,
    service: ProposalService,
    policy: PolicyBox,
    kube: KubeClient,
    env: dict[str, str],
    forge: Any,
) -> None:
    policy.set(ALLOW)
    switch = KillSwitch(service.store)
    switch.pause(actor="U0ADMIN", reason="drill")
    switch.resume(actor="U0ADMIN")
    switch.pause(actor="U0ADMIN", reason="incident")
    asked = scale(service, 2)  # paused: an allow rule asks a human
    assert asked.state == S.AWAITING_APPROVAL
    forge(service.store)
    state = switch.state()
    assert state.paused and state.tampered, state
    proposal = scale(service, 3)
    assert proposal.state == S.AWAITING_APPROVAL, proposal.decision.reason
    assert "changed outside Stratus" in proposal.decision.reason
    assert kube.get(GEO)["spec"]["replicas"] == 1  # nothing ran without a human
    checked = verify(service.store, env)
    assert checked.exit_code == 1 and "record tampered: kill switch" in checked.stderr, (
        checked.output
    )
    # A resume made through Stratus seals a new state: allowed work runs again.
    assert not switch.resume(actor="U0ADMIN", reason="checked").paused
    assert scale(service, 4).state == S.APPROVED


def test_a_genuine_switch_is_intact_with_and_without_a_key(
    service: ProposalService, policy: PolicyBox, env: dict[str, str]
) -> None:
    switch = KillSwitch(service.store)
    assert not switch.state().paused
    switch.pause(actor="U0ADMIN", reason="drill")
    assert switch.state().paused and not switch.state().tampered
    policy.set(ALLOW)
    scale(service, 2)  # audit rows after the pause do not disturb it
    switch.resume(actor="U0ADMIN")
    state = switch.state()
    assert not state.paused and not state.tampered, state


# ------------------------------------------------------------ execution records, undo entries


def _executed_scale(service: ProposalService, policy: PolicyBox, replicas: int = 3) -> Any:
    policy.set(ALLOW)
    proposal = scale(service, replicas)
    return service.execute(proposal.id, actor="U0REQ")


@pytest.mark.parametrize("moved", [False, True], ids=["unchanged", "changed-since"])
def test_an_applied_write_marked_pending_keeps_its_record(
    audit_key: str,
    service: ProposalService,
    policy: PolicyBox,
    kube: KubeClient,
    env: dict[str, str],
    moved: bool,
) -> None:
    done = _executed_scale(service, policy)
    assert kube.get(GEO)["spec"]["replicas"] == 3
    # Pending, and owned by nobody: recovery would read the object and decide again.
    sql(
        service.store,
        "UPDATE executions SET state = 'pending', owner = NULL WHERE id = ?",
        (done.execution_id,),
    )
    if moved:
        current = kube.get(GEO)
        current["spec"]["replicas"] = 1  # someone put it back by hand
        kube.replace(current)
    lines = service.reconcile()
    assert all(done.execution_id not in line or "tampered" in line for line in lines), lines
    [(state,)] = sql(
        service.store, "SELECT state FROM executions WHERE id = ?", (done.execution_id,)
    )
    assert state == "pending"  # left as found, never "aborted"
    assert [e.id for e in service.undo_entries()] == [done.undo_id]  # still on the stack
    assert service.get(done.id).state == S.EXECUTED
    checked = verify(service.store, env)
    assert checked.exit_code == 1 and done.execution_id in checked.stderr, checked.output


@pytest.mark.parametrize("state", ["undone", "dropped", "deleted"])
def test_an_undo_entry_taken_off_the_stack_outside_stratus_is_named(
    audit_key: str,
    service: ProposalService,
    policy: PolicyBox,
    kube: KubeClient,
    env: dict[str, str],
    state: str,
) -> None:
    done = _executed_scale(service, policy)
    if state == "deleted":
        sql(service.store, "DELETE FROM undo_entries WHERE id = ?", (done.undo_id,))
    else:
        sql(service.store, "UPDATE undo_entries SET state = ? WHERE id = ?", (state, done.undo_id))
    checked = verify(service.store, env)
    assert checked.exit_code == 1 and done.execution_id in checked.stderr, checked.output


def test_an_undone_entry_put_back_on_the_stack_undoes_nothing_again(
    audit_key: str,
    service: ProposalService,
    policy: PolicyBox,
    kube: KubeClient,
    env: dict[str, str],
) -> None:
    done = _executed_scale(service, policy)
    policy.set(Rule(name="allow-all", decision="allow"))
    undo = service.propose_undo(UndoRequest(entry_id=done.undo_id), requester="U0REQ")
    service.execute(undo.id, actor="U0REQ")
    assert kube.get(GEO)["spec"]["replicas"] == 1
    current = kube.get(GEO)
    current["spec"]["replicas"] = 3  # the same change made again, by hand
    kube.replace(current)
    sql(service.store, "UPDATE undo_entries SET state = 'active' WHERE id = ?", (done.undo_id,))
    with pytest.raises(StratusError) as caught:
        service.propose_undo(UndoRequest(entry_id=done.undo_id), requester="U0REQ")
    assert "outside Stratus" in caught.value.message, caught.value.message
    assert kube.get(GEO)["spec"]["replicas"] == 3
    checked = verify(service.store, env)
    assert checked.exit_code == 1 and done.execution_id in checked.stderr, checked.output


def test_recovery_does_not_judge_a_pending_record_on_edited_images(
    audit_key: str,
    service: ProposalService,
    policy: PolicyBox,
    kube: KubeClient,
    env: dict[str, str],
) -> None:
    done = _executed_scale(service, policy)
    # Made to look like a write a crash left pending, with an after-image the object is not
    # in: recovery would record the write as "not applied" and lose it.
    sql(service.store, "DROP TRIGGER audit_log_no_delete")
    sql(service.store, "DELETE FROM audit_log WHERE event = 'write'")
    sql(
        service.store,
        "UPDATE executions SET state = 'pending', owner = NULL, "
        "planned_after = json_set(planned_after, '$.spec.replicas', 7) WHERE id = ?",
        (done.execution_id,),
    )
    service.reconcile()
    [(state,)] = sql(
        service.store, "SELECT state FROM executions WHERE id = ?", (done.execution_id,)
    )
    assert state == "pending" and kube.get(GEO)["spec"]["replicas"] == 3
    checked = verify(service.store, env)
    assert checked.exit_code == 1 and done.execution_id in checked.stderr, checked.output


def _forged_copy(service: ProposalService, execution_id: str, *, backdoor: bool) -> str:
    """A pending record inserted by copying a genuine one under a new id (its digest and
    images come along), owned by a process that is gone; with ``backdoor`` its before-image
    (what undo would restore) is an attacker's image."""
    sql(service.store, "DROP TRIGGER IF EXISTS audit_log_no_delete")
    columns = [
        name
        for (_, name, *_rest) in sql(service.store, "PRAGMA table_info(executions)")
        if name not in ("id", "state", "owner", "written_rv")
    ]
    listed = ", ".join(columns)
    sql(
        service.store,
        f"INSERT INTO executions (id, state, owner, written_rv, {listed}) "
        f"SELECT 'ex-forged', 'pending', 'U0REQ@{socket.gethostname()}:999999999/dead', NULL, "
        f"{listed} FROM executions WHERE id = ?",
        (execution_id,),
    )
    if backdoor:
        sql(
            service.store,
            "UPDATE executions SET before_image = json_set(before_image, "
            "'$.spec.template.spec.containers[0].image', 'evil/miner:latest') "
            "WHERE id = 'ex-forged'",
        )
    return "ex-forged"


@pytest.mark.parametrize("backdoor", [False, True], ids=["copied", "backdoor-image"])
def test_recovery_does_not_vouch_for_a_forged_pending_record(
    audit_key: str,
    service: ProposalService,
    policy: PolicyBox,
    kube: KubeClient,
    env: dict[str, str],
    backdoor: bool,
) -> None:
    done = _executed_scale(service, policy)
    forged = _forged_copy(service, done.execution_id, backdoor=backdoor)
    service.reconcile()
    service.settle_earlier_writes(GEO)  # what a write to the object does first
    [(state,)] = sql(service.store, "SELECT state FROM executions WHERE id = ?", (forged,))
    assert state == "pending"  # left as found: nothing proves Stratus wrote it
    assert sql(service.store, "SELECT id FROM undo_entries WHERE execution_id = ?", (forged,)) == []
    assert (
        sql(
            service.store,
            "SELECT seq FROM audit_log WHERE json_extract(payload, '$.execution') = ?",
            (forged,),
        )
        == []
    )
    assert [e.id for e in service.undo_entries()] == [done.undo_id]
    checked = verify(service.store, env)
    assert checked.exit_code == 1 and forged in checked.stderr, checked.output
    # The real last write is still undone, and the forged record does not block it.
    policy.set(Rule(name="allow-all", decision="allow"))
    undo = service.propose_undo(UndoRequest(last=True), requester="U0REQ")
    assert undo.undo_entry == done.undo_id
    service.execute(undo.id, actor="U0REQ")
    assert kube.get(GEO)["spec"]["replicas"] == 1
    image = kube.get(GEO)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image != "evil/miner:latest"
