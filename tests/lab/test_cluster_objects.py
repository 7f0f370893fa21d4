"""Objects carry what a real API server and its controllers put in them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for("system", lab, tmp_path)


def test_services_have_status_and_the_api_server_has_its_service(
    kubectl: Kubectl, lab: Lab
) -> None:
    services = json.loads(kubectl.out("get", "svc", "-A", "-o", "json", namespace=None))["items"]
    assert all(s["status"] == {"loadBalancer": {}} for s in services)
    api = json.loads(kubectl.out("get", "svc", "kubernetes", "-o", "json", namespace="default"))
    assert api["spec"]["clusterIP"] == "10.96.0.1" and api["spec"]["ports"][0]["port"] == 443
    # Its endpoints are where the API server really listens, as a pod in the cluster finds it.
    host, port = lab.url.split("://")[1].rsplit(":", 1)
    assert api["spec"]["ports"][0]["targetPort"] == int(port)
    endpoints = kubectl.out("get", "ep", "kubernetes", namespace="default")
    assert f"{host}:{port}" in endpoints
    slices = json.loads(
        kubectl.out(
            "get", "endpointslices", "-l", "kubernetes.io/service-name=kubernetes", "-o", "json",
            namespace="default",
        )
    )["items"]  # fmt: skip
    assert [s["metadata"]["name"] for s in slices] == ["kubernetes"]
    (found,) = slices
    assert found["addressType"] == "IPv4"
    assert found["endpoints"][0]["addresses"] == [host]
    assert found["endpoints"][0]["conditions"]["ready"] is True
    assert found["ports"] == [{"name": "https", "port": int(port), "protocol": "TCP"}]
    # The API server puts them back when they are deleted or changed.
    kubectl.run("delete", "endpoints", "kubernetes", namespace="default")
    kubectl.run("delete", "endpointslice", "kubernetes", namespace="default")
    assert f"{host}:{port}" in kubectl.out("get", "ep", "kubernetes", namespace="default")
    assert kubectl.run("get", "endpointslice", "kubernetes", namespace="default").returncode == 0


def test_daemon_pods_stay_on_cordoned_nodes(kubectl: Kubectl) -> None:
    kubectl.run("cordon", "node-2", namespace=None)
    kubectl.run("rollout", "restart", "ds/log-agent", namespace="shop")
    daemons = json.loads(kubectl.out("get", "ds", "log-agent", "-o", "json", namespace="shop"))
    assert daemons["status"]["desiredNumberScheduled"] == 3
    assert daemons["status"]["numberReady"] == 3
    pods = json.loads(
        kubectl.out("get", "pods", "-l", "app=log-agent", "-o", "json", namespace="shop")
    )
    keys = {t.get("key") for t in pods["items"][0]["spec"]["tolerations"]}
    assert "node.kubernetes.io/unschedulable" in keys


def test_node_heartbeats_follow_the_clock(kubectl: Kubectl, lab: Lab) -> None:
    def heartbeats() -> set[str]:
        node = json.loads(kubectl.out("get", "node", "node-1", "-o", "json", namespace=None))
        return {c["lastHeartbeatTime"] for c in node["status"]["conditions"]}

    (before,) = heartbeats()
    assert before > "2026-11-01T00:00:00Z"
    kubectl.run("set", "image", "deploy/rate", "rate=stratus/hotel-rate:1.2")
    lab.control.post("/lab/v1/settle", {"horizon": 120})  # two minutes pass
    (after,) = heartbeats()
    assert after > before


def test_created_pods_tolerate_unready_nodes_for_five_minutes(kubectl: Kubectl) -> None:
    kubectl.run("run", "web", "--image=nginx")
    tolerations = json.loads(kubectl.out("get", "pod", "web", "-o", "jsonpath={.spec.tolerations}"))
    assert {(t["key"], t["effect"], t["tolerationSeconds"]) for t in tolerations} == {
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    }
