"""The MCP gateway's component (``components/mcp``, docs/mcp.md): opted in, the pod gets the
clients file from a Secret (hashes only), listens for MCP on its own named port, and the
Service and the NetworkPolicy let that port in — and nothing else changes."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from tests.deploy.test_manifests import DEPLOY, _container, _env, _one, kustomize


def test_the_mcp_component_adds_its_port_clients_file_and_nothing_else(tmp_path: Path) -> None:
    relative = Path(os.path.relpath(DEPLOY, tmp_path))
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [str(relative / "overlays" / "socket")],
                "components": [str(relative / "components" / "mcp")],
            }
        )
    )
    objects = kustomize(tmp_path)
    plain = kustomize(DEPLOY / "overlays" / "socket")
    container = _container(objects)
    env = _env(container)
    assert env["STRATUS_MCP_CLIENTS"]["value"] == "/etc/stratus/mcp/clients.yaml"
    assert env["STRATUS_MCP_PORT"]["value"] == "8765"
    assert env["STRATUS_MCP_HOST"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert set(env) - set(_env(_container(plain))) == {
        "STRATUS_MCP_CLIENTS",
        "STRATUS_MCP_HOST",
        "STRATUS_MCP_PORT",
    }
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["mcp"] == 8765 and "health" in ports
    mount = next(m for m in container["volumeMounts"] if m["name"] == "mcp-clients")
    assert mount["mountPath"] == "/etc/stratus/mcp" and mount["readOnly"]
    pod = _one(objects, "Deployment")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "mcp-clients")
    assert volume["secret"]["secretName"] == "stratus-mcp-clients"
    service = {p["name"]: p for p in _one(objects, "Service")["spec"]["ports"]}
    assert service["mcp"]["targetPort"] == "mcp" and "health" in service
    ingress = [p["port"] for p in _one(objects, "NetworkPolicy")["spec"]["ingress"][0]["ports"]]
    plain_ingress = [p["port"] for p in _one(plain, "NetworkPolicy")["spec"]["ingress"][0]["ports"]]
    assert ingress == [*plain_ingress, "mcp"]
