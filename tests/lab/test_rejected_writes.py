"""Writes a real API server refuses are refused by the lab too, with the same Status.

Each is tried through the machine's kubectl (as an SRE would) and checked in the raw Status
body the official Python client receives.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from lab.cluster.update_rules import base64_error
from tests.conftest import Kubectl, Lab, kubectl_for


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for("system", lab, tmp_path)


@pytest.fixture
def api(lab: Lab) -> Iterator[client.ApiClient]:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(lab.kubeconfig), client_configuration=configuration)
    with client.ApiClient(configuration) as api_client:
        yield api_client


def _status(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def _refused(kubectl: Kubectl, *args: str, stdin: str | None = None, ns: str = "hotel") -> str:
    result = kubectl.run(*args, stdin=stdin, check=False, namespace=ns)
    assert result.returncode != 0, f"kubectl {' '.join(args)} was accepted:\n{result.stdout}"
    return result.stderr


def test_pod_spec_updates_other_than_image_are_422(kubectl: Kubectl, api: client.ApiClient) -> None:
    kubectl.run("run", "web", "--image=nginx:1.27")
    for patch in (
        '{"spec":{"containers":[{"name":"web","env":[{"name":"A","value":"1"}]}]}}',
        '{"spec":{"containers":[{"name":"web","resources":{"limits":{"cpu":"1"}}}]}}',
        '{"spec":{"nodeName":"worker-2"}}',
        '{"spec":{"restartPolicy":"Never"}}',
    ):
        err = _refused(kubectl, "patch", "pod", "web", "-p", patch)
        assert 'The Pod "web" is invalid: spec: Forbidden: pod updates may not change fields' in (
            err
        )
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_pod("web", "hotel", {"spec": {"hostname": "x"}})
    status = _status(caught.value)
    assert caught.value.status == 422
    assert list(status) == [
        "kind",
        "apiVersion",
        "metadata",
        "status",
        "message",
        "reason",
        "details",
        "code",
    ]
    assert caught.value.body.endswith("\n")
    assert status["details"]["causes"][0]["reason"] == "FieldValueForbidden"
    assert status["details"]["causes"][0]["field"] == "spec"
    # What a real server allows: labels, activeDeadlineSeconds, added tolerations, the image.
    kubectl.run("label", "pod", "web", "tier=edge")
    kubectl.run("patch", "pod", "web", "-p", '{"spec":{"activeDeadlineSeconds":3600}}')
    kubectl.run("patch", "pod", "web", "-p", '{"spec":{"activeDeadlineSeconds":600}}')
    err = _refused(kubectl, "patch", "pod", "web", "-p", '{"spec":{"activeDeadlineSeconds":7200}}')
    assert "Forbidden" in err
    tolerations = json.loads(kubectl.out("get", "pod", "web", "-o", "jsonpath={.spec.tolerations}"))
    added = [*tolerations, {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    kubectl.run("patch", "pod", "web", "-p", json.dumps({"spec": {"tolerations": added}}))
    err = _refused(kubectl, "patch", "pod", "web", "-p", '{"spec":{"tolerations":[]}}')
    assert "pod updates may not change fields" in err


def test_image_change_restarts_the_container(kubectl: Kubectl) -> None:
    kubectl.run("run", "web", "--image=nginx:1.27")
    first = json.loads(kubectl.out("get", "pod", "web", "-o", "json"))
    (before,) = first["status"]["containerStatuses"]
    kubectl.run("set", "image", "pod/web", "web=nginx:1.28")
    pod = json.loads(kubectl.out("get", "pod", "web", "-o", "json"))
    (status,) = pod["status"]["containerStatuses"]
    # containerd reports the image by its full name, as the spec's short one resolves.
    assert status["image"] == "docker.io/library/nginx:1.28"
    assert status["restartCount"] == 1
    assert "running" in status["state"]
    assert status["containerID"] != before["containerID"]
    assert status["lastState"]["terminated"]["containerID"] == before["containerID"]
    events = kubectl.out("get", "events", "--field-selector", "involvedObject.name=web")
    assert "definition changed, will be restarted" in events
    # A pod stuck on a missing tag is fixed by the image alone, as on a cluster.
    kubectl.run("run", "bad", "--image=nginx:1.999")
    kubectl.run("set", "image", "pod/bad", "bad=nginx:1.27")
    phase = kubectl.out("get", "pod", "bad", "-o", "jsonpath={.status.containerStatuses[0].ready}")
    assert phase == "true"


_EXPANDABLE = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: expandable}
provisioner: rancher.io/local-path
allowVolumeExpansion: true
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: grows}
spec:
  storageClassName: expandable
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fixed-size}
provisioner: rancher.io/local-path
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fixed}
spec:
  storageClassName: fixed-size
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"""


def _storage(size: str) -> str:
    return json.dumps({"spec": {"resources": {"requests": {"storage": size}}}})


