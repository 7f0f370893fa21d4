"""The base cluster looks like a cluster: kube-system add-ons, and pods as admission leaves them
(service-account token volume, default account, default tolerations)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for

TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for("system", lab, tmp_path)


def _json(kubectl: Kubectl, *args: str, namespace: str | None = "hotel") -> Any:
    return json.loads(kubectl.out(*args, "-o", "json", namespace=namespace))


def test_kube_system_runs_coredns_and_kube_proxy(kubectl: Kubectl, lab: Lab) -> None:
    rows = kubectl.out("get", "pods", "-n", "kube-system", "-o", "wide", namespace=None)
    header, *pods = rows.splitlines()
    assert header.split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    coredns = [p.split() for p in pods if p.startswith("coredns-")]
    proxies = [p.split() for p in pods if p.startswith("kube-proxy-")]
    assert len(coredns) == 2 and len(proxies) == 3 and len(pods) == 5, rows
    assert all(p[1:3] == ["1/1", "Running"] for p in coredns + proxies), rows
    nodes = {
        n["metadata"]["name"]: n["status"]["addresses"][0]["address"]
        for n in _json(kubectl, "get", "nodes", namespace=None)["items"]
    }
    proxy_pods = _json(kubectl, "get", "pods", "-l", "k8s-app=kube-proxy", namespace="kube-system")
    # One per node, on the host network: the pod's IP is its node's.
    assert sorted(p["spec"]["nodeName"] for p in proxy_pods["items"]) == sorted(nodes)
    assert all(p["status"]["podIP"] == nodes[p["spec"]["nodeName"]] for p in proxy_pods["items"])
    dns = _json(kubectl, "get", "svc", "kube-dns", namespace="kube-system")
    assert dns["spec"]["clusterIP"] == "10.96.0.10"
    assert {(p["port"], p["protocol"]) for p in dns["spec"]["ports"]} == {
        (53, "UDP"),
        (53, "TCP"),
        (9153, "TCP"),
    }
    endpoints = _json(kubectl, "get", "endpoints", "kube-dns", namespace="kube-system")
    coredns_ips = {
        p["status"]["podIP"]
        for p in _json(kubectl, "get", "pods", "-l", "k8s-app=kube-dns", namespace="kube-system")[
            "items"
        ]
    }
    assert {a["ip"] for a in endpoints["subsets"][0]["addresses"]} == coredns_ips
    deployment = kubectl.out("get", "deploy", "coredns", namespace="kube-system").splitlines()
    assert deployment[1].split()[1:4] == ["2/2", "2", "2"]
    daemons = kubectl.out("get", "ds", "kube-proxy", namespace="kube-system").splitlines()
    assert daemons[1].split()[1:6] == ["3", "3", "3", "3", "3"]
    logs = kubectl.out("logs", "deploy/coredns", namespace="kube-system")
    assert "CoreDNS-1.11.3" in logs
    lab.reset()  # a fresh cluster has them again
    assert kubectl.out("get", "pods", "-n", "kube-system", namespace=None).count("Running") == 5


def test_every_namespace_has_a_default_account_and_the_root_ca(kubectl: Kubectl) -> None:
    kubectl.run("create", "namespace", "team", namespace=None)
    assert "default" in kubectl.out("get", "sa", namespace="team")
    ca = _json(kubectl, "get", "configmap", "kube-root-ca.crt", namespace="team")
    assert ca["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")


def test_pods_get_the_token_volume_and_the_default_account(kubectl: Kubectl) -> None:
    kubectl.run(
        "apply",
        "-f",
        "-",
        stdin="""
apiVersion: v1
kind: Pod
metadata: {name: two}
spec:
  initContainers: [{name: init, image: busybox, command: ["true"]}]
  containers:
  - {name: a, image: nginx}
  - {name: b, image: busybox, command: [sleep, infinity]}
""",
    )
    pod = _json(kubectl, "get", "pod", "two")
    spec = pod["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    (volume,) = [v for v in spec["volumes"] if v["name"].startswith("kube-api-access-")]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    sources = volume["projected"]["sources"]
    assert volume["projected"]["defaultMode"] == 420
    assert sources[0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    assert sources[1]["configMap"]["name"] == "kube-root-ca.crt"
    assert sources[2]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == "metadata.namespace"
    for container in spec["initContainers"] + spec["containers"]:
        assert {"name": volume["name"], "readOnly": True, "mountPath": TOKEN_PATH} in container[
            "volumeMounts"
        ], container["name"]
    assert {t["key"] for t in spec["tolerations"]} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }
    assert pod["status"]["phase"] == "Running"
    # Re-created from its own body (as an undo of a delete does): one volume, one mount each.
    kubectl.run("delete", "pod", "two")
    body = {k: v for k, v in pod.items() if k != "status"}
    body["metadata"] = {"name": "two", "namespace": "hotel"}
    kubectl.run("create", "-f", "-", stdin=json.dumps(body))
    again = _json(kubectl, "get", "pod", "two")["spec"]
    assert [v["name"] for v in again["volumes"]] == [volume["name"]]
    assert [m["mountPath"] for m in again["containers"][0]["volumeMounts"]] == [TOKEN_PATH]
    # Templates are left alone: only pods get the volume and the tolerations.
    template = _json(kubectl, "get", "deploy", "geo")["spec"]["template"]["spec"]
    assert "volumes" not in template and "tolerations" not in template
    geo = _json(kubectl, "get", "pods", "-l", "app=geo")["items"][0]["spec"]
    assert any(v["name"].startswith("kube-api-access-") for v in geo["volumes"])


def test_automount_off_and_a_missing_account(kubectl: Kubectl) -> None:
    kubectl.run("create", "serviceaccount", "quiet")
    kubectl.run("patch", "serviceaccount", "quiet", "-p", '{"automountServiceAccountToken": false}')
    kubectl.run(
        "run", "q", "--image=nginx", "--overrides", '{"spec":{"serviceAccountName":"quiet"}}'
    )
    assert "volumes" not in _json(kubectl, "get", "pod", "q")["spec"]
    kubectl.run(
        "run",
        "p",
        "--image=nginx",
        "--overrides",
        '{"spec":{"automountServiceAccountToken":false}}',
    )
    assert "volumes" not in _json(kubectl, "get", "pod", "p")["spec"]
    refused = kubectl.run(
        "run",
        "r",
        "--image=nginx",
        "--overrides",
        '{"spec":{"serviceAccountName":"ghost"}}',
        check=False,
    )
    assert refused.returncode == 1
    assert (
        'pods "r" is forbidden: error looking up service account hotel/ghost: '
        'serviceaccount "ghost" not found'
    ) in refused.stderr
    # A deployment naming a missing account: the replica set cannot create pods until it exists.
    kubectl.run("create", "deployment", "web", "--image=nginx")
    kubectl.run("set", "serviceaccount", "deployment", "web", "ghost")
    events = kubectl.out("get", "events", "--field-selector", "reason=FailedCreate")
    assert re.search(
        r'pods "web-[a-z0-9]+-" is forbidden: error looking up service account hotel/ghost', events
    ), events
    kubectl.run("create", "serviceaccount", "ghost")
    pods = _json(kubectl, "get", "pods", "-l", "app=web")["items"]
    assert any(p["spec"]["serviceAccountName"] == "ghost" for p in pods)
    assert all(p["status"]["phase"] == "Running" for p in pods)
