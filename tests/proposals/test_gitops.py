"""Objects owned by Argo CD or Flux: the proposal warns that a sync will revert the change,
and a policy can match them with ``managed_by``."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies.loader import PolicyError, load
from policies.model import Match, Rule
from proposals.model import ProposalState
from proposals.service import ProposalService
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.gitops import managed_by
from tools.k8s import KubeClient
from tools.objects import ObjectRef


def owned(
    kube: KubeClient, name: str, *, labels: dict[str, str], annotations: dict[str, str]
) -> None:
    obj = kube.get(ObjectRef("Deployment", name, "hotel"))
    obj["metadata"].setdefault("labels", {}).update(labels)
    obj["metadata"].setdefault("annotations", {}).update(annotations)
    kube.replace(obj)


def test_owners_are_read_from_the_controllers_own_marks() -> None:
    argo = {
        "metadata": {
            "annotations": {
                "argocd.argoproj.io/tracking-id": "hotel-prod:apps/Deployment:hotel/geo"
            }
        }
    }
    flux = {
        "metadata": {
            "labels": {
                "kustomize.toolkit.fluxcd.io/name": "apps",
                "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
            }
        }
    }
    helm_only = {
        "metadata": {
            "labels": {"app.kubernetes.io/instance": "geo", "app.kubernetes.io/managed-by": "Helm"}
        }
    }
    assert managed_by(argo) is not None and managed_by(argo).app == "hotel-prod"  # type: ignore[union-attr]
    owner = managed_by(flux)
    assert owner is not None and owner.tool == "flux" and "flux-system/apps" in owner.app
    assert managed_by(helm_only) is None  # Helm alone does not revert anything
    assert managed_by(None) is None


def test_a_proposal_on_an_argo_cd_object_warns_and_a_policy_can_deny_it(
    lab: Lab, kube: KubeClient, service: ProposalService, policy: PolicyBox
) -> None:
    owned(
        kube,
        "geo",
        labels={},
        annotations={"argocd.argoproj.io/tracking-id": "hotel-prod:apps/Deployment:hotel/geo"},
    )
    policy.set(Rule(name="ask", decision="ask"))
    asked = service.propose(
        action="scale",
        kind="Deployment",
        name="geo",
        namespace="hotel",
        params={"replicas": 2},
        requester="cli:alice",
    )
    assert asked.state == ProposalState.AWAITING_APPROVAL
    assert asked.facts.managed_by == "argocd"
    assert any("Argo CD application hotel-prod" in w and "Git" in w for w in asked.warnings)
    policy.set(
        Rule(name="ask", decision="ask"),
        Rule(name="gitops-in-git", decision="deny", match=Match(managed_by=["argocd", "flux"])),
    )
    denied = service.propose(
        action="scale",
        kind="Deployment",
        name="geo",
        namespace="hotel",
        params={"replicas": 2},
        requester="cli:alice",
    )
    assert denied.state == ProposalState.DENIED and "gitops-in-git" in denied.decision.reason
    plain = service.propose(
        action="scale",
        kind="Deployment",
        name="rate",
        namespace="hotel",
        params={"replicas": 2},
        requester="cli:alice",
    )
    assert plain.state == ProposalState.AWAITING_APPROVAL and plain.warnings == []


def test_an_unknown_gitops_tool_in_a_policy_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(
        "rules:\n- name: x\n  decision: deny\n  match:\n    managed_by: [jenkins]\n"
    )
    with pytest.raises(PolicyError, match=r"p\.yaml.*managed_by"):
        load([tmp_path])
