"""The kustomize component for writes made as the approver
(``manifests/deploy/components/impersonation``): its ClusterRole is exactly what the
example mapping needs (``stratus impersonation rbac`` prints the same), and it renders with
the real kubectl onto a Deployment named as the deploy manifests name it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from cli.main import stratus
from tests.conftest import REPO

COMPONENT = REPO / "manifests" / "deploy" / "components" / "impersonation"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: stratus
  namespace: stratus
spec:
  selector:
    matchLabels: {app: stratus}
  template:
    metadata:
      labels: {app: stratus}
    spec:
      serviceAccountName: stratus
      containers:
      - name: stratus
        image: stratus:dev
        env:
        - name: STRATUS_DB
          value: /var/lib/stratus/stratus.db
"""


def test_the_component_grants_exactly_what_its_mapping_needs_as_the_cli_prints_it() -> None:
    printed = CliRunner().invoke(
        stratus, ["impersonation", "rbac", str(COMPONENT / "impersonation.yaml")]
    )
    assert printed.exit_code == 0, printed.output
    shipped = list(yaml.safe_load_all((COMPONENT / "rbac.yaml").read_text()))
    assert shipped == list(yaml.safe_load_all(printed.output))
    role, binding = shipped
    assert {r["resources"][0] for r in role["rules"]} == {"users", "groups"}
    for rule in role["rules"]:
        assert rule["verbs"] == ["impersonate"] and rule["resourceNames"]
        assert "*" not in str(rule)
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "stratus", "namespace": "stratus"}
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_the_component_renders_onto_the_deployment_with_the_real_kubectl(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("no kubectl found: the test command installs it (see README)")
    # The component as shipped, beside an overlay like the deploy manifests' (relative paths).
    shutil.copytree(COMPONENT, tmp_path / "components" / "impersonation")
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "deployment.yaml").write_text(DEPLOYMENT)
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "resources: [deployment.yaml]\n"
        "components: [../components/impersonation]\n"
    )
    rendered = subprocess.run(
        [kubectl, "kustomize", str(overlay)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    objects = {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(rendered.stdout)}
    config = next(o for (kind, _), o in objects.items() if kind == "ConfigMap")
    assert config["metadata"]["name"].startswith("stratus-impersonation-")
    assert "kind: Impersonation" in config["data"]["impersonation.yaml"]
    pod = objects[("Deployment", "stratus")]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert {
        "name": "STRATUS_IMPERSONATION",
        "value": "/etc/stratus/impersonation/impersonation.yaml",
    } in container["env"]
    assert {"name": "STRATUS_DB", "value": "/var/lib/stratus/stratus.db"} in container["env"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "impersonation")
    assert mount["readOnly"] is True
    volume = next(v for v in pod["volumes"] if v["name"] == "impersonation")
    assert volume["configMap"]["name"] == config["metadata"]["name"]  # the hashed name
    assert ("ClusterRole", "stratus-impersonate") in objects
    assert ("ClusterRoleBinding", "stratus-impersonate") in objects


def test_the_component_adds_to_the_shipped_socket_overlay_only_impersonate(
    tmp_path: Path,
) -> None:
    """Opted in on the deploy manifests as shipped (``components:`` of an overlay): the
    Deployment reads the mapping, and the one role added grants ``impersonate`` alone."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("no kubectl found: the test command installs it (see README)")
    deploy = REPO / "manifests" / "deploy"
    layer = tmp_path / "with-impersonation"
    layer.mkdir()
    relative = Path(os.path.relpath(deploy, layer))
    (layer / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [str(relative / "overlays" / "socket")],
                "components": [str(relative / "components" / "impersonation")],
            }
        )
    )
    plain = _render(kubectl, deploy / "overlays" / "socket")
    rendered = _render(kubectl, layer)
    added = {k: v for k, v in rendered.items() if k not in plain}
    assert {kind for kind, _ in added} == {"ClusterRole", "ClusterRoleBinding", "ConfigMap"}
    role = added[("ClusterRole", "stratus-impersonate")]
    assert all(rule["verbs"] == ["impersonate"] for rule in role["rules"])
    pod = rendered[("Deployment", "stratus")]["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert env["STRATUS_IMPERSONATION"] == "/etc/stratus/impersonation/impersonation.yaml"
    # Everything else about the pod is as shipped (its other variables, mounts, security).
    before = plain[("Deployment", "stratus")]["spec"]["template"]["spec"]
    assert pod["securityContext"] == before["securityContext"]
    assert pod["containers"][0]["securityContext"] == before["containers"][0]["securityContext"]
    assert len(pod["volumes"]) == len(before["volumes"]) + 1


def _render(kubectl: str, folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    result = subprocess.run(
        [kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(result.stdout)}
