"""A claim's life on the lab's default StorageClass, as the real kubectl sees it: a claim
without a class gets the default one at creation, is provisioned and bound, a pod mounting it
runs, and it grows when its class allows expansion and is refused with the real message when
its class does not."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Kubectl

_CLAIM = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"""

_POD = """
apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  containers:
  - name: writer
    image: nginx:1.27
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
"""

_FIXED = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fixed-size}
provisioner: rancher.io/local-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fixed}
spec:
  storageClassName: fixed-size
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"""


def _get(kubectl: Kubectl, *args: str) -> Any:
    return json.loads(kubectl.out("get", *args, "-o", "json"))


def _storage(size: str) -> str:
    return json.dumps({"spec": {"resources": {"requests": {"storage": size}}}})


def test_the_default_class_provisions_binds_mounts_and_expands(kubectl: Kubectl) -> None:
    classes = _get(kubectl, "storageclass")["items"]
    defaults = [
        c
        for c in classes
        if c["metadata"].get("annotations", {}).get("storageclass.kubernetes.io/is-default-class")
        == "true"
    ]
    assert [c["metadata"]["name"] for c in defaults] == ["standard"]
    assert defaults[0]["allowVolumeExpansion"] is True
    assert "(default)" in kubectl.out("get", "storageclass", namespace=None)

    # The DefaultStorageClass admission plugin names the class in the created object itself.
    created = kubectl.out("create", "-f", "-", "-o", "jsonpath={.spec.storageClassName}",
                          stdin=_CLAIM)  # fmt: skip
    assert created == "standard"
    claim = _get(kubectl, "pvc", "data")
    assert claim["status"]["phase"] == "Bound"
    assert claim["status"]["capacity"] == {"storage": "1Gi"}
    volume = _get(kubectl, "pv", claim["spec"]["volumeName"])
    assert volume["spec"]["claimRef"]["name"] == "data"
    assert volume["spec"]["storageClassName"] == "standard"
    assert volume["spec"]["capacity"] == {"storage": "1Gi"}

    kubectl.run("apply", "-f", "-", stdin=_POD)
    kubectl.run("wait", "--for=condition=Ready", "pod/writer", "--timeout=60s")
    assert _get(kubectl, "pod", "writer")["status"]["phase"] == "Running"

    kubectl.run("patch", "pvc", "data", "-p", _storage("3Gi"))
    claim = _get(kubectl, "pvc", "data")
    assert claim["status"]["capacity"] == {"storage": "3Gi"}
    assert _get(kubectl, "pv", claim["spec"]["volumeName"])["spec"]["capacity"] == {
        "storage": "3Gi"
    }
    assert "3Gi" in kubectl.out("get", "pvc", "data")
    events = kubectl.out("get", "events", "--field-selector", "involvedObject.name=data")
    assert "ProvisioningSucceeded" in events and "FileSystemResizeSuccessful" in events


def test_a_class_without_expansion_refuses_growth(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", "-", stdin=_FIXED)
    assert _get(kubectl, "pvc", "fixed")["status"]["phase"] == "Bound"
    refused = kubectl.run("patch", "pvc", "fixed", "-p", _storage("2Gi"), check=False)
    assert refused.returncode != 0
    assert (
        'Error from server (Forbidden): persistentvolumeclaims "fixed" is forbidden: only '
        "dynamically provisioned pvc can be resized and the storageclass that provisions the "
        "pvc must support resize"
    ) in refused.stderr
    assert _get(kubectl, "pvc", "fixed")["status"]["capacity"] == {"storage": "1Gi"}
