"""Protobuf request bodies (kubectl 1.32 and later) read as the JSON bodies older clients send.

kubectl 1.32 and 1.33 send the bodies of ``kubectl create <generator>`` as
``application/vnd.kubernetes.protobuf`` and, measured against the real binaries, do not retry
with JSON when the server answers 415; kubectl 1.20 … 1.31 send JSON. So the lab decodes the
protobuf envelope, and both encodings must make the same objects.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from lab.cluster.protobuf import decode_object
from tests.conftest import KUBECTLS, Lab, kubectl_for
from tests.lab.generators import GENERATORS, with_files

# What kubectl 1.32 sent for `kubectl create namespace foo` (from its -v=9 trace).
NAMESPACE_FOO = bytes.fromhex(
    "6b 38 73 00 0a 0f 0a 02 76 31 12 09 4e 61 6d 65 73 70 61 63 65 12 1b 0a 13 0a 03 66 6f 6f"
    "12 00 1a 00 22 00 2a 00 32 00 38 00 42 00 12 00 1a 02 0a 00 1a 00 22 00"
)


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, api_version) + _field(2, kind)
    return b"k8s\x00" + _field(1, type_meta) + _field(2, raw) + _field(3, "") + _field(4, "")


def _post(lab: Lab, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        lab.url + path,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/vnd.kubernetes.protobuf",
            "Accept": "application/vnd.kubernetes.protobuf,application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read())


def test_the_envelope_kubectl_sends_decodes_to_the_json_object() -> None:
    assert decode_object(NAMESPACE_FOO) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "foo"},
        "spec": {},
        "status": {},
    }


def test_special_types_zero_values_maps_and_embedded_structs() -> None:
    meta = _field(1, "web") + _field(2, "") + _field(8, _field(1, 1_700_000_000))
    meta += _field(11, _field(1, "app") + _field(2, "web"))  # labels map entry
    env = _field(1, "PASSWORD") + _field(3, _field(4, _field(1, _field(1, "db")) + _field(2, "pw")))
    limits = _field(1, "memory") + _field(2, _field(1, "100Mi"))
    container = (
        _field(1, "web")
        + _field(2, "nginx")
        + _field(7, env)
        + _field(8, _field(1, limits))
        + _field(16, 0)  # stdin: false, a plain bool, dropped as JSON's omitempty drops it
    )
    pod_spec = _field(2, container) + _field(4, 0)  # terminationGracePeriodSeconds: 0 kept
    template = _field(1, _field(11, _field(1, "app") + _field(2, "web"))) + _field(2, pod_spec)
    rolling = _field(1, _field(1, 0) + _field(2, 1)) + _field(2, _field(1, 1) + _field(3, "25%"))
    spec = (
        _field(1, 0)  # replicas: 0 is meaningful and kept
        + _field(3, template)
        + _field(4, _field(1, "RollingUpdate") + _field(2, rolling))
    )
    deployment = decode_object(
        _envelope("apps/v1", "Deployment", _field(1, meta) + _field(2, spec))
    )
    assert deployment["metadata"] == {
        "name": "web",
        "creationTimestamp": "2023-11-14T22:13:20Z",
        "labels": {"app": "web"},
    }
    assert deployment["spec"]["replicas"] == 0
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {
        "maxUnavailable": 1,
        "maxSurge": "25%",
    }
    pod = deployment["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 0
    (container_json,) = pod["containers"]
    assert container_json == {
        "name": "web",
        "image": "nginx",
        "env": [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}],
        "resources": {"limits": {"memory": "100Mi"}},
    }
    secret = decode_object(
        _envelope("v1", "Secret", _field(2, _field(1, "k") + _field(2, b"\x00v")))
    )
    assert secret["data"] == {"k": "AHY="}


def test_the_lab_creates_objects_from_protobuf_bodies(lab: Lab) -> None:
    status, created = _post(lab, "/api/v1/namespaces", NAMESPACE_FOO)
    assert status == 201 and created["metadata"]["name"] == "foo"
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": "foo"}


def test_bodies_the_lab_cannot_read_are_refused_with_a_reason(lab: Lab) -> None:
    status, answer = _post(lab, "/api/v1/namespaces", _envelope("example.com/v1", "Widget", b""))
    assert status == 415 and answer["reason"] == "UnsupportedMediaType"
    assert "application/json" in answer["message"]
    status, answer = _post(lab, "/api/v1/namespaces", b"k8s\x00\x0a\xff")
    assert status == 400 and "malformed protobuf" in answer["message"]
    status, answer = _post(lab, "/api/v1/namespaces", b'{"not": "protobuf"}')
    assert status == 400 and "k8s prefix" in answer["message"]


def _comparable(listing: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(listing)["items"]
    for item in items:
        for key in ("managedFields", "uid", "resourceVersion", "creationTimestamp", "namespace"):
            item["metadata"].pop(key, None)
        item.pop("status", None)
        if item["kind"] == "Service":
            for key in ("clusterIP", "clusterIPs"):
                item["spec"].pop(key, None)
            for port in item["spec"].get("ports", []):
                port.pop("nodePort", None)
    return items


@pytest.mark.parametrize("protobuf_kubectl", ["1.32", "1.33"])
def test_protobuf_and_json_clients_make_the_same_objects(
    lab: Lab, tmp_path: Path, protobuf_kubectl: str
) -> None:
    json_kubectl = kubectl_for("1.31" if KUBECTLS.get("1.31") else "1.20", lab, tmp_path)
    proto = kubectl_for(protobuf_kubectl, lab, tmp_path)
    for namespace, client in (("by-json", json_kubectl), ("by-protobuf", proto)):
        client.run("create", "namespace", namespace, namespace=None)
        for command in with_files(tmp_path):
            client.run(*command, namespace=namespace)
    kinds = "deploy,cm,secret,svc,sa,quota"
    made_by_json = _comparable(json_kubectl.out("get", kinds, "-o", "json", namespace="by-json"))
    made_by_protobuf = _comparable(proto.out("get", kinds, "-o", "json", namespace="by-protobuf"))
    assert made_by_protobuf == made_by_json
    # and what every namespace gets: its default account and the kube-root-ca.crt ConfigMap
    assert len(made_by_json) == len(GENERATORS) + 2
