"""RBAC in the lab: a ServiceAccount token bound to a Role can do exactly what the Role says.

The lab runs with RBAC on (HTTPS, as kubectl sends tokens only over TLS). The admin
kubeconfig creates the account, the Role and the binding with kubectl's own generators (so
kubectl 1.32/1.33 send them as protobuf), mints a token with ``kubectl create token`` and
then acts as the account through every kubectl and through the official Python client.
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

FORBIDDEN_DELETE = (
    'deployments.apps "web" is forbidden: User "system:serviceaccount:team:deployer" cannot '
    'delete resource "deployments" in API group "apps" in the namespace "team"'
)


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    server = LabServer(apps=[], rbac=True).start()
    kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("rbac") / "admin", "team")
    yield Lab(server, kubeconfig)
    server.stop()


def _setup(admin: Kubectl, suffix: str) -> None:
    """Namespaces, a deployment, the account and its Role, made with kubectl's generators."""
    for ns in ("team", "other"):
        if admin.run("get", "namespace", ns, check=False, namespace=None).returncode:
            admin.run("create", "namespace", ns, namespace=None)
            admin.run("create", "deployment", "web", "--image=nginx", namespace=ns)
    admin.run("create", "serviceaccount", f"deployer{suffix}", namespace="team")
    admin.run(
        "create",
        "role",
        f"deployer{suffix}",
        "--verb=get,list,patch,update",
        "--resource=deployments",
        namespace="team",
    )
    admin.run(
        "create",
        "rolebinding",
        f"deployer{suffix}",
        f"--role=deployer{suffix}",
        f"--serviceaccount=team:deployer{suffix}",
        namespace="team",
    )
    admin.run(
        "create", "clusterrole", f"node-reader{suffix}", "--verb=get,list", "--resource=nodes"
    )
    admin.run(
        "create",
        "clusterrolebinding",
        f"node-reader{suffix}",
        f"--clusterrole=node-reader{suffix}",
        f"--serviceaccount=team:deployer{suffix}",
    )


def _account_kubeconfig(lab: Lab, admin: Kubectl, account: str, path: Path) -> Path:
    if admin.name == "1.20":  # no `kubectl create token` before 1.24: the TokenRequest API
        api = config.new_client_from_config(str(lab.kubeconfig))
        try:
            request = client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=[])
            )
            answer = client.CoreV1Api(api).create_namespaced_service_account_token(
                account, "team", request
            )
            token = answer.status.token
        finally:
            api.close()
    else:
        token = admin.out("create", "token", account, namespace="team").strip()
    assert token.count(".") == 2  # a JWT, as from a cluster
    return lab.server.write_kubeconfig(path, "team", token=token, user=account)


@pytest.mark.parametrize("version", KUBECTL_MATRIX)
def test_a_serviceaccount_token_can_do_what_its_role_allows_and_nothing_else(
    version: str, rbac_lab: Lab, tmp_path: Path
) -> None:
    admin = kubectl_for(version, rbac_lab, tmp_path)
    suffix = "" if version == "system" else "-" + version.replace(".", "-")
    account = f"deployer{suffix}"
    _setup(admin, suffix)
    as_sa = Kubectl(
        admin.binary,
        {
            **admin.env,
            "KUBECONFIG": str(
                _account_kubeconfig(rbac_lab, admin, account, tmp_path / "sa-config")
            ),
        },
        version,
    )
    user = f"system:serviceaccount:team:{account}"

    assert "web" in as_sa.out("get", "deployments", namespace="team")
    as_sa.run("get", "deployment", "web", "-o", "name", namespace="team")
    as_sa.run(
        "patch", "deployment", "web", "-p", '{"metadata":{"labels":{"tier":"x"}}}', namespace="team"
    )
    as_sa.run("label", "deployment", "web", "owner=team", "--overwrite", namespace="team")
    assert "node-1" in as_sa.out("get", "nodes", namespace=None)

    refused = as_sa.run("delete", "deployment", "web", check=False, namespace="team")
    assert refused.returncode != 0
    assert (
        f'deployments.apps "web" is forbidden: User "{user}" cannot delete resource '
        f'"deployments" in API group "apps" in the namespace "team"'
    ) in refused.stderr
    for args, namespace in (
        (("get", "pods"), "team"),
        (("get", "deployments"), "other"),
        (("get", "secrets"), "team"),
        (("create", "deployment", "new", "--image=nginx"), "team"),
        (("scale", "deployment", "web", "--replicas=3"), "team"),
        (("delete", "node", "node-1"), None),
    ):
        result = as_sa.run(*args, check=False, namespace=namespace)
        assert result.returncode != 0, args
        assert "forbidden" in result.stderr and user in result.stderr, (args, result.stderr)

    assert as_sa.out("auth", "can-i", "patch", "deployments", namespace="team").strip() == "yes"
    denied = as_sa.run("auth", "can-i", "delete", "deployments", check=False, namespace="team")
    assert denied.stdout.strip() == "no"
    denied = as_sa.run("auth", "can-i", "get", "deployments", check=False, namespace="other")
    assert denied.stdout.strip() == "no"
    listed = as_sa.out("auth", "can-i", "--list", namespace="team")
    assert "deployments.apps" in listed and "[get list patch update]" in listed
    # kubectl auth whoami: 1.20 lacks it; 1.27 asks for the v1beta1 API that a 1.32 server no
    # longer serves by default (the GA v1 arrived in 1.28).
    if version not in ("1.20", "1.27"):
        assert user in as_sa.out("auth", "whoami", namespace=None)
    # The admin kubeconfig stays all-powerful.
    assert admin.out("auth", "can-i", "delete", "nodes", namespace=None).strip() == "yes"


