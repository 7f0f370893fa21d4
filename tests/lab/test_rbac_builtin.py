"""What a deployment finds in a cluster with RBAC on: the built-in roles it may bind and the
access reviews that answer `kubectl auth can-i`, as a kind or kubeadm cluster answers them.

One RBAC lab for the module; every kubectl of the matrix asks `auth can-i` as the admin and
as ServiceAccount tokens (one without bindings, one bound to each user-facing role), and the
official Python client asks SubjectAccessReview.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from lab.runner import LabServer
from tests.conftest import KUBECTL_MATRIX, Kubectl, Lab, kubectl_for

NAMESPACE = "hotel"
ROLES = ("view", "edit", "admin", "cluster-admin")


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    server = LabServer(apps=["hotel"], rbac=True).start()
    kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("admin") / "config", NAMESPACE)
    lab = Lab(server, kubeconfig)
    admin = kubectl_for("system", lab, tmp_path_factory.mktemp("home"))
    # One account per built-in role, bound in the namespace only, and one bound to nothing.
    admin.run("create", "serviceaccount", "nobody")
    for role in ROLES:
        admin.run("create", "serviceaccount", role)
        admin.run("create", "rolebinding", role, f"--clusterrole={role}",
                  f"--serviceaccount={NAMESPACE}:{role}")  # fmt: skip
    yield lab
    server.stop()


def _as(lab: Lab, admin: Kubectl, account: str, tmp_path: Path) -> Kubectl:
    """The same kubectl acting with a fresh token of ``account``."""
    token = _token(lab, account)
    path = lab.server.write_kubeconfig(tmp_path / f"sa-{account}", NAMESPACE, token=token,
                                       user=account)  # fmt: skip
    return Kubectl(admin.binary, {**admin.env, "KUBECONFIG": str(path)}, admin.name)


def _token(lab: Lab, account: str) -> str:
    api = config.new_client_from_config(str(lab.kubeconfig))
    try:
        request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
        answer = client.CoreV1Api(api).create_namespaced_service_account_token(
            account, NAMESPACE, request
        )
        return str(answer.status.token)
    finally:
        api.close()


def _can(kubectl: Kubectl, *args: str, namespace: str | None = NAMESPACE) -> str:
    # `kubectl auth can-i` exits 1 on "no": the answer is on stdout either way.
    return kubectl.run("auth", "can-i", *args, check=False, namespace=namespace).stdout.strip()


@pytest.mark.parametrize("version", KUBECTL_MATRIX)
def test_auth_can_i_as_the_admin_and_as_serviceaccounts(
    version: str, rbac_lab: Lab, tmp_path: Path
) -> None:
    admin = kubectl_for(version, rbac_lab, tmp_path)
    assert _can(admin, "delete", "nodes", namespace=None) == "yes"
    assert _can(admin, "*", "*", "--all-namespaces", namespace=None) == "yes"
    assert _can(admin, "get", "secrets", namespace="kube-system") == "yes"

    nobody = _as(rbac_lab, admin, "nobody", tmp_path)
    assert _can(nobody, "get", "pods") == "no"
    assert _can(nobody, "create", "selfsubjectaccessreviews.authorization.k8s.io") == "yes"
    refused = nobody.run("get", "pods", check=False)
    assert refused.returncode != 0
    assert (
        "Error from server (Forbidden): pods is forbidden: User "
        f'"system:serviceaccount:{NAMESPACE}:nobody" cannot list resource "pods" in API group '
        f'"" in the namespace "{NAMESPACE}"'
    ) in refused.stderr
    listed = nobody.out("auth", "can-i", "--list")
    assert "selfsubjectaccessreviews.authorization.k8s.io" in listed
    assert "pods " not in listed

    # view: reads, but no secrets and no writes.
    viewer = _as(rbac_lab, admin, "view", tmp_path)
    assert _can(viewer, "get", "pods") == "yes"
    assert _can(viewer, "list", "deployments.apps") == "yes"
    assert _can(viewer, "get", "secrets") == "no"
    assert _can(viewer, "delete", "pods") == "no"
    assert _can(viewer, "get", "pods", namespace="default") == "no"  # bound in hotel only
    # edit: view plus writes and secrets, but no roles.
    editor = _as(rbac_lab, admin, "edit", tmp_path)
    assert _can(editor, "get", "pods") == "yes"
    assert _can(editor, "patch", "deployments.apps") == "yes"
    assert _can(editor, "get", "secrets") == "yes"
    assert _can(editor, "create", "roles.rbac.authorization.k8s.io") == "no"
    # admin: edit (and so view) plus roles and bindings in the namespace; no nodes.
    owner = _as(rbac_lab, admin, "admin", tmp_path)
    assert _can(owner, "get", "pods") == "yes"
    assert _can(owner, "list", "deployments.apps") == "yes"
    assert _can(owner, "delete", "pods") == "yes"
    assert _can(owner, "create", "rolebindings.rbac.authorization.k8s.io") == "yes"
    assert _can(owner, "get", "nodes", namespace=None) == "no"
    assert "pods " in owner.out("auth", "can-i", "--list")
    # cluster-admin bound by a RoleBinding: everything in the namespace, nothing outside it.
    root = _as(rbac_lab, admin, "cluster-admin", tmp_path)
    assert _can(root, "delete", "deployments.apps") == "yes"
    assert _can(root, "create", "roles.rbac.authorization.k8s.io") == "yes"
    assert _can(root, "get", "pods", namespace="default") == "no"


def test_aggregated_roles_show_their_rules_and_take_new_ones(rbac_lab: Lab, tmp_path: Path) -> None:
    admin = kubectl_for("system", rbac_lab, tmp_path)
    role = json.loads(admin.out("get", "clusterrole", "admin", "-o", "json", namespace=None))
    assert role["aggregationRule"]["clusterRoleSelectors"] == [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}
    ]
    # As the aggregation controller leaves them: admin holds edit's and view's rules too.
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule["verbs"]
    }
    assert {("", "pods", "get"), ("", "pods", "delete"), ("apps", "deployments", "list"),
            ("rbac.authorization.k8s.io", "roles", "create")} <= granted  # fmt: skip
    # A ClusterRole labelled to aggregate into view reaches view and edit (the way an
    # operator extends the built-in roles); deleting it takes the rules back.
    viewer = _as(rbac_lab, admin, "view", tmp_path)
    editor = _as(rbac_lab, admin, "edit", tmp_path)
    assert _can(viewer, "list", "roles.rbac.authorization.k8s.io") == "no"
    admin.run("apply", "-f", "-", namespace=None, stdin="""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: roles-view
  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
