"""The proposal service's promises, tried on the lab: the approved plan is the executed plan,
undo is a proposal of its own, grants die with the rule that allowed them, stored records
cannot be turned against another object, and every change is one event in the stream."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from typing import Any

import pytest

from policies.model import Match, Rule
from proposals.events import EventType
from proposals.model import Proposal, ProposalState
from proposals.service import ProposalService, Superseded, UndoRequest
from store.clock import ManualClock
from tests.proposals.conftest import PolicyBox
from tools import errors
from tools.k8s import KubeClient
from tools.objects import ObjectRef

S = ProposalState
GEO = ObjectRef("Deployment", "geo", "hotel")
ASK = Rule(name="ask-everything", decision="ask")
RESTARTED = "kubectl.kubernetes.io/restartedAt"


def scale(service: ProposalService, replicas: int, requester: str = "U0REQ") -> Proposal:
    return service.propose(
        action="scale", target=GEO, params={"replicas": replicas}, requester=requester
    )


def approve_and_execute(service: ProposalService, proposal: Proposal) -> Proposal:
    if proposal.state == S.AWAITING_APPROVAL:
        service.answer(proposal.id, user="U0APPROVER", choice="approve")
    return service.execute(proposal.id, actor="U0APPROVER")


def test_a_value_changed_after_approval_is_not_overwritten(
    service: ProposalService, policy: PolicyBox, kube: KubeClient
) -> None:
    policy.set(ASK)
    proposal = scale(service, 3)
    service.answer(proposal.id, user="U0APPROVER", choice="approve")
    current = kube.get(GEO)
    current["spec"]["replicas"] = 5  # someone else, while the approver read the prompt
    kube.replace(current)
    with pytest.raises(Superseded) as caught:
        service.execute(proposal.id, actor="U0APPROVER")
    assert kube.get(GEO)["spec"]["replicas"] == 5  # nothing was written
    old, new = caught.value.old, caught.value.new
    assert old.state == S.SUPERSEDED and new is not None and old.superseded_by == new.id
    assert new.state == S.AWAITING_APPROVAL and new.supersedes == old.id
    assert "-  replicas: 1" in (new.previous_diff or "") and "-  replicas: 5" in new.plan.diff
    assert service.store.query("SELECT COUNT(*) AS n FROM executions")[0]["n"] == 0


def test_a_label_a_deny_rule_matches_added_after_approval_stops_the_write(
    service: ProposalService, policy: PolicyBox, kube: KubeClient
) -> None:
    policy.set(
        ASK,
        Rule(name="frozen", decision="deny", match=Match(labels={"freeze": "true"})),
    )
    proposal = scale(service, 3)
    service.answer(proposal.id, user="U0APPROVER", choice="approve")
    current = kube.get(GEO)
    current["metadata"].setdefault("labels", {})["freeze"] = "true"
    kube.replace(current)
    with pytest.raises(Superseded) as caught:
        service.execute(proposal.id, actor="U0APPROVER")
    assert kube.get(GEO)["spec"]["replicas"] == 1
    assert caught.value.new is not None and caught.value.new.state == S.DENIED
    assert "frozen" in caught.value.message


def test_a_status_update_alone_does_not_supersede(
    service: ProposalService, policy: PolicyBox, kube: KubeClient, lab: Any
) -> None:
    policy.set(ASK)
    proposal = scale(service, 2)
    service.answer(proposal.id, user="U0APPROVER", choice="approve")
    lab.settle()  # controllers write status and annotations; no human-visible change
    done = service.execute(proposal.id, actor="U0APPROVER")
    assert done.state == S.EXECUTED and kube.get(GEO)["spec"]["replicas"] == 2


def test_executing_twice_writes_once(service: ProposalService, policy: PolicyBox) -> None:
    policy.set(Rule(name="allow-scale", decision="allow", match=Match(actions=["scale"])))
    proposal = scale(service, 2)
    assert proposal.state == S.APPROVED and proposal.decision.rule == "allow-scale"
    first = service.execute(proposal.id, actor="U0A")
    second = service.execute(proposal.id, actor="U0B")
    assert first.state == second.state == S.EXECUTED
    assert service.store.query("SELECT COUNT(*) AS n FROM executions")[0]["n"] == 1


def test_undo_is_its_own_action_a_freeze_on_scale_does_not_block_it(
    service: ProposalService, policy: PolicyBox, kube: KubeClient
) -> None:
    policy.set(ASK)
    written = approve_and_execute(service, scale(service, 3))
    assert written.undo_id
    policy.set(ASK, Rule(name="freeze-scale", decision="deny", match=Match(actions=["scale"])))
    assert scale(service, 4).state == S.DENIED
    undo = service.propose_undo(UndoRequest(entry_id=written.undo_id), requester="U0REQ")
    assert undo.action == "undo" and undo.state == S.AWAITING_APPROVAL
    done = approve_and_execute(service, undo)
    assert done.state == S.EXECUTED and kube.get(GEO)["spec"]["replicas"] == 1
    assert service.get(written.id).state == S.UNDONE
    assert service.get(written.id).undone_by == undo.id
    # …unless a rule names undo.
    policy.set(ASK, Rule(name="no-undo", decision="deny", match=Match(actions=["undo"])))
    again = approve_and_execute(service, scale(service, 2))
    blocked = service.propose_undo(UndoRequest(entry_id=again.undo_id), requester="U0REQ")
    assert blocked.state == S.DENIED and "no-undo" in blocked.decision.reason


def test_undo_of_an_undone_entry_says_so_and_last_never_reaches_further_back(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(Rule(name="allow", decision="allow"))
    first = approve_and_execute(service, scale(service, 2))
    second = approve_and_execute(service, scale(service, 3))
    undo = service.propose_undo(UndoRequest(last=True), requester="U0REQ")
    assert undo.undo_entry == second.undo_id
    service.execute(undo.id, actor="U0REQ")
    with pytest.raises(errors.Invalid, match="already undone") as caught:
        service.propose_undo(UndoRequest(last=True), requester="U0REQ")
    assert caught.value.details["next"] == first.undo_id
    with pytest.raises(errors.Invalid, match="already undone"):
        service.propose_undo(UndoRequest(entry_id=second.undo_id), requester="U0REQ")


def test_a_second_undo_request_for_the_same_entry_gets_the_open_proposal(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(ASK)
    written = approve_and_execute(service, scale(service, 3))
    one = service.propose_undo(UndoRequest(entry_id=written.undo_id), requester="U0A")
    two = service.propose_undo(UndoRequest(last=True), requester="U0B")
    assert one.id == two.id


def test_an_entry_can_be_dropped_explicitly_and_it_is_audited(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(Rule(name="allow", decision="allow"))
    written = approve_and_execute(service, scale(service, 3))
    assert written.undo_id is not None
    dropped = service.drop_undo_entry(written.undo_id, actor="U0OPS", reason="re-created")
    assert dropped.state == "dropped" and dropped.undone_by == "U0OPS"
    with pytest.raises(errors.Invalid, match="dropped"):
        service.propose_undo(UndoRequest(entry_id=written.undo_id), requester="U0OPS")
    rows = service.store.query("SELECT actor, payload FROM audit_log WHERE event = 'undo-dropped'")
    assert rows and json.loads(rows[0]["payload"])["reason"] == "re-created"
    types = [e.event.type for e in service.events.since(0, proposal_id=written.id)]
    assert EventType.UNDO_DROPPED in types


def test_an_irreversible_action_has_no_undo_id(
    service: ProposalService, policy: PolicyBox, kube: KubeClient
) -> None:
    policy.set(ASK)
    pod = kube.list("v1", "Pod", namespace="hotel", label_selector="app=geo")[0]
    proposal = service.propose(
        action="delete-pod",
        target=ObjectRef("Pod", pod["metadata"]["name"], "hotel"),
        requester="U0REQ",
    )
    done = approve_and_execute(service, proposal)
    assert done.state == S.EXECUTED and done.undo_id is None and not done.reversible


def test_grants_die_with_the_rule_that_allowed_them(
    service: ProposalService, policy: PolicyBox, clock: ManualClock
) -> None:
    remember = Rule(name="routine", decision="ask", remember=True, max_grant="8h")
    policy.set(remember)
    service.answer(scale(service, 2).id, user="U1", choice="always")
    assert scale(service, 3).state == S.APPROVED  # the grant allows it
    # max_grant cut to 1h: a 2-hour-old 8h grant no longer counts
    policy.set(Rule(name="routine", decision="ask", remember=True, max_grant="1h"))
    clock.advance(2 * 3600)
    assert scale(service, 4).state == S.AWAITING_APPROVAL
    # the rule no longer remembers, or is gone, or the policy is empty: no grant counts
    clock.advance(-2 * 3600 + 60)
    policy.set(Rule(name="routine", decision="ask"))
    assert scale(service, 5).state == S.AWAITING_APPROVAL
    policy.set()
    assert scale(service, 6).state == S.AWAITING_APPROVAL
    policy.set(remember)
    assert scale(service, 7).state == S.APPROVED  # restored rule: the grant counts again
    clock.advance(timedelta(hours=9).total_seconds())
    assert scale(service, 8).state == S.AWAITING_APPROVAL  # and it still expires


def _edit_execution(service: ProposalService, execution_id: str, **columns: Any) -> None:
    connection = sqlite3.connect(service.store.path)
    for column, value in columns.items():
        connection.execute(
            f"UPDATE executions SET {column} = ? WHERE id = ?", [value, execution_id]
        )
    connection.commit()
    connection.close()


def test_an_edited_before_image_never_writes_another_object(
    service: ProposalService, policy: PolicyBox, kube: KubeClient
) -> None:
    policy.set(Rule(name="allow", decision="allow"))
    written = approve_and_execute(service, scale(service, 3))
    [row] = service.store.query("SELECT before_image FROM executions")
    image = json.loads(row["before_image"])
    image["metadata"]["namespace"] = "shop"  # point the undo somewhere else
    _edit_execution(service, written.execution_id or "", before_image=json.dumps(image))
    with pytest.raises(errors.Tampered):
        service.propose_undo(UndoRequest(entry_id=written.undo_id), requester="U0REQ")
    # Moving the whole record (namespace too) does not help: the digest covers it.
    _edit_execution(service, written.execution_id or "", namespace="shop")
    with pytest.raises(errors.Tampered):
        service.propose_undo(UndoRequest(last=True), requester="U0REQ")
    assert kube.get(GEO)["spec"]["replicas"] == 3
    assert kube.find(ObjectRef("Deployment", "geo", "shop")) is None


def test_every_change_is_one_typed_event_in_order(
    service: ProposalService, policy: PolicyBox
) -> None:
    policy.set(ASK)
    cursor = service.events.last_seq()
    written = approve_and_execute(service, scale(service, 2))
    undo = service.propose_undo(UndoRequest(last=True), requester="U0REQ")
    approve_and_execute(service, undo)
    envelopes = service.events.since(cursor)
    assert [e.seq for e in envelopes] == sorted(e.seq for e in envelopes)
    states = [
        (e.event.proposal_id, e.event.state)
        for e in envelopes
        if e.event.type == EventType.STATE_CHANGED
    ]
    assert states == [
        (written.id, "awaiting_approval"),
        (written.id, "approved"),
        (written.id, "executing"),
        (written.id, "executed"),
        (undo.id, "awaiting_approval"),
        (undo.id, "approved"),
        (undo.id, "executing"),
        (undo.id, "executed"),
        (written.id, "undone"),
    ]
    assert all(e.event.schema_version == 1 for e in envelopes)
    assert service.events.since(envelopes[-1].seq) == []
    # each state change has its audit row
    moves = service.store.query(
        "SELECT COUNT(*) AS n FROM audit_log WHERE event IN ('proposal', 'vote')"
    )[0]["n"]
    assert moves >= 9


def test_a_proposal_for_nothing_to_change_is_refused(
    service: ProposalService, policy: PolicyBox
) -> None:
    from proposals.errors import NoChange

    policy.set(ASK)
    with pytest.raises(NoChange, match="already looks like that"):
        scale(service, 1)


def test_a_restart_within_the_second_of_the_last_one_still_restarts(
    service: ProposalService, policy: PolicyBox, kube: KubeClient, clock: ManualClock
) -> None:
    """kubectl stamps ``restartedAt`` in whole seconds. A restart asked for within the same
    second as the last one (a fault's own restart, a rollout just begun) must still restart:
    seen in issue 18's unfolding test, where the fix's "restart its readers" step became
    "already looks like that; nothing to do" and the pods kept the bad value."""
    policy.set(ASK)
    second = clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    geo = kube.get(GEO)
    geo["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {})[RESTARTED] = (
        second
    )
    kube.replace(geo)
    proposal = service.propose(action="rollout-restart", target=GEO, requester="U0REQ")
    done = approve_and_execute(service, proposal)
    assert done.state == S.EXECUTED
    template = kube.get(GEO)["spec"]["template"]["metadata"]["annotations"]
    assert template[RESTARTED] != second


def test_cancel_by_requester_or_approver_only(service: ProposalService, policy: PolicyBox) -> None:
    from proposals.errors import AnswerRefused

    policy.set(Rule(name="ops", decision="ask", approvers=["U0OPS"]))
    proposal = scale(service, 2)
    with pytest.raises(AnswerRefused):
        service.cancel(proposal.id, actor="U0STRANGER")
    cancelled = service.cancel(proposal.id, actor="U0REQ", reason="wrong one")
    assert cancelled.state == S.CANCELLED
    with pytest.raises(AnswerRefused, match="already cancelled"):
        service.answer(proposal.id, user="U0OPS", choice="approve")


def test_the_whole_path_from_proposal_to_undo_is_one_event_stream(
    service: ProposalService, policy: PolicyBox, kube: KubeClient
) -> None:
    policy.set(ASK)
    cursor = service.events.last_seq()
    proposal = service.propose(
        action="scale", target=GEO, params={"replicas": 2}, requester="U0REQ"
    )
    assert [p.id for p in service.pending()] == [proposal.id]
    service.answer(proposal.id, user="U0APPROVER", choice="approve")
    done = service.execute(proposal.id, actor="U0APPROVER")
    assert done.state == S.EXECUTED and kube.get(GEO)["spec"]["replicas"] == 2
    undo = service.propose_undo(UndoRequest(last=True), requester="U0REQ")
    service.answer(undo.id, user="U0APPROVER", choice="approve")
    service.execute(undo.id, actor="U0APPROVER")
    assert service.get(proposal.id).state == S.UNDONE
    assert len(service.events.since(cursor)) >= 10


# ---------------------------------------------------------------- found by trying to break it


def test_always_allow_is_refused_where_a_rule_needs_a_quorum(
    service: ProposalService, policy: PolicyBox
) -> None:
    from proposals.errors import AnswerRefused

    policy.set(Rule(name="two", decision="ask", remember=True, max_grant="1h", min_approvals=2))
    proposal = scale(service, 2)
    with pytest.raises(AnswerRefused, match="needs 2 approvals"):
        service.answer(proposal.id, user="U0BOB", choice="always")
    from policies.grants import GrantBook

    assert GrantBook(service.store).all() == []
    assert scale(service, 3).state == S.AWAITING_APPROVAL


def test_a_change_outside_the_diff_or_a_recreated_object_supersedes(
    service: ProposalService, policy: PolicyBox, kube: KubeClient
) -> None:
    policy.set(ASK)
    proposal = scale(service, 3)
    service.answer(proposal.id, user="U0APPROVER", choice="approve")
    current = kube.get(GEO)
    current["spec"]["template"]["spec"]["containers"][0]["image"] = "evil/miner:1"
    kube.replace(current)
    with pytest.raises(Superseded):
        service.execute(proposal.id, actor="U0APPROVER")
    assert kube.get(GEO)["spec"]["replicas"] == 1
    # Deleted and re-created under the same name: same spec, another object.
    fresh = scale(service, 3)
    service.answer(fresh.id, user="U0APPROVER", choice="approve")
    original = kube.get(GEO)
    kube.delete(GEO)
    from tools.objects import for_create

    kube.create(for_create(original))
    with pytest.raises(Superseded):
        service.execute(fresh.id, actor="U0APPROVER")
    assert kube.get(GEO)["spec"]["replicas"] == 1


def test_an_approval_is_not_forever(
    service: ProposalService, policy: PolicyBox, clock: ManualClock, kube: KubeClient
) -> None:
    from proposals.errors import NotExecutable

    policy.set(ASK)
    proposal = scale(service, 2)
    service.answer(proposal.id, user="U0APPROVER", choice="approve")
    clock.advance(31 * 60)
    with pytest.raises(NotExecutable, match="approved but not executed"):
        service.execute(proposal.id, actor="U0APPROVER")
    assert service.get(proposal.id).state == S.EXPIRED
    assert kube.get(GEO)["spec"]["replicas"] == 1


def test_an_entry_with_an_open_undo_cannot_be_dropped(
    service: ProposalService, policy: PolicyBox
) -> None:
    from proposals.errors import NotExecutable

    policy.set(ASK)
    written = approve_and_execute(service, scale(service, 3))
    undo = service.propose_undo(UndoRequest(entry_id=written.undo_id), requester="U0REQ")
    with pytest.raises(NotExecutable, match="open undo proposal"):
        service.drop_undo_entry(written.undo_id or "", actor="U0OPS", reason="race")
    service.cancel(undo.id, actor="U0REQ")
    assert service.drop_undo_entry(written.undo_id or "", actor="U0OPS", reason="ok").state == (
        "dropped"
    )


def test_a_reactivated_entry_is_refused_before_anything_is_written(
    service: ProposalService, policy: PolicyBox, kube: KubeClient
) -> None:
    policy.set(Rule(name="allow", decision="allow"))
    written = approve_and_execute(service, scale(service, 3))
    undo = service.propose_undo(UndoRequest(last=True), requester="U0REQ")
    service.execute(undo.id, actor="U0REQ")
    current = kube.get(GEO)
    current["spec"]["replicas"] = 4  # someone scales it again
    kube.replace(current)
    connection = sqlite3.connect(service.store.path)
    connection.execute(
        "UPDATE undo_entries SET state = 'active' WHERE id = ?", [written.undo_id]
    )  # an edited database puts the undone entry back
    connection.commit()
    connection.close()
    from tools.errors import Tampered

    # The stack itself refuses the entry, before a proposal to undo it again exists.
    with pytest.raises(Tampered, match="put back on the undo stack outside Stratus"):
        service.propose_undo(UndoRequest(entry_id=written.undo_id, force=True), requester="U0REQ")
    assert kube.get(GEO)["spec"]["replicas"] == 4  # nothing was written
    assert (
        service.store.query("SELECT COUNT(*) AS n FROM executions WHERE state = 'pending'")[0]["n"]
        == 0
    )
    assert service.reconcile() == []  # nothing wedged


def test_a_recomputed_digest_does_not_pass_without_the_audit_log_agreeing(
    service: ProposalService, policy: PolicyBox, kube: KubeClient
) -> None:
    from store import integrity
    from store.records import ExecutionLog

    policy.set(Rule(name="allow", decision="allow"))
    written = approve_and_execute(service, scale(service, 3))
    execution = ExecutionLog(service.store).get(written.execution_id or "")
    assert execution is not None and execution.before_image is not None
    forged = json.loads(json.dumps(execution.before_image))
    forged["spec"]["template"]["spec"]["containers"][0]["image"] = "evil/miner:latest"
    material = {**execution.integrity_material(), "before": forged}
    _edit_execution(
        service,
        execution.id,
        before_image=json.dumps(forged),
        before_digest=integrity.digest(material),
    )
    with pytest.raises(errors.Tampered, match="audit log"):
        service.propose_undo(UndoRequest(last=True), requester="U0REQ")
    image = kube.get(GEO)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image != "evil/miner:latest"