def test_the_python_client_acting_as_the_account(rbac_lab: Lab, tmp_path: Path) -> None:
    admin = kubectl_for("system", rbac_lab, tmp_path)
    _setup(admin, "-py")
    kubeconfig = _account_kubeconfig(rbac_lab, admin, "deployer-py", tmp_path / "sa")
    api = config.new_client_from_config(str(kubeconfig))
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    try:
        deployment = apps.read_namespaced_deployment("web", "team")
        assert [d.metadata.name for d in apps.list_namespaced_deployment("team").items] == ["web"]
        apps.patch_namespaced_deployment("web", "team", {"metadata": {"labels": {"py": "yes"}}})
        deployment = apps.read_namespaced_deployment("web", "team")
        deployment.metadata.annotations = {"owner": "python"}
        apps.replace_namespaced_deployment("web", "team", deployment)

        with pytest.raises(ApiException) as refused:
            apps.delete_namespaced_deployment("web", "team")
        assert refused.value.status == 403
        message = json.loads(refused.value.body)["message"]
        assert message == FORBIDDEN_DELETE.replace("deployer", "deployer-py")
        for call in (
            lambda: core.list_namespaced_pod("team"),
            lambda: apps.list_namespaced_deployment("other"),
            lambda: core.delete_node("node-1"),
        ):
            with pytest.raises(ApiException) as denied:
                call()
            assert denied.value.status == 403
    finally:
        api.close()


def test_an_unknown_token_is_unauthorized(rbac_lab: Lab, tmp_path: Path) -> None:
    kubeconfig = rbac_lab.server.write_kubeconfig(tmp_path / "bad", token="not-a-token")
    api = config.new_client_from_config(str(kubeconfig))
    try:
        with pytest.raises(ApiException) as refused:
            client.CoreV1Api(api).list_namespace()
        assert refused.value.status == 401
    finally:
        api.close()


def test_without_rbac_tokens_still_identify_but_everything_is_allowed(
    lab: Lab, tmp_path: Path
) -> None:
    admin = kubectl_for("system", lab, tmp_path)
    admin.run("create", "serviceaccount", "viewer")
    token = admin.out("create", "token", "viewer").strip()
    # kubectl sends no token over plain HTTP; the Python client does.
    api = config.new_client_from_config(
        str(lab.server.write_kubeconfig(tmp_path / "sa", "hotel", token=token))
    )
    try:
        review = client.AuthenticationV1Api(api).create_self_subject_review(
            client.V1SelfSubjectReview()
        )
        assert review.status.user_info.username == "system:serviceaccount:hotel:viewer"
        client.CoreV1Api(api).delete_namespaced_service_account("viewer", "hotel")
    finally:
        api.close()
