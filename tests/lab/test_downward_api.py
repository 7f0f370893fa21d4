"""The downward API read from inside the container with ``kubectl exec``: ``fieldRef`` and
``resourceFieldRef`` in the environment (divisors rounded up as the kubelet rounds, the node's
allocatable for a limit that is not set) and in a downward-API volume, whose labels and
annotations files are Go-quoted ``key="value"`` lines that follow the pod's labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for

POD = """
apiVersion: v1
kind: Namespace
metadata: {name: dapi}
---
apiVersion: v1
kind: Pod
metadata:
  name: app
  namespace: dapi
  labels: {app: shop, zone: b}
  annotations: {owner: team-a, note: 'say "hi"'}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
    resources:
      requests: {memory: 20Mi, cpu: 50m}
      limits: {memory: 64Mi, cpu: 250m}
    env:
    - {name: MY_POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: MY_NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: MY_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: MY_NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: MY_SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
    - {name: MY_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MY_HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: MY_APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: MY_OWNER, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['owner']"}}}
    - {name: MEM_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: MEM_LIMIT_BYTES, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
    - {name: MEM_REQUEST, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1Mi}}}
    - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: CPU_LIMIT_M, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}
    - {name: CPU_REQUEST_M, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
    - {name: MEM_LIMIT_G, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1G}}}
    volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}]
  - name: free
    image: busybox:1.36
    command: [sleep, "3600"]
    env:
    - {name: MEM_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: CPU_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
      - {path: zone, fieldRef: {fieldPath: "metadata.labels['zone']"}}
      - path: mem_limit
        resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}
      - path: cpu_request
        resourceFieldRef: {containerName: app, resource: requests.cpu, divisor: 1m}
"""


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    found = kubectl_for("system", lab, tmp_path)
    found.run("apply", "-f", "-", stdin=POD, namespace=None)
    lab.settle()
    return found


def _env(kubectl: Kubectl, container: str = "app") -> dict[str, str]:
    out = kubectl.out("exec", "app", "-c", container, "--", "env", namespace="dapi")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _cat(kubectl: Kubectl, path: str) -> str:
    return kubectl.out("exec", "app", "-c", "app", "--", "cat", path, namespace="dapi")


def test_field_refs_in_the_environment(kubectl: Kubectl) -> None:
    pod = kubectl.run("get", "pod", "app", "-o", "json", namespace="dapi").stdout
    env = _env(kubectl)
    assert env["MY_POD_NAME"] == "app"
    assert env["MY_NS"] == "dapi"
    assert env["MY_UID"] and env["MY_UID"] in pod
    node = kubectl.out("get", "pod", "app", "-o", "jsonpath={.spec.nodeName}", namespace="dapi")
    assert env["MY_NODE"] == node
    assert env["MY_SA"] == "default"
    ips = kubectl.out(
        "get", "pod", "app", "-o", "jsonpath={.status.podIP} {.status.hostIP}", namespace="dapi"
    )
    assert f"{env['MY_IP']} {env['MY_HOST_IP']}" == ips
    assert env["MY_APP"] == "shop"
    assert env["MY_OWNER"] == "team-a"


def test_resource_field_refs_divide_and_round_up(kubectl: Kubectl) -> None:
    env = _env(kubectl)
    assert env["MEM_LIMIT"] == "64"
    assert env["MEM_LIMIT_BYTES"] == str(64 * 1024 * 1024)
    assert env["MEM_REQUEST"] == "20"
    assert env["CPU_LIMIT"] == "1"  # 250m in whole cores, rounded up
    assert env["CPU_LIMIT_M"] == "250"
    assert env["CPU_REQUEST_M"] == "50"
    assert env["MEM_LIMIT_G"] == "1"  # 67108864 / 10^9, rounded up


def test_a_limit_that_is_not_set_is_the_nodes_allocatable(kubectl: Kubectl) -> None:
    node = kubectl.out("get", "pod", "app", "-o", "jsonpath={.spec.nodeName}", namespace="dapi")
    allocatable = kubectl.out(
        "get",
        "node",
        node,
        "-o",
        "jsonpath={.status.allocatable.memory} {.status.allocatable.cpu}",
        namespace=None,
    )
    memory, cpu = allocatable.split()
    assert memory.endswith("Mi") and cpu.endswith("m")
    env = _env(kubectl, "free")
    assert env["MEM_LIMIT"] == memory.removesuffix("Mi")
    assert env["CPU_LIMIT"] == str(-(-int(cpu.removesuffix("m")) // 1000))


def test_the_volume_files_quote_as_go_does_and_follow_the_labels(
    kubectl: Kubectl, lab: Lab
) -> None:
    assert _cat(kubectl, "/etc/podinfo/labels") == 'app="shop"\nzone="b"'
    annotations = _cat(kubectl, "/etc/podinfo/annotations").splitlines()
    assert 'note="say \\"hi\\""' in annotations
    assert 'owner="team-a"' in annotations
    assert 'kubernetes.io/config.source="api"' in annotations
    assert annotations == sorted(annotations)
    # kubectl apply's annotation is JSON with a trailing newline: one quoted line
    applied = [a for a in annotations if a.startswith("kubectl.kubernetes.io/last-applied")]
    assert len(applied) == 1 and applied[0].endswith('\\n"')
    assert _cat(kubectl, "/etc/podinfo/zone") == "b"
    assert _cat(kubectl, "/etc/podinfo/mem_limit") == "64"
    assert _cat(kubectl, "/etc/podinfo/cpu_request") == "50"

    kubectl.run("label", "pod", "app", "tier=frontend", "zone=c", "--overwrite", namespace="dapi")
    lab.settle()
    assert _cat(kubectl, "/etc/podinfo/labels") == 'app="shop"\ntier="frontend"\nzone="c"'
    assert _cat(kubectl, "/etc/podinfo/zone") == "c"
    assert _env(kubectl)["MY_APP"] == "shop"  # the environment was fixed at start