rules:
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles]
  verbs: [list]
""")  # fmt: skip
    assert _can(viewer, "list", "roles.rbac.authorization.k8s.io") == "yes"
    assert _can(editor, "list", "roles.rbac.authorization.k8s.io") == "yes"
    view = json.loads(admin.out("get", "clusterrole", "view", "-o", "json", namespace=None))
    assert {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
            "verbs": ["list"]} in view["rules"]  # fmt: skip
    admin.run("delete", "clusterrole", "roles-view", namespace=None)
    assert _can(viewer, "list", "roles.rbac.authorization.k8s.io") == "no"
    assert _can(editor, "list", "roles.rbac.authorization.k8s.io") == "no"


def test_the_builtin_roles_a_deployment_binds_exist(rbac_lab: Lab, tmp_path: Path) -> None:
    admin = kubectl_for("system", rbac_lab, tmp_path)
    names = admin.out("get", "clusterroles", "-o", "name", namespace=None).split()
    for name in (*ROLES, "system:auth-delegator", "system:discovery", "system:basic-user"):
        assert f"clusterrole.rbac.authorization.k8s.io/{name}" in names
    # system:auth-delegator lets a server delegate authentication and authorization.
    admin.run("create", "serviceaccount", "delegator")
    admin.run("create", "clusterrolebinding", "delegator", "--clusterrole=system:auth-delegator",
              f"--serviceaccount={NAMESPACE}:delegator", namespace=None)  # fmt: skip
    delegator = _as(rbac_lab, admin, "delegator", tmp_path)
    assert _can(delegator, "create", "tokenreviews.authentication.k8s.io", namespace=None) == "yes"
    assert (
        _can(delegator, "create", "subjectaccessreviews.authorization.k8s.io", namespace=None)
        == "yes"
    )
    assert _can(delegator, "get", "pods") == "no"


def test_a_serviceaccount_without_bindings_may_not_review_others(
    rbac_lab: Lab, tmp_path: Path
) -> None:
    admin = kubectl_for("system", rbac_lab, tmp_path)
    nobody = _as(rbac_lab, admin, "nobody", tmp_path)
    refused = nobody.run("create", "-f", "-", check=False, namespace=None, stdin="""
apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: someone
  resourceAttributes: {verb: get, resource: pods}
""")  # fmt: skip
    assert refused.returncode != 0
    assert (
        "subjectaccessreviews.authorization.k8s.io is forbidden: User "
        f'"system:serviceaccount:{NAMESPACE}:nobody" cannot create resource '
        '"subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope'
    ) in refused.stderr


def test_subject_access_reviews_from_the_python_client(rbac_lab: Lab) -> None:
    api = config.new_client_from_config(str(rbac_lab.kubeconfig))
    authz = client.AuthorizationV1Api(api)

    def review(
        user: str, verb: str, resource: str, group: str = ""
    ) -> client.V1SubjectAccessReviewStatus:
        body = client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user=user,
                groups=["system:serviceaccounts", "system:authenticated"],
                resource_attributes=client.V1ResourceAttributes(
                    namespace=NAMESPACE, verb=verb, resource=resource, group=group
                ),
            )
        )
        return authz.create_subject_access_review(body).status

    try:
        allowed = review(f"system:serviceaccount:{NAMESPACE}:admin", "list", "deployments", "apps")
        assert allowed.allowed is True
        assert "RoleBinding" in allowed.reason and 'ClusterRole "admin"' in allowed.reason
        denied = review(f"system:serviceaccount:{NAMESPACE}:nobody", "get", "pods")
        assert denied.allowed is False
        # Refused through the Python client too. (Its pooled TLS connection stays open until
        # the lab stops: the lab cuts it rather than leave the socket to the collector.)
        token = _token(rbac_lab, "nobody")
        path = rbac_lab.server.write_kubeconfig(
            rbac_lab.kubeconfig.parent / "nobody", NAMESPACE, token=token
        )
        as_nobody = config.new_client_from_config(str(path))
        try:
            with pytest.raises(ApiException) as refused:
                client.AuthorizationV1Api(as_nobody).create_subject_access_review(
                    client.V1SubjectAccessReview(
                        spec=client.V1SubjectAccessReviewSpec(
                            user="someone",
                            resource_attributes=client.V1ResourceAttributes(
                                verb="get", resource="pods"
                            ),
                        )
                    )
                )
            assert refused.value.status == 403
            assert json.loads(refused.value.body)["message"] == (
                "subjectaccessreviews.authorization.k8s.io is forbidden: User "
                f'"system:serviceaccount:{NAMESPACE}:nobody" cannot create resource '
                '"subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope'
            )
        finally:
            as_nobody.close()
    finally:
        api.close()
