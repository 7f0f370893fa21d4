"""Issue 19 §5, security: a user outside the approvers never causes a write.

For every action kind of the catalog, built with valid parameters against a lab object of its
kind, the proposal service asks a policy whose approvers are one group (``S0SRE``, no
self-approval, "Always allow" available). Every identity that is not an approver — another
person, a group id, ``*``, an @handle, machine identities, near-misses of the approver's id
(``tests.reliability.input_slack.NOT_APPROVERS``) and the requester, an S0SRE member, under
the self-approval ban — answers Approve and Always allow, on the proposal and, once a real
approver's approval executed it, on its undo and its force-undo where the kind is reversible.

Measured, not assumed: each attempt raises a typed ``StratusError``; the lab's audit log
(``GET /lab/v1/audit``) records no write from them; the store records no vote, grant or audit
row. The real approver's approval then executes, so the measure sees a write when there is
one.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from policies.model import Defaults, Rule
from proposals.model import Choice, Proposal, ProposalState
from proposals.service import ProposalService, UndoRequest
from store.clock import ManualClock
from store.db import Store
from store.errors import StratusError
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tests.reliability.input_slack import NOT_APPROVERS
from tools import actions
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef

S = ProposalState
SRE_GROUP = "S0SRE"
APPROVER = "U0ADMIN"
REQUESTER = "U0CAROL"  # an S0SRE member: an approver of everyone's changes but their own
CHOICES: tuple[Choice, ...] = ("approve", "always")
POLICY = Rule(
    name="sre-decides",
    decision="ask",
    remember=True,
    max_grant="1h",
    approvers=[SRE_GROUP],
    self_approval=False,
)
# Who answers: (user, the groups their surface resolved).
IDENTITIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    *((user, ()) for user in NOT_APPROVERS),
    (REQUESTER, (SRE_GROUP,)),
)


@dataclass(frozen=True)
class Target:
    kind: str
    name: str
    namespace: str
    params: dict[str, Any]


# One target for every catalog action: a lab object of its kind (``hosted`` makes the ones a
# fresh lab lacks).
TARGETS: dict[str, Target] = {
    "scale": Target("Deployment", "geo", "hotel", {"replicas": 2}),
    "rollout-restart": Target(
        "Deployment", "search", "hotel", {"restarted_at": "2026-01-01T00:00:00Z"}
    ),
    "rollout-undo": Target("Deployment", "profile", "hotel", {}),
    "set-image": Target("Deployment", "rate", "hotel", {"image": "stratus/hotel-rate:1.1"}),
    "set-env": Target("Deployment", "user", "hotel", {"variable": "EXTRA", "value": "1"}),
    "set-resources": Target("Deployment", "frontend", "hotel", {"limits": {"memory": "300Mi"}}),
    "set-command": Target("Deployment", "recommendation", "hotel", {"command": ["serve"]}),
    "set-node-selector": Target(
        "Deployment", "reservation", "hotel", {"node_selector": {"zone": "a"}}
    ),
    "patch-service": Target("Service", "geo", "hotel", {"target_port": 8099}),
    "create-service": Target(
        "Service", "geo-extra", "hotel", {"selector": {"app": "geo"}, "ports": [{"port": 80}]}
    ),
    "patch-configmap-key": Target(
        "ConfigMap", "hotel-config", "hotel", {"key": "new-key", "value": "x"}
    ),
    "restore-configmap-key": Target(
        "ConfigMap", "hotel-config", "hotel", {"key": "cache-ttl-seconds"}
    ),
    "restore-secret-key": Target("Secret", "mongodb-rate-auth", "hotel", {"key": "password"}),
    "patch-hpa": Target("HorizontalPodAutoscaler", "frontend", "shop", {"max_replicas": 6}),
    "cordon": Target("Node", "node-1", "", {}),
    "uncordon": Target("Node", "node-3", "", {}),
    "remove-taint": Target("Node", "node-2", "", {"key": "dedicated"}),
    "delete-pod": Target("Pod", "", "hotel", {}),  # a geo pod, named once the lab runs
    "delete-job": Target("Job", "cleanup", "hotel", {}),
    "delete-networkpolicy": Target("NetworkPolicy", "deny-all", "hotel", {}),
    "set-quota": Target("ResourceQuota", "compute", "shop", {"resource": "pods", "value": "40"}),
    "delete-resourcequota": Target("ResourceQuota", "spare", "shop", {}),
    "delete-pvc": Target("PersistentVolumeClaim", "scratch", "hotel", {}),
}


@dataclass
class Tally:
    kinds: int = 0
    attempts: int = 0
    refused: int = 0
    writes: int = 0  # lab writes from the refused attempts
    records: int = 0  # votes, grants and audit rows recorded for them
    executed: int = 0  # the real approver's approvals that wrote
    undos: int = 0  # undo and force-undo proposals answered
    skipped: dict[str, str] = field(default_factory=dict)


TALLY = Tally()


def _drift(kube: KubeClient, ref: ObjectRef, key: str, value: str) -> None:
    obj = kube.get(ref)
    obj["data"][key] = value
    kube.replace(obj)


def _host(kube: KubeClient) -> None:
    """What a fresh lab lacks for a kind: drifted keys to restore, a revision to roll back to,
    a tainted and a cordoned node, a Job, a NetworkPolicy and two quotas."""
    _drift(kube, ObjectRef("ConfigMap", "hotel-config", "hotel"), "cache-ttl-seconds", "5")
    secret = ObjectRef("Secret", "mongodb-rate-auth", "hotel")
    _drift(kube, secret, "password", base64.b64encode(b"rotated").decode())
    profile = kube.get(ObjectRef("Deployment", "profile", "hotel"))
    container = profile["spec"]["template"]["spec"]["containers"][0]
    container.setdefault("env", []).append({"name": "REVISION_TWO", "value": "1"})
    kube.replace(profile)
    for name, change in (("node-2", "taint"), ("node-3", "cordon")):
        node = kube.get(ObjectRef("Node", name))
        if change == "taint":
            taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
            node["spec"]["taints"] = [taint]
        else:
            node["spec"]["unschedulable"] = True
        kube.replace(node)
    pod = {
        "containers": [{"name": "cleanup", "image": "stratus/hotel-geo:1.0"}],
        "restartPolicy": "Never",
    }
    cron = kube.create(
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "hotel"},
            "spec": {
                "schedule": "0 3 * * *",
                "suspend": True,
                "jobTemplate": {"spec": {"template": {"spec": pod}}},
            },
        }
    )
    owner = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "name": "nightly",
        "uid": cron["metadata"]["uid"],
        "controller": True,
    }
    kube.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "cleanup", "namespace": "hotel", "ownerReferences": [owner]},
            "spec": {"template": {"spec": pod}},
        }
    )
    kube.create(  # never bound: no class provisions it
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "scratch", "namespace": "hotel"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "none-such",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )
    kube.create(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "deny-all", "namespace": "hotel"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
        }
    )
    for name in ("compute", "spare"):
        kube.create(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": name, "namespace": "shop"},
                "spec": {"hard": {"pods": "30"}},
            }
        )


@pytest.fixture(scope="module")
def hosted(lab_session: Lab) -> Iterator[Lab]:
    lab = lab_session
    lab.reset()
    kube = KubeClient(kubeconfig=str(lab.kubeconfig))
    try:
        _host(kube)
    finally:
        kube.close()
    lab.settle()
    yield lab
    lab.fresh_state = None  # the next module's ``lab`` resets


def _lab_writes(lab: Lab) -> int:
    """Writes the lab recorded (a server-side dry run writes nothing)."""
    items = lab.control.get("/lab/v1/audit")["items"]
    return sum("dryRun=All" not in i["requestURI"] for i in items)


def _records(service: ProposalService, proposal_id: str) -> tuple[int, int, int]:
    row = service.store.query(
        "SELECT (SELECT count(*) FROM audit_log) AS audit, (SELECT count(*) FROM grants) AS g"
    )[0]
    return len(service.get(proposal_id).votes), int(row["g"]), int(row["audit"])


def _attempts(lab: Lab, service: ProposalService, proposal: Proposal) -> None:
    """Every non-approver answers ``proposal`` every way: each refused, nothing recorded."""
    assert proposal.state == S.AWAITING_APPROVAL, (proposal.action, proposal.state)
    writes, records = _lab_writes(lab), _records(service, proposal.id)
    for user, groups in IDENTITIES:
        for choice in CHOICES:
            TALLY.attempts += 1
            with pytest.raises(StratusError) as refused:
                service.answer(proposal.id, user=user, groups=groups, choice=choice)
            assert refused.value.code in ("answer_refused", "impersonation"), refused.value
            TALLY.refused += 1
    TALLY.writes += _lab_writes(lab) - writes
    after = _records(service, proposal.id)
    TALLY.records += sum(a - b for a, b in zip(after, records, strict=True))
    assert _lab_writes(lab) == writes, f"{proposal.action}: a refused answer wrote"
    assert after == records, f"{proposal.action}: a refused answer was recorded {after}"
    assert service.get(proposal.id).state == S.AWAITING_APPROVAL


def _approve_and_execute(lab: Lab, service: ProposalService, proposal: Proposal) -> Proposal:
    writes = _lab_writes(lab)
    service.answer(proposal.id, user=APPROVER, groups=(SRE_GROUP,), choice="approve")
    done = service.execute(proposal.id, actor=APPROVER)
    assert done.state == S.EXECUTED, (done.action, done.state, done.reason)
    assert _lab_writes(lab) > writes, f"{proposal.action}: the approved write is not at the lab"
    TALLY.executed += 1
    return done


@pytest.fixture
def service(hosted: Lab, tmp_path: Path) -> Iterator[ProposalService]:
    kube = KubeClient(kubeconfig=str(hosted.kubeconfig))
    store = Store(tmp_path / "stratus.db", clock=ManualClock(datetime.now(UTC)))
    policy = PolicyBox()
    policy.set(POLICY, defaults=Defaults(approvers=[SRE_GROUP], self_approval=False))
    yield ProposalService(store=store, executor=Executor(kube, store, lock_wait=0.5), policy=policy)
    kube.close()
    store.close()


def _propose(service: ProposalService, name: str) -> Proposal:
    target = TARGETS[name]
    target_name = target.name
    if name == "delete-pod":
        pods = service.executor.kube.list("v1", "Pod", namespace="hotel")
        target_name = next(
            p["metadata"]["name"] for p in pods if p["metadata"]["name"].startswith("geo-")
        )
    values = {**target.params, "kind": target.kind, "target": target_name}
    values["namespace"] = target.namespace
    actions.build(name, values)  # valid parameters, as the catalog reads them
    return service.propose(
        action=name,
        kind=target.kind,
        name=target_name,
        namespace=target.namespace,
        params=target.params,
        requester=REQUESTER,
    )


@pytest.mark.parametrize("name", sorted(actions.CATALOG))
def test_no_non_approver_causes_a_write(hosted: Lab, service: ProposalService, name: str) -> None:
    try:
        proposal = _propose(service, name)
    except StratusError as why:
        TALLY.skipped[name] = why.message
        pytest.skip(f"the lab cannot host {name}: {why.message}")
    TALLY.kinds += 1
    _attempts(hosted, service, proposal)
    done = _approve_and_execute(hosted, service, proposal)
    if done.undo_id is None:
        return
    undo = service.propose_undo(UndoRequest(entry_id=done.undo_id), requester=REQUESTER)
    _attempts(hosted, service, undo)
    service.cancel(undo.id, actor=REQUESTER, reason="next: the force-undo")
    force = service.propose_undo(
        UndoRequest(entry_id=done.undo_id, force=True), requester=REQUESTER
    )
    _attempts(hosted, service, force)
    TALLY.undos += 2
    _approve_and_execute(hosted, service, force)


def test_zz_print_the_figures() -> None:
    skipped = "; ".join(f"{k}: {v}" for k, v in TALLY.skipped.items()) or "none"
    print(
        f"\nnon-approvers: {TALLY.kinds} action kinds x {len(IDENTITIES)} identities x "
        f"{len(CHOICES)} answers, and {TALLY.undos} undo/force-undo proposals: "
        f"{TALLY.attempts} attempts, {TALLY.refused} refused with a typed error, "
        f"lab writes from them: {TALLY.writes}, votes/grants/audit rows: {TALLY.records}; "
        f"the approver's {TALLY.executed} approvals executed; skipped kinds: {skipped}"
    )
    assert TALLY.writes == 0 and TALLY.records == 0
