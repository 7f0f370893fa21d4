"""Metadata the controllers copy as the real ones do, read with kubectl: an EndpointSlice
carries its Service's labels beside the two the EndpointSlice controller reserves, and a
Deployment's change-cause reaches its new ReplicaSet (so ``rollout history`` shows it) even
when it is annotated after ``set image``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    found = kubectl_for("system", lab, tmp_path)
    found.run("create", "namespace", "meta", namespace=None)
    return found


def _slice_labels(kubectl: Kubectl, service: str) -> dict[str, str]:
    slices = json.loads(
        kubectl.out(
            "get",
            "endpointslices",
            "-l",
            f"kubernetes.io/service-name={service}",
            "-o",
            "json",
            namespace="meta",
        )
    )
    assert len(slices["items"]) == 1
    labels: dict[str, str] = slices["items"][0]["metadata"]["labels"]
    return labels


def test_endpoint_slices_carry_the_service_labels(kubectl: Kubectl, lab: Lab) -> None:
    kubectl.run("create", "deployment", "web", "--image=nginx:1.27", namespace="meta")
    kubectl.run("expose", "deployment", "web", "--port=80", namespace="meta")
    kubectl.run("label", "service", "web", "team=payments", namespace="meta")
    lab.settle()
    assert _slice_labels(kubectl, "web") == {
        "app": "web",
        "team": "payments",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }
    kubectl.run("label", "service", "web", "team-", "tier=edge", namespace="meta")
    lab.settle()
    labels = _slice_labels(kubectl, "web")
    assert "team" not in labels and labels["tier"] == "edge"
    kubectl.run("create", "service", "clusterip", "db", "--clusterip=None", namespace="meta")
    lab.settle()
    assert _slice_labels(kubectl, "db")["service.kubernetes.io/headless"] == ""


def test_a_change_cause_annotated_after_set_image_shows_in_rollout_history(
    kubectl: Kubectl, lab: Lab
) -> None:
    kubectl.run("create", "deployment", "web", "--image=nginx:1.27-alpine", namespace="meta")
    lab.settle()
    kubectl.run("set", "image", "deploy/web", "nginx=nginx:1.26-alpine", namespace="meta")
    lab.settle()
    kubectl.run("annotate", "deploy/web", "kubernetes.io/change-cause=bump nginx", namespace="meta")
    lab.settle()
    history = kubectl.out("rollout", "history", "deploy/web", namespace="meta").strip().splitlines()
    assert history[-2:] == ["1         <none>", "2         bump nginx"], history
    replica_sets = json.loads(kubectl.out("get", "rs", "-o", "json", namespace="meta"))["items"]
    newest = max(
        replica_sets,
        key=lambda rs: int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]),
    )
    annotations = newest["metadata"]["annotations"]
    assert annotations["kubernetes.io/change-cause"] == "bump nginx"
    assert "kubectl.kubernetes.io/last-applied-configuration" not in annotations
    # Undo takes revision 1 back as revision 3: kubectl restores its annotations (no cause).
    kubectl.run("rollout", "undo", "deploy/web", namespace="meta")
    lab.settle()
    history = kubectl.out("rollout", "history", "deploy/web", namespace="meta").strip().splitlines()
    assert history[-2:] == ["2         bump nginx", "3         <none>"], history