def test_claims_grow_only_when_their_class_allows_it(
    kubectl: Kubectl, api: client.ApiClient
) -> None:
    kubectl.run("apply", "-f", "-", stdin=_EXPANDABLE)
    kubectl.run("patch", "pvc", "grows", "-p", _storage("2Gi"))
    capacity = kubectl.out("get", "pvc", "grows", "-o", "jsonpath={.status.capacity.storage}")
    assert capacity == "2Gi"
    err = _refused(kubectl, "patch", "pvc", "grows", "-p", _storage("1Gi"))
    assert "spec.resources.requests.storage: Forbidden: field can not be less than" in err
    err = _refused(kubectl, "patch", "pvc", "fixed", "-p", _storage("5Gi"))
    assert (
        'persistentvolumeclaims "fixed" is forbidden: only dynamically provisioned pvc can be '
        "resized and the storageclass that provisions the pvc must support resize"
    ) in err
    err = _refused(
        kubectl, "patch", "pvc", "fixed", "-p", '{"spec":{"accessModes":["ReadWriteMany"]}}'
    )
    assert "spec: Forbidden: spec is immutable after creation" in err
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_persistent_volume_claim("fixed", "hotel", json.loads(_storage("9Gi")))
    assert caught.value.status == 403
    assert _status(caught.value)["reason"] == "Forbidden"


def test_statefulset_fields_other_than_the_updatable_ones_are_immutable(kubectl: Kubectl) -> None:
    err = _refused(
        kubectl,
        "patch",
        "statefulset",
        "postgres",
        "-p",
        '{"spec":{"serviceName":"db"}}',
        ns="shop",
    )
    assert (
        'The StatefulSet "postgres" is invalid: spec: Forbidden: updates to statefulset spec for '
        "fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', "
        "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
    ) in err
    _refused(
        kubectl,
        "patch",
        "statefulset",
        "postgres",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/resources/requests/storage",'
        '"value":"5Gi"}]',
        ns="shop",
    )
    kubectl.run("scale", "statefulset", "postgres", "--replicas=1", namespace="shop")
    kubectl.run(
        "patch", "statefulset", "postgres", "-p", '{"spec":{"minReadySeconds":5}}', namespace="shop"
    )


def test_immutable_configmaps_and_secrets(kubectl: Kubectl) -> None:
    kubectl.run(
        "apply",
        "-f",
        "-",
        stdin="""
apiVersion: v1
kind: ConfigMap
metadata: {name: frozen}
data: {mode: fast}
immutable: true
---
apiVersion: v1
kind: Secret
metadata: {name: frozen}
stringData: {token: abc}
immutable: true
""",
    )
    err = _refused(kubectl, "patch", "configmap", "frozen", "-p", '{"data":{"mode":"slow"}}')
    assert 'The ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when' in err
    err = _refused(kubectl, "patch", "configmap", "frozen", "-p", '{"immutable":false}')
    assert "immutable: Forbidden: field is immutable when `immutable` is set" in err
    err = _refused(kubectl, "patch", "secret", "frozen", "-p", '{"data":{"token":"eHl6"}}')
    assert 'The Secret "frozen" is invalid: data: Forbidden' in err
    kubectl.run("label", "configmap", "frozen", "team=a")  # metadata stays writable
    kubectl.run("delete", "configmap", "frozen")  # and it can be deleted and recreated


def test_secret_data_must_be_base64(kubectl: Kubectl) -> None:
    err = _refused(
        kubectl,
        "apply",
        "-f",
        "-",
        stdin="apiVersion: v1\nkind: Secret\nmetadata: {name: raw}\ndata: {password: hunter2}\n",
    )
    assert (
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 4'
    ) in err
    assert base64_error("aGVsbG8=") is None
    assert base64_error("aGVsbG8") == 4
    assert base64_error("abc") == 0
    assert base64_error("ab!d") == 2
    assert base64_error("aGk=\n") is None


def test_hpa_max_below_min_is_invalid(kubectl: Kubectl) -> None:
    err = _refused(
        kubectl,
        "patch",
        "hpa",
        "frontend",
        "-p",
        '{"spec":{"minReplicas":3,"maxReplicas":2}}',
        ns="shop",
    )
    assert (
        'The HorizontalPodAutoscaler "frontend" is invalid: spec.maxReplicas: '
        "Invalid value: 2: must be greater than or equal to `minReplicas`"
    ) in err


def test_failed_json_patch_test_names_no_python_types(
    kubectl: Kubectl, api: client.ApiClient
) -> None:
    err = _refused(
        kubectl,
        "patch",
        "deployment",
        "geo",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/spec/replicas","value":7}]',
    )
    assert "class" not in err and "int" not in err
    assert "The request is invalid: : testing value /spec/replicas failed: test failed" in err
    apps = client.AppsV1Api(api)
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment(
            "geo", "hotel", [{"op": "test", "path": "/spec/replicas", "value": 7}]
        )
    status = _status(caught.value)
    assert caught.value.status == 422
    assert status["details"]["causes"] == [
        {
            "reason": "UnexpectedServerResponse",
            "message": "testing value /spec/replicas failed: test failed",
        }
    ]


def test_quota_on_requests_needs_pods_to_state_them(kubectl: Kubectl) -> None:
    kubectl.run("create", "namespace", "quota-test", namespace=None)
    kubectl.run(
        "create",
        "quota",
        "compute",
        "--hard=requests.cpu=2,limits.memory=1Gi",
        namespace="quota-test",
    )
    err = _refused(kubectl, "run", "bare", "--image=nginx:1.27", ns="quota-test")
    assert (
        'pods "bare" is forbidden: failed quota: compute: must specify limits.memory for: bare; '
        "requests.cpu for: bare"
    ) in err
    kubectl.run(
        "run",
        "stated",
        "--image=nginx:1.27",
        "--overrides",
        '{"spec":{"containers":[{"name":"stated","image":"nginx:1.27",'
        '"resources":{"limits":{"cpu":"100m","memory":"64Mi"}}}]}}',
        namespace="quota-test",
    )
