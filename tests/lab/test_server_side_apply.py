"""Server-side apply with every kubectl of the matrix and the official Python client: field
managers and ``managedFields``, conflicts worded as a real API server words them, forcing,
pruning what an applier gave up, the client-side to server-side migration, and
``kubectl diff --server-side``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException

from tests.conftest import KUBECTL_ALL, Kubectl, Lab, kubectl_for

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ssa-web
  labels: {{app: ssa-web{extra_label}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: ssa-web}}}}
  template:
    metadata: {{labels: {{app: ssa-web}}}}
    spec:
      containers:
      - name: web
        image: {image}
        ports: [{{containerPort: 80}}]
"""


@pytest.fixture(params=KUBECTL_ALL)
def kubectl(request: pytest.FixtureRequest, lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for(request.param, lab, tmp_path)


def _manifest(
    tmp_path: Path, *, replicas: int = 2, image: str = "nginx:1.25", extra_label: str = ""
) -> str:
    path = tmp_path / "web.yaml"
    path.write_text(
        DEPLOYMENT.format(
            replicas=replicas, image=image, extra_label=f", {extra_label}" if extra_label else ""
        )
    )
    return str(path)


def _live(kubectl: Kubectl) -> dict[str, Any]:
    # kubectl hides managedFields from 1.21 on; 1.20 has no flag and always shows them.
    flags = [] if kubectl.name == "1.20" else ["--show-managed-fields"]
    found: dict[str, Any] = json.loads(
        kubectl.out("get", "deploy", "ssa-web", "-o", "json", *flags)
    )
    return found


def _managers(obj: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {
        (m["manager"], m["operation"], m.get("subresource", "")): m["fieldsV1"]
        for m in obj["metadata"]["managedFields"]
    }


def _user_agent_manager(kubectl: Kubectl) -> str:
    """What a write without ``--field-manager`` is recorded as: the User-Agent's program name
    (the Google Cloud CLI's versioned binaries call themselves ``kubectl.1.NN``)."""
    return "kubectl" if kubectl.name in ("system", "1.20") else f"kubectl.{kubectl.name}"


def test_apply_records_the_manager_conflicts_with_a_scale_and_forces(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    created = kubectl.run("apply", "--server-side", "-f", _manifest(tmp_path))
    assert created.stdout.strip() == "deployment.apps/ssa-web serverside-applied"
    owners = _managers(_live(kubectl))
    applied = owners[("kubectl", "Apply", "")]
    assert applied["f:spec"]["f:replicas"] == {}
    container = applied["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert container == {
        ".": {},
        "f:image": {},
        "f:name": {},
        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
    }
    # The same configuration again changes nothing and conflicts with nobody.
    again = kubectl.run("apply", "--server-side", "-f", _manifest(tmp_path))
    assert again.returncode == 0, again.stderr

    kubectl.run("scale", "deploy", "ssa-web", "--replicas=5")
    refused = kubectl.run(
        "apply", "--server-side", "-f", _manifest(tmp_path, replicas=4), check=False
    )
    assert refused.returncode == 1
    scaler = _user_agent_manager(kubectl)
    assert refused.stderr.startswith(
        f'error: Apply failed with 1 conflict: conflict with "{scaler}" with subresource "scale" '
        "using apps/v1: .spec.replicas\n"
        "Please review the fields above--they currently have other managers."
    ), refused.stderr
    assert _live(kubectl)["spec"]["replicas"] == 5

    forced = kubectl.run(
        "apply", "--server-side", "--force-conflicts", "-f", _manifest(tmp_path, replicas=4)
    )
    assert forced.stdout.strip() == "deployment.apps/ssa-web serverside-applied"
    live = _live(kubectl)
    assert live["spec"]["replicas"] == 4
    # The scaler owned nothing else, so its entry is gone.
    assert (scaler, "Update", "scale") not in _managers(live)


def test_apply_removes_what_the_applier_gave_up_but_not_what_others_own(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    kubectl.run("apply", "--server-side", "-f", _manifest(tmp_path, extra_label="tier: web"))
    kubectl.run("label", "deploy", "ssa-web", "owner=ops")
    kubectl.run("apply", "--server-side", "-f", _manifest(tmp_path))
    labels = _live(kubectl)["metadata"]["labels"]
    assert labels == {"app": "ssa-web", "owner": "ops"}


def test_two_appliers_share_equal_values_and_conflict_on_different_ones(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    kubectl.run("apply", "--server-side", "-f", _manifest(tmp_path))
    shared = kubectl.run(
        "apply", "--server-side", "--field-manager=team-b", "-f", _manifest(tmp_path)
    )
    assert shared.returncode == 0, shared.stderr
    refused = kubectl.run(
        "apply",
        "--server-side",
        "--field-manager=team-b",
        "-f",
        _manifest(tmp_path, replicas=3, image="nginx:1.26"),
        check=False,
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        'error: Apply failed with 2 conflicts: conflicts with "kubectl":\n'
        '- .spec.replicas\n- .spec.template.spec.containers[name="web"].image\n'
    ), refused.stderr


def test_client_side_apply_moves_to_server_side_apply_without_a_conflict(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    kubectl.run("apply", "-f", _manifest(tmp_path))
    moved = kubectl.run("apply", "--server-side", "-f", _manifest(tmp_path, image="nginx:1.26"))
    assert moved.stdout.strip() == "deployment.apps/ssa-web serverside-applied", moved.stderr
    image = _live(kubectl)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "nginx:1.26"
    again = kubectl.run("apply", "--server-side", "-f", _manifest(tmp_path, image="nginx:1.27"))
    assert again.returncode == 0, again.stderr


def test_diff_server_side_shows_the_change_and_writes_nothing(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    kubectl.run("apply", "--server-side", "-f", _manifest(tmp_path))
    before = _live(kubectl)["metadata"]["resourceVersion"]
    diff = kubectl.run(
        "diff", "--server-side", "-f", _manifest(tmp_path, image="nginx:1.26"), check=False
    )
    assert diff.returncode == 1, diff.stderr  # 1: there are differences
    assert "-      - image: nginx:1.25\n+      - image: nginx:1.26\n" in diff.stdout
    if kubectl.name != "1.20":  # 1.20 still diffs managedFields (their times), as it does anywhere
        assert "managedFields" not in diff.stdout
    live = _live(kubectl)
    assert live["metadata"]["resourceVersion"] == before
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    same = kubectl.run("diff", "--server-side", "-f", _manifest(tmp_path), check=False)
    assert same.returncode == 0, same.stdout + same.stderr


# ------------------------------------------------------------------ the Python client


@pytest.fixture
def api(lab: Lab) -> Any:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(lab.kubeconfig), client_configuration=configuration)
    with client.ApiClient(configuration) as api_client:
        yield api_client


def _body(replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "py-web", "namespace": "hotel"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "py-web"}},
            "template": {
                "metadata": {"labels": {"app": "py-web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
            },
        },
    }


def test_python_client_conflict_is_a_409_whose_causes_name_field_and_manager(api: Any) -> None:
    deployments = dynamic.DynamicClient(api).resources.get(api_version="apps/v1", kind="Deployment")
    deployments.server_side_apply(body=_body(2), field_manager="team-a")
    with pytest.raises(ApiException) as refused:
        deployments.server_side_apply(body=_body(3), field_manager="team-b")
    assert refused.value.status == 409
    status = json.loads(refused.value.body)
    assert status["reason"] == "Conflict"
    assert (
        status["message"] == 'Apply failed with 1 conflict: conflict with "team-a": .spec.replicas'
    )
    assert status["details"]["causes"] == [
        {
            "type": "FieldManagerConflict",
            "message": 'conflict with "team-a"',
            "field": ".spec.replicas",
        }
    ]
    forced = deployments.server_side_apply(
        body=_body(3), field_manager="team-b", force_conflicts=True
    )
    assert forced.spec.replicas == 3
    owners = {m["manager"]: m["fieldsV1"] for m in forced.to_dict()["metadata"]["managedFields"]}
    assert "f:replicas" in owners["team-b"]["f:spec"]
    assert "f:replicas" not in owners["team-a"]["f:spec"]


def test_python_client_records_updates_and_requires_a_manager_to_apply(api: Any) -> None:
    apps = client.AppsV1Api(api)
    apps.create_namespaced_deployment("hotel", _body(1))
    apps.patch_namespaced_deployment(
        "py-web", "hotel", {"spec": {"replicas": 2}}, field_manager="autoscaler"
    )
    entries = apps.read_namespaced_deployment("py-web", "hotel").metadata.managed_fields
    by_manager = {e.manager: e for e in entries}
    # A create without fieldManager is recorded under the User-Agent's program name.
    assert by_manager["OpenAPI-Generator"].operation == "Update"
    assert "f:replicas" not in by_manager["OpenAPI-Generator"].fields_v1["f:spec"]
    assert by_manager["autoscaler"].fields_v1 == {"f:spec": {"f:replicas": {}}}
    deployments = dynamic.DynamicClient(api).resources.get(api_version="apps/v1", kind="Deployment")
    with pytest.raises(ApiException) as refused:
        deployments.server_side_apply(body=_body(2))
    assert refused.value.status == 422
    assert json.loads(refused.value.body)["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: '
        "fieldManager: Required value: is required for apply patch"
    )
