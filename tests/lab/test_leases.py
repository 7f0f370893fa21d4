"""The lab serves ``coordination.k8s.io/v1`` Leases, as a cluster does for leader election:
kubectl lists them with their holder, and the Python client creates, reads and replaces them
with resourceVersion compare-and-swap (a stale write is a 409)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.conftest import Lab, kubectl_for

LEASE = """
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: stratus-leader
spec:
  holderIdentity: pod-a
  leaseDurationSeconds: 15
  acquireTime: "2026-01-01T00:00:00.000000Z"
  renewTime: "2026-01-01T00:00:05.123456Z"
  leaseTransitions: 0
"""


@pytest.mark.parametrize("version", ["system", "1.20"])
def test_kubectl_creates_and_lists_leases_with_their_holder(
    version: str, lab: Lab, tmp_path: Path
) -> None:
    kubectl = kubectl_for(version, lab, tmp_path)
    kubectl.run("apply", "-f", "-", stdin=LEASE)
    header, *rows = kubectl.out("get", "leases").splitlines()
    assert header.split() == ["NAME", "HOLDER", "AGE"]
    assert [row.split()[:2] for row in rows] == [["stratus-leader", "pod-a"]]
    stored = json.loads(kubectl.out("get", "lease", "stratus-leader", "-o", "json"))
    assert stored["spec"]["renewTime"] == "2026-01-01T00:00:05.123456Z"
    assert stored["spec"]["leaseDurationSeconds"] == 15
    assert "leases" in kubectl.out("api-resources", "--api-group=coordination.k8s.io")
    kubectl.run("delete", "lease", "stratus-leader")


def test_the_python_client_takes_a_lease_by_compare_and_swap(lab: Lab) -> None:
    api = config.new_client_from_config(str(lab.kubeconfig))
    leases = client.CoordinationV1Api(api)
    try:
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(name="stratus-leader"),
            spec=client.V1LeaseSpec(holder_identity="pod-a", lease_duration_seconds=15),
        )
        created = leases.create_namespaced_lease("hotel", body)
        with pytest.raises(ApiException) as exists:
            leases.create_namespaced_lease("hotel", body)
        assert exists.value.status == 409

        mine = leases.read_namespaced_lease("stratus-leader", "hotel")
        theirs = leases.read_namespaced_lease("stratus-leader", "hotel")
        mine.spec.holder_identity = "pod-b"
        leases.replace_namespaced_lease("stratus-leader", "hotel", mine)
        theirs.spec.holder_identity = "pod-c"
        with pytest.raises(ApiException) as stale:
            leases.replace_namespaced_lease("stratus-leader", "hotel", theirs)
        assert stale.value.status == 409
        now = leases.read_namespaced_lease("stratus-leader", "hotel")
        assert now.spec.holder_identity == "pod-b"
        assert now.metadata.resource_version != created.metadata.resource_version
        names = [item.metadata.name for item in leases.list_namespaced_lease("hotel").items]
        assert names == ["stratus-leader"]
    finally:
        api.close()
