"""Impersonation in the lab, as the real API server does it: ``kubectl --as/--as-group`` and
``Impersonate-*`` headers, authorized by the ``impersonate`` verb (resourceNames honoured),
refused with the real server's 403 text; the request then runs as the impersonated user and
RBAC decides for them; the lab's audit log names both. With RBAC off the identity still
changes (``kubectl auth whoami --as``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from lab.client import LabClient
from lab.runner import LabServer
from tests.conftest import Kubectl, Lab, kubectl_for
from tests.impersonation_lab import SA_USER, set_up


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    server = LabServer(apps=["hotel"], rbac=True).start()
    folder = tmp_path_factory.mktemp("imperson")
    admin = server.write_kubeconfig(folder / "admin", "hotel")
    account = set_up(server, admin, folder / "stratus")
    yield Lab(server, admin), account
    server.stop()


def _as_account(lab: Lab, account: Path, tmp_path: Path, version: str = "system") -> Kubectl:
    admin = kubectl_for(version, lab, tmp_path)
    return Kubectl(admin.binary, {**admin.env, "KUBECONFIG": str(account)}, version)


def _audit(lab: Lab) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = LabClient(lab.url).get("/lab/v1/audit")["items"]
    return items


@pytest.mark.parametrize("version", ["system", "1.20"])
def test_kubectl_as_runs_the_request_as_the_impersonated_user_and_rbac_decides_for_them(
    version: str, rbac_lab: tuple[Lab, Path], tmp_path: Path
) -> None:
    lab, account = rbac_lab
    sa = _as_account(lab, account, tmp_path, version)
    labels = '{"metadata":{"labels":{"touched-by":"alice"}}}'

    # The account itself may not write; as alice it may, as bob it may not.
    own = sa.run("patch", "deployment", "frontend", "-p", labels, check=False)
    assert own.returncode != 0
    assert f'User "{SA_USER}" cannot patch resource "deployments"' in own.stderr
    sa.run("patch", "deployment", "frontend", "-p", labels, "--as=alice")
    refused = sa.run("patch", "deployment", "frontend", "-p", labels, "--as=bob", check=False)
    assert refused.returncode != 0
    assert (
        'deployments.apps "frontend" is forbidden: User "bob" cannot patch resource '
        '"deployments" in API group "apps" in the namespace "hotel"'
    ) in refused.stderr

    # Only the users and groups the account may impersonate (resourceNames).
    carol = sa.run("get", "deployments", "--as=carol", check=False)
    assert carol.returncode != 0
    assert (
        'users "carol" is forbidden: User "system:serviceaccount:stratus:stratus" cannot '
        'impersonate resource "users" in API group "" at the cluster scope'
    ) in carol.stderr
    masters = sa.run("get", "deployments", "--as=alice", "--as-group=system:masters", check=False)
    assert masters.returncode != 0
    assert (
        f'groups "system:masters" is forbidden: User "{SA_USER}" cannot impersonate resource '
        '"groups" in API group "" at the cluster scope'
    ) in masters.stderr

    # The lab's audit log names the account and the person it acted as.
    writes = [
        e
        for e in _audit(lab)
        if e.get("objectRef", {}).get("name") == "frontend" and e["verb"] == "patch"
    ]
    by_alice = [e for e in writes if e.get("impersonatedUser", {}).get("username") == "alice"]
    assert by_alice and by_alice[-1]["user"]["username"] == SA_USER
    assert by_alice[-1]["responseStatus"]["code"] == 200
    assert "system:authenticated" in by_alice[-1]["impersonatedUser"]["groups"]
    by_bob = [e for e in writes if e.get("impersonatedUser", {}).get("username") == "bob"]
    assert by_bob and by_bob[-1]["responseStatus"]["code"] == 403


def test_kubectl_auth_whoami_and_can_i_answer_for_the_impersonated_identity(
    rbac_lab: tuple[Lab, Path], tmp_path: Path
) -> None:
    lab, account = rbac_lab
    sa = _as_account(lab, account, tmp_path)
    shown = json.loads(
        sa.out("auth", "whoami", "--as=alice", "--as-group=hotel-operators", "-o", "json")
    )
    assert shown["status"]["userInfo"] == {
        "username": "alice",
        "groups": ["hotel-operators", "system:authenticated"],
    }
    assert sa.out("auth", "can-i", "patch", "deployments", "--as=alice").strip() == "yes"
    bob = sa.run("auth", "can-i", "patch", "deployments", "--as=bob", check=False)
    assert bob.stdout.strip() == "no"


def test_the_python_client_sends_impersonation_headers_allowed_and_refused(
    rbac_lab: tuple[Lab, Path],
) -> None:
    _lab, account = rbac_lab
    api = config.new_client_from_config(str(account))
    try:
        apps = client.AppsV1Api(api)
        body = {"spec": {"replicas": 2}}
        as_alice = {"Impersonate-User": "alice", "Impersonate-Group": "hotel-operators"}
        scaled = apps.patch_namespaced_deployment_scale("search", "hotel", body, _headers=as_alice)
        assert scaled.spec.replicas == 2
        with pytest.raises(ApiException) as bob:
            apps.patch_namespaced_deployment_scale(
                "search", "hotel", body, _headers={"Impersonate-User": "bob"}
            )
        assert bob.value.status == 403
        assert json.loads(str(bob.value.body))["message"] == (
            'deployments.apps "search" is forbidden: User "bob" cannot patch resource '
            '"deployments/scale" in API group "apps" in the namespace "hotel"'
        )
        with pytest.raises(ApiException) as extra:
            apps.read_namespaced_deployment(
                "search",
                "hotel",
                _headers={"Impersonate-User": "alice", "Impersonate-Extra-Scopes": "view"},
            )
        assert extra.value.status == 403
        assert json.loads(str(extra.value.body))["message"] == (
            f'userextras.authentication.k8s.io "view" is forbidden: User "{SA_USER}" cannot '
            'impersonate resource "userextras/scopes" in API group "authentication.k8s.io" '
            "at the cluster scope"
        )
        with pytest.raises(ApiException) as orphan:
            apps.read_namespaced_deployment(
                "search", "hotel", _headers={"Impersonate-Group": "hotel-operators"}
            )
        assert orphan.value.status == 500
        assert "without impersonating a user" in json.loads(str(orphan.value.body))["message"]
    finally:
        api.close()


def test_with_rbac_off_the_impersonated_identity_is_still_who_the_request_runs_as(
    tmp_path: Path,
) -> None:
    server = LabServer(apps=[]).start()
    try:
        lab = Lab(server, server.write_kubeconfig(tmp_path / "config"))
        kubectl = kubectl_for("system", lab, tmp_path)
        shown = json.loads(kubectl.out("auth", "whoami", "--as=alice", "-o", "json"))
        assert shown["status"]["userInfo"]["username"] == "alice"
        kubectl.run(
            "create", "namespace", "audited", "--as=alice", "--as-group=ops", namespace=None
        )
        event = next(e for e in _audit(lab) if e.get("objectRef", {}).get("name") == "audited")
        assert event["impersonatedUser"] == {
            "username": "alice",
            "groups": ["ops", "system:authenticated"],
        }
    finally:
        server.stop()


def test_stratus_kube_client_sends_each_group_as_its_own_header_and_only_inside_the_block(
    rbac_lab: tuple[Lab, Path],
) -> None:
    from tools.identity import KubeIdentity
    from tools.k8s import KubeClient

    _lab, account = rbac_lab
    kube = KubeClient(kubeconfig=str(account))
    review = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
        "metadata": {"name": "whoami"},
    }
    try:
        with kube.acting_as(KubeIdentity("alice", ("hotel-operators", "hotel-operators-2"))):
            with pytest.raises(Exception, match='groups "hotel-operators-2" is forbidden'):
                kube.create(review)
            shown = None
        with kube.acting_as(KubeIdentity("alice", ("hotel-operators",))):
            shown = kube.create(review)["status"]["userInfo"]
        assert shown == {"username": "alice", "groups": ["hotel-operators", "system:authenticated"]}
        outside = kube.create(review)["status"]["userInfo"]
        assert outside["username"] == SA_USER
    finally:
        kube.close()
