"""A fleet from one Stratus (issue 19 §4), against three labs at once over real HTTP: an
investigation in each cluster works on that cluster only, a proposal carries its cluster, an
undo goes back to the cluster its write was made in (whatever is the default now), a policy
matching one cluster does not match another, and locks are per cluster."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.llm import planner_from_env
from incidents.alert_store import AlertIntake
from incidents.alerts import AlertmanagerPayload
from incidents.model import IncidentState
from lab.llm.server import FakeChatServer
from policies.model import Match, Rule
from proposals.core import UndoRequest
from proposals.model import ProposalState
from store.audit import AuditLog
from store.db import Store
from tests.agents.alert_payloads import alert, payload
from tests.agents.llm.conftest import diagnosis_json, mitigation_json, step
from tests.fleet.conftest import CLUSTERS, FleetLabs, Stack, wired
from tests.proposals.conftest import PolicyBox
from tools import errors
from tools.objects import ObjectRef
from tools.reads import ClusterReader

ALLOW = Rule(name="allow-everything", decision="allow", allow_irreversible=True)
SCENARIO = "hotel-recommendation-scaled-to-zero"
RECOMMENDATION = ObjectRef("Deployment", "recommendation", "hotel")
FRONTEND = ObjectRef("Deployment", "frontend", "hotel")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    db = Store(tmp_path / "fleet.db")
    yield db
    db.close()


@pytest.fixture
def stack(labs: FleetLabs, store: Store) -> Iterator[Stack]:
    labs.reset()
    policy = PolicyBox()
    policy.set(ALLOW)
    with wired(labs, store, policy) as opened:
        yield opened


def test_an_investigation_in_each_cluster_fixes_that_cluster(labs: FleetLabs, stack: Stack) -> None:
    for cluster in CLUSTERS:
        labs.inject(cluster, SCENARIO)
    # One open incident per namespace *of a cluster*: three at once on `hotel`.
    opened = {c: stack.flow.start("hotel", requester="cli:alice", cluster=c) for c in CLUSTERS}
    assert not any(joined for _, joined in opened.values())
    assert len({incident.id for incident, _ in opened.values()}) == 3
    # Naming no cluster means the default one (the first configured): it joins a's.
    default, joined = stack.flow.start("hotel", requester="cli:bob")
    assert joined and default.id == opened["a"][0].id
    for cluster, (incident, _) in opened.items():
        done = stack.flow.advance(incident.id)
        assert done.state == IncidentState.RESOLVED, (cluster, done.reason)
        assert done.cluster == cluster
        proposals = stack.service.by_incident(incident.id)
        assert proposals and {p.cluster for p in proposals} == {cluster}
        assert stack.replicas(cluster) == 1
        mitigated = labs.control(cluster).get(f"/lab/v1/scenarios/{SCENARIO}/check")
        assert mitigated["mitigated"]


def test_a_proposal_carries_its_cluster_and_its_undo_goes_back_there(
    labs: FleetLabs, stack: Stack, store: Store
) -> None:
    proposal = stack.service.propose(
        action="scale",
        target=RECOMMENDATION,
        params={"replicas": 3},
        requester="cli:alice",
        cluster="b",
    )
    assert proposal.cluster == "b" and proposal.facts.cluster == "b"
    done = stack.service.execute(proposal.id, actor="cli:alice")
    assert done.state == ProposalState.EXECUTED
    assert [stack.replicas(c) for c in CLUSTERS] == [1, 3, 1]
    entry = stack.service.undo_entries()[0]
    assert entry.cluster == "b"
    write = AuditLog(store).newest(
        field="execution", value=entry.execution.id, having="record_digest"
    )
    assert write is not None and write.record.payload["cluster"] == "b"
    # Another Stratus on the same database whose default cluster is now c: the undo still
    # goes back to b, where the write was made.
    with wired(labs, store, stack.policy, order=("c", "a", "b")) as other:
        undo = other.service.propose_undo(UndoRequest(entry_id=entry.id), requester="cli:alice")
        assert undo.cluster == "b"
        assert other.service.execute(undo.id, actor="cli:alice").state == ProposalState.EXECUTED
    assert [stack.replicas(c) for c in CLUSTERS] == [1, 1, 1]


def test_a_policy_matching_one_cluster_does_not_match_another(stack: Stack) -> None:
    stack.policy.set(
        Rule(name="freeze-b", decision="deny", match=Match(clusters=["b"])),
        Rule(name="ask-prod", decision="ask", match=Match(clusters=["c*"], namespaces=["hotel"])),
        ALLOW,
    )
    decided = {
        cluster: stack.service.propose(
            action="scale",
            target=FRONTEND,
            params={"replicas": 2},
            requester="cli:alice",
            cluster=cluster,
        )
        for cluster in CLUSTERS
    }
    assert decided["a"].state == ProposalState.APPROVED
    assert decided["b"].state == ProposalState.DENIED
    assert "freeze-b" in decided["b"].decision.rules
    assert decided["c"].state == ProposalState.AWAITING_APPROVAL
    assert "ask-prod" in decided["c"].decision.rules


def test_locks_are_per_cluster(stack: Stack) -> None:
    proposals = {
        cluster: stack.service.propose(
            action="scale",
            target=FRONTEND,
            params={"replicas": 2},
            requester="cli:alice",
            cluster=cluster,
        )
        for cluster in ("a", "b")
    }
    executor_a = stack.service.deps.on("a").executor
    with executor_a.locked(FRONTEND, actor="someone-else"):
        # Held in a: the same deployment in b is another object, written at once.
        done = stack.service.execute(proposals["b"].id, actor="cli:alice")
        assert done.state == ProposalState.EXECUTED
        with pytest.raises(errors.LockHeld):
            stack.service.execute(proposals["a"].id, actor="cli:alice")
    assert stack.replicas("a", FRONTEND) == 1 and stack.replicas("b", FRONTEND) == 2
    # Released: the approval still stands, and it runs in a.
    assert stack.service.execute(proposals["a"].id, actor="cli:alice").state == "executed"
    assert stack.replicas("a", FRONTEND) == 2


def test_an_unknown_cluster_is_refused_and_nothing_is_stored(stack: Stack) -> None:
    with pytest.raises(errors.UnknownCluster) as refused:
        stack.flow.start("hotel", requester="cli:alice", cluster="prod")
    assert refused.value.details["known"] == list(CLUSTERS)
    with pytest.raises(errors.UnknownCluster):
        stack.service.propose(
            action="scale",
            target=FRONTEND,
            params={"replicas": 2},
            requester="cli:alice",
            cluster="prod",
        )
    assert stack.flow.incidents.recent() == [] and stack.service.recent() == []


def test_an_alert_opens_its_incident_in_the_cluster_its_label_names(stack: Stack) -> None:
    intake = AlertIntake(stack.flow)
    body = payload(alert(cluster="b"), group_key='{}:{cluster="b",namespace="hotel"}')
    result = intake.receive(AlertmanagerPayload.model_validate(body))
    (opened,) = result.opened
    assert stack.flow.incidents.get(opened).cluster == "b"
    # The same alert from cluster c is another group, another incident.
    body = payload(alert(cluster="c"), group_key='{}:{cluster="c",namespace="hotel"}')
    (other,) = intake.receive(AlertmanagerPayload.model_validate(body)).opened
    assert stack.flow.incidents.get(other).cluster == "c"
    # No cluster label: the default cluster, the first configured.
    (default,) = intake.receive(AlertmanagerPayload.model_validate(payload(alert()))).opened
    assert stack.flow.incidents.get(default).cluster == "a"
    rows = stack.service.store.query("SELECT payload FROM audit_log WHERE event = 'alert'")
    assert [json.loads(row["payload"]).get("cluster") for row in rows] == ["b", "c", "a"]


def test_an_alert_naming_an_unknown_cluster_or_several_is_refused_not_guessed(
    stack: Stack,
) -> None:
    intake = AlertIntake(stack.flow)
    result = intake.receive(AlertmanagerPayload.model_validate(payload(alert(cluster="prod"))))
    assert result.opened == [] and len(result.refused) == 1
    assert "'prod' is not one this Stratus serves (it serves a, b, c)" in result.refused[0].reason
    mixed = payload(alert(cluster="a"), alert("KubePodNotReady", cluster="b"))
    result = intake.receive(AlertmanagerPayload.model_validate(mixed))
    assert result.opened == [] and "several clusters (a, b)" in result.refused[0].reason
    assert stack.flow.incidents.recent() == []
    refusals = stack.service.store.query(
        "SELECT payload FROM audit_log WHERE event = 'alert_refused'"
    )
    assert len(refusals) == 2


def test_always_allow_in_one_cluster_does_not_allow_the_change_in_another(stack: Stack) -> None:
    stack.policy.set(Rule(name="routine", decision="ask", remember=True, max_grant="8h"))

    def scale(cluster: str, replicas: int) -> ProposalState:
        proposal = stack.service.propose(
            action="scale",
            target=FRONTEND,
            params={"replicas": replicas},
            requester="cli:bob",
            cluster=cluster,
        )
        return proposal.state

    first = stack.service.propose(
        action="scale", target=FRONTEND, params={"replicas": 2}, requester="cli:bob", cluster="a"
    )
    stack.service.answer(first.id, user="U1", choice="always")
    (grant,) = stack.service.grants.all()
    assert grant.cluster == "a"
    assert scale("a", 3) == ProposalState.APPROVED  # the grant stands for a
    assert scale("b", 3) == ProposalState.AWAITING_APPROVAL  # not for b
    assert stack.service.grants.tampered() == []


def test_the_model_reads_the_incidents_own_cluster(labs: FleetLabs, stack: Stack) -> None:
    labs.inject("b", SCENARIO)
    with FakeChatServer() as model:
        model.load(
            [
                {"tool_calls": [{"name": "workload_health", "arguments": {}}]},
                {"content": diagnosis_json()},
                {"content": mitigation_json(step("scale", "Deployment", "recommendation"))},
            ]
        )
        env = {"OPENAI_BASE_URL": model.url, "OPENAI_API_KEY": "sk-test", "STRATUS_MODEL": "m"}
        # Built as `stratus serve` builds it: with the default cluster's reader (a).
        llm = planner_from_env(ClusterReader(stack.clusters.client("a")), env)
        assert llm is not None
        stack.flow.llm = llm
        stack.flow.planners = dataclasses.replace(stack.flow.planners, llm=llm)
        incident, _ = stack.flow.start("hotel", requester="cli:alice", cluster="b")
        stack.flow.advance(incident.id, budget=3)
        read = next(
            m["content"]
            for request in model.requests
            for m in request["messages"]
            if m["role"] == "tool"
        )
    # b's recommendation, scaled to zero there (a's wants one replica).
    assert '"name":"recommendation","desired":0' in read, read
