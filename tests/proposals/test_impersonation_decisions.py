"""Whom a write is sent as, for each way it was decided, against a lab with RBAC on and a
ServiceAccount that may write nothing itself (``tests/impersonation_lab.py``): the cluster's
audit log says who it was. People: ``U0ALICE`` → alice (may change deployments in hotel),
``U0BOB`` → bob (may only read them).

- an "Always allow" grant created by alice lets a later request run: sent as alice;
- a rule allows it without asking, requested by a person: sent as the requester (bob:
  refused by the cluster, nothing recorded);
- a rule allows a request Stratus made itself: sent as ``automatic`` (alice here), and refused
  before anything is sent when the mapping names no automatic identity.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.client import LabClient
from lab.runner import LabServer
from policies import impersonation
from policies.impersonation import ClusterRefused, NotMapped
from policies.model import Rule
from proposals.model import Proposal, ProposalState
from proposals.service import ProposalService
from store.db import Store
from tests.conftest import Lab
from tests.impersonation_lab import SA_USER, set_up
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import ObjectRef

S = ProposalState
SEARCH = ObjectRef("Deployment", "search", "hotel")
PEOPLE = """\
apiVersion: stratus/v1
kind: Impersonation
people:
  - who: U0ALICE
    user: alice
  - who: U0BOB
    user: bob
"""


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    server = LabServer(apps=["hotel"], rbac=True).start()
    folder = tmp_path_factory.mktemp("imperson-decisions")
    admin = server.write_kubeconfig(folder / "admin", "hotel")
    account = set_up(server, admin, folder / "stratus")
    yield Lab(server, admin), account
    server.stop()


@pytest.fixture
def kube(rbac_lab: tuple[Lab, Path]) -> Iterator[KubeClient]:
    client = KubeClient(kubeconfig=str(rbac_lab[1]))
    yield client
    client.close()


def _service(tmp_path: Path, kube: KubeClient, policy: PolicyBox, mapping: str) -> ProposalService:
    path = tmp_path / "impersonation.yaml"
    path.write_text(mapping)
    store = Store(tmp_path / "stratus.db")
    return ProposalService(
        store=store,
        executor=Executor(kube, store, lock_wait=0.5),
        policy=policy,
        impersonation=impersonation.parse(path),
    )


def _scale(service: ProposalService, replicas: int, requester: str) -> Proposal:
    return service.propose(
        action="scale", target=SEARCH, params={"replicas": replicas}, requester=requester
    )


def _writes(lab: Lab) -> list[dict[str, Any]]:
    """Every request that reached the cluster for deployment/search (dry-runs included)."""
    items = LabClient(lab.url).get("/lab/v1/audit")["items"]
    return [e for e in items if e.get("objectRef", {}).get("name") == "search"]


def _last_write(lab: Lab) -> dict[str, Any]:
    return dict([e for e in _writes(lab) if "dryRun" not in e["requestURI"]][-1])


def _refusal(service: ProposalService, proposal_id: str, actor: str) -> dict[str, Any]:
    """The details of the ClusterRefused the execution raises (kept, not the traceback: its
    frames would hold the client's response and its connection until the end of the run)."""
    try:
        service.execute(proposal_id, actor=actor)
    except ClusterRefused as refused:
        return dict(refused.details)
    raise AssertionError("the cluster did not refuse it")


def test_a_grant_runs_as_the_person_who_created_it(
    rbac_lab: tuple[Lab, Path], kube: KubeClient, tmp_path: Path
) -> None:
    policy = PolicyBox()
    policy.set(Rule(name="routine", decision="ask", remember=True, max_grant="2h"))
    service = _service(tmp_path, kube, policy, PEOPLE)
    first = _scale(service, 2, "U0BOB")
    service.answer(first.id, user="U0ALICE", choice="always")
    assert service.execute(first.id, actor="U0ALICE").state == S.EXECUTED
    later = _scale(service, 3, "agent:planner")
    assert later.state == S.APPROVED and later.decision.source == "grant"
    assert service.execute(later.id, actor="stratus").state == S.EXECUTED
    written = _last_write(rbac_lab[0])
    assert written["user"]["username"] == SA_USER
    assert written["impersonatedUser"]["username"] == "alice"
    assert written["responseStatus"]["code"] == 200
    service.store.close()


def test_a_rule_allowed_request_runs_as_its_requester_and_the_cluster_may_refuse_them(
    rbac_lab: tuple[Lab, Path], kube: KubeClient, tmp_path: Path
) -> None:
    policy = PolicyBox()
    policy.set(Rule(name="free", decision="allow"))
    service = _service(tmp_path, kube, policy, PEOPLE)
    proposal = _scale(service, 4, "U0BOB")
    assert proposal.state == S.APPROVED
    details = _refusal(service, proposal.id, "U0BOB")
    assert details["person"] == "U0BOB" and details["user"] == "bob"
    assert 'User "bob" cannot update resource "deployments"' in details["cluster"]
    failed = service.get(proposal.id)
    assert failed.state == S.FAILED and failed.execution_id is None
    assert service.executions.by_proposal(proposal.id) == []
    assert service.undo_entries() == [] or all(
        e.execution.proposal_id != proposal.id for e in service.undo_entries()
    )
    service.store.close()


def test_stratus_own_requests_run_as_automatic_or_are_refused_before_sending(
    rbac_lab: tuple[Lab, Path], kube: KubeClient, tmp_path: Path
) -> None:
    policy = PolicyBox()
    policy.set(Rule(name="free", decision="allow"))
    (tmp_path / "bare").mkdir()
    bare = _service(tmp_path / "bare", kube, policy, PEOPLE)
    proposal = _scale(bare, 5, "agent:planner")
    before = len(_writes(rbac_lab[0]))
    with pytest.raises(NotMapped) as unmapped:
        bare.execute(proposal.id, actor="stratus")
    assert unmapped.value.details["why"] == "automatic"
    assert bare.get(proposal.id).state == S.FAILED
    assert len(_writes(rbac_lab[0])) == before  # nothing reached the cluster, not a dry-run
    bare.store.close()

    (tmp_path / "auto").mkdir()
    automatic = _service(tmp_path / "auto", kube, policy, PEOPLE + "automatic:\n  user: alice\n")
    proposal = _scale(automatic, 5, "agent:planner")
    assert automatic.execute(proposal.id, actor="stratus").state == S.EXECUTED
    assert _last_write(rbac_lab[0])["impersonatedUser"]["username"] == "alice"
    automatic.store.close()
