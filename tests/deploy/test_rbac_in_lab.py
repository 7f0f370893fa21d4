"""The derived RBAC is enough, and no more: Stratus, holding only the ServiceAccount token the
manifests' roles bind, investigates and fixes lab scenarios and undoes the fix, while what lies
outside the catalog — a Secret, a namespace's deletion, a write or a read in a namespace it
does not manage — is refused by the lab's RBAC authorizer.

The lab runs with RBAC on. The admin installs exactly the objects ``stratus deploy rbac``
prints for the managed namespace ``hotel`` (``shop`` is left unmanaged), mints a token for
``system:serviceaccount:stratus:stratus``, and every ``stratus`` command runs with a
kubeconfig holding only that token.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from lab.runner import LabServer
from tests.agents.test_investigate_cli import ALLOW, incident_state, inject, policy
from tests.conftest import REPO, Kubectl, Lab, kubectl_for, stratus
from tools import errors, permissions, rbac
from tools.k8s import KubeClient
from tools.objects import ObjectRef

MANAGED = ("hotel",)


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    server = LabServer(apps=["hotel", "shop"], rbac=True).start()
    kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("admin") / "config", "hotel")
    yield Lab(server, kubeconfig)
    server.stop()


def install(lab: Lab, where: Path, *, secrets: tuple[str, ...] = ()) -> Path:
    """Reset the lab, install Stratus's namespace, ServiceAccount and derived RBAC as the
    admin (with the opt-in Secret role bound in ``secrets``), and return a kubeconfig holding
    only the ServiceAccount's token."""
    lab.reset()
    admin = KubeClient(kubeconfig=str(lab.kubeconfig))
    try:
        admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "stratus"}})
        admin.create(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "stratus", "namespace": "stratus"},
            }
        )
        install_ = rbac.Install.checked(managed=MANAGED, secrets=secrets)
        for obj in rbac.rbac_objects(permissions.derive(), install_):
            admin.create(obj)
    finally:
        admin.close()
    api = config.new_client_from_config(str(lab.kubeconfig))
    try:
        answer = client.CoreV1Api(api).create_namespaced_service_account_token(
            "stratus",
            "stratus",
            client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])),
        )
    finally:
        api.close()
    token = answer.status.token
    return lab.server.write_kubeconfig(where / "stratus-sa", "hotel", token=token, user="stratus")


def as_stratus(kubeconfig: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    environment = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "STRATUS_DB": str(tmp_path / "stratus.db"),
        "STRATUS_ACTOR": "sre-alice",
        "STRATUS_WRITE_NAMESPACES": ",".join(MANAGED),
        **extra,
    }
    return policy(environment, tmp_path, ALLOW)


@pytest.mark.parametrize(
    "scenario",
    [
        "hotel-rate-failed-hotfix",  # rollout-undo: lists ReplicaSets, replaces a Deployment
        "hotel-all-nodes-cordoned",  # uncordon: the cluster-scoped write
        "hotel-search-service-deleted",  # create-service, undone by a delete
        "hotel-profile-network-policy",  # delete-network-policy, undone by a create
    ],
)
def test_the_service_account_fixes_a_scenario_and_undoes_the_fix(
    rbac_lab: Lab, tmp_path: Path, scenario: str
) -> None:
    kubeconfig = install(rbac_lab, tmp_path)
    inject(rbac_lab, scenario)
    run_env = as_stratus(kubeconfig, tmp_path)
    done = stratus("investigate", "hotel", "--settle-seconds", "20", env=run_env)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "forbidden" not in said.lower(), said
    assert "resolved" in done.stdout, said
    check = rbac_lab.control.get(f"/lab/v1/scenarios/{scenario}/check")
    assert check["passed"], check
    assert [state for _, state in incident_state(run_env["STRATUS_DB"])] == ["resolved"]
    undone = stratus("undo", "--last", "--yes", env=run_env)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert "forbidden" not in (undone.stdout + undone.stderr).lower()


def test_what_lies_outside_the_catalog_is_refused_by_the_cluster(
    rbac_lab: Lab, tmp_path: Path
) -> None:
    kubeconfig = install(rbac_lab, tmp_path)
    kube = KubeClient(kubeconfig=str(kubeconfig))
    user = "system:serviceaccount:stratus:stratus"
    try:
        # Reads Stratus makes are allowed: the managed namespace, its pods, the nodes.
        assert kube.find(ObjectRef("Namespace", "hotel")) is not None
        assert kube.list("v1", "Pod", namespace="hotel")
        assert kube.list("v1", "Node")
        refusals = {
            "a Secret's value": lambda: kube.list("v1", "Secret", namespace="hotel"),
            "deleting a namespace": lambda: kube.delete(ObjectRef("Namespace", "hotel")),
            "reading an unmanaged namespace": lambda: kube.list("v1", "Pod", namespace="shop"),
            "writing an unmanaged namespace": lambda: kube.replace(
                kube_admin_get(rbac_lab, ObjectRef("Deployment", "catalog", "shop"))
            ),
            "deleting a Deployment (no action does)": lambda: kube.delete(
                ObjectRef("Deployment", "frontend", "hotel")
            ),
        }
        for what, attempt in refusals.items():
            with pytest.raises(errors.Forbidden) as refused:
                attempt()
            assert user in refused.value.message, what
    finally:
        kube.close()


def kube_admin_get(lab: Lab, ref: ObjectRef) -> dict[str, object]:
    admin = KubeClient(kubeconfig=str(lab.kubeconfig))
    try:
        return admin.get(ref)
    finally:
        admin.close()


def test_a_look_sees_everything_but_secrets(rbac_lab: Lab, tmp_path: Path) -> None:
    """One look at a managed namespace reads every kind it lists; only Secrets, which the
    default roles leave out, are recorded as unavailable."""
    from agents import snapshot

    kubeconfig = install(rbac_lab, tmp_path)
    kube = KubeClient(kubeconfig=str(kubeconfig))
    try:
        look = snapshot.take(kube, "hotel")
    finally:
        kube.close()
    assert look.unavailable == ("Secret",)
    assert look.pods and look.of("Node")


def test_a_write_in_an_unmanaged_namespace_is_refused_by_the_cluster_and_not_recorded(
    rbac_lab: Lab, tmp_path: Path
) -> None:
    """With the write scope opened to every namespace, RBAC still holds: the cluster refuses,
    the terminal says so in one line, and nothing is recorded as applied."""
    kubeconfig = install(rbac_lab, tmp_path)
    run_env = as_stratus(kubeconfig, tmp_path, STRATUS_WRITE_NAMESPACES="*")
    done = stratus(
        "act", "scale", "deployment/catalog", "replicas=3", "-n", "shop", "--yes", env=run_env
    )
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "forbidden" in said.lower(), said
    assert "internal error" not in said
    listed = stratus("undo", "--list", env=run_env)
    assert "catalog" not in listed.stdout, listed.stdout


def test_kubectl_apply_k_installs_the_lab_overlay_and_delete_k_removes_it(
    rbac_lab: Lab, tmp_path: Path
) -> None:
    """The lab overlay goes in with the real kubectl as a cluster admin would apply it; a
    second apply changes nothing (an upgrade with nothing new); the claim binds; the pod waits
    for the Secret nobody shipped; the ServiceAccount's token reads the managed namespace and
    nothing secret; ``kubectl delete -k`` takes it all away again."""
    rbac_lab.reset()
    admin = kubectl_for("system", rbac_lab, tmp_path)
    overlay = str(REPO / "manifests" / "deploy" / "overlays" / "lab")
    first = admin.out("apply", "-k", overlay, namespace=None)
    assert "deployment.apps/stratus created" in first
    assert "clusterrole.rbac.authorization.k8s.io/stratus-write created" in first
    again = admin.out("apply", "-k", overlay, namespace=None)
    assert "created" not in again and "configured" not in again, again
    rbac_lab.settle()
    assert (
        admin.out(
            "get", "pvc", "stratus-data", "-o", "jsonpath={.status.phase}", namespace="stratus"
        )
        == "Bound"
    )
    waiting = admin.out(
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/name=stratus",
        "-o",
        "jsonpath={.items[0].status.containerStatuses[0].state.waiting.reason}",
        namespace="stratus",
    )
    assert waiting == "CreateContainerConfigError"  # the Secret `stratus` is the operator's
    token = admin.out("create", "token", "stratus", namespace="stratus").strip()
    as_sa = Kubectl(
        admin.binary,
        {
            **admin.env,
            "KUBECONFIG": str(
                rbac_lab.server.write_kubeconfig(tmp_path / "sa", "hotel", token=token, user="sa")
            ),
        },
    )
    assert "frontend" in as_sa.out("get", "deployments", namespace="hotel")
    for args, namespace in (
        (("get", "secrets"), "hotel"),
        (("get", "secrets"), "shop"),
        (("get", "pods"), "default"),  # not managed by the lab overlay (hotel, shop are)
        (("delete", "namespace", "hotel"), None),
        (("get", "pods"), "stratus"),
    ):
        refused = as_sa.run(*args, check=False, namespace=namespace)
        assert refused.returncode != 0 and "forbidden" in refused.stderr, (args, refused.stderr)
    gone = admin.run("delete", "-k", overlay, "--ignore-not-found", namespace=None)
    assert 'namespace "stratus" deleted' in gone.stdout, gone.stdout
    assert admin.run("get", "clusterrole", "stratus-write", check=False, namespace=None).returncode


def test_investigating_a_namespace_stratus_does_not_manage_ends_in_the_cluster_s_refusal(
    rbac_lab: Lab, tmp_path: Path
) -> None:
    """Reads are bound per managed namespace too: elsewhere the first list is refused, and the
    terminal says so in one line."""
    kubeconfig = install(rbac_lab, tmp_path)
    run_env = as_stratus(kubeconfig, tmp_path)
    done = stratus("investigate", "shop", "--settle-seconds", "5", env=run_env)
    said = done.stdout + done.stderr
    assert "internal error" not in said and "Traceback" not in said, said
    assert "forbidden" in said.lower(), said


# One write per area of the catalog, each undone (a pod's deletion has no undo), as the
# ServiceAccount: the derived roles must carry every one of them, dry-run, write and undo.
ACTS = (
    ("scale", "deployment/geo", "replicas=2"),
    ("rollout-restart", "deployment/geo"),
    ("set-env", "deployment/geo", "variable=LOG_LEVEL", "value=debug"),
    ("set-resources", "deployment/rate", "requests=cpu=150m"),
    ("set-node-selector", "deployment/rate", "node-selector=disktype=ssd"),
    ("patch-service", "service/geo", "target-port=9999"),
    ("patch-configmap-key", "configmap/hotel-config", "key=log-level", "value=debug"),
    ("cordon", "node/node-1"),
)


def test_each_area_of_the_catalog_writes_and_undoes_as_the_service_account(
    rbac_lab: Lab, tmp_path: Path
) -> None:
    kubeconfig = install(rbac_lab, tmp_path)
    run_env = as_stratus(kubeconfig, tmp_path)
    for action, target, *pairs in ACTS:
        done = stratus("act", action, target, *pairs, "-n", "hotel", "--yes", env=run_env)
        said = done.stdout + done.stderr
        assert done.returncode == 0 and "forbidden" not in said.lower(), (action, said)
        undone = stratus("undo", "--last", "--yes", env=run_env)
        said = undone.stdout + undone.stderr
        assert undone.returncode == 0 and "forbidden" not in said.lower(), (action, said)
    pod = next(
        p["metadata"]["name"]
        for p in kube_admin_list(rbac_lab, "hotel")
        if p["metadata"]["name"].startswith("frontend-")
    )
    done = stratus("act", "delete-pod", f"pod/{pod}", "-n", "hotel", "--yes", env=run_env)
    assert done.returncode == 0, done.stdout + done.stderr


def kube_admin_list(lab: Lab, namespace: str) -> list[dict[str, Any]]:
    admin = KubeClient(kubeconfig=str(lab.kubeconfig))
    try:
        return admin.list("v1", "Pod", namespace=namespace)
    finally:
        admin.close()


def test_with_secrets_opted_in_a_drifted_credential_is_restored_and_undone(
    rbac_lab: Lab, tmp_path: Path
) -> None:
    """The opt-in role carries what the credential analyzer and restore-secret-key need: the
    Secrets a look reads, the Secret written, and the keeper of its old values, created
    before the write and read and deleted by the undo."""
    kubeconfig = install(rbac_lab, tmp_path, secrets=MANAGED)
    inject(rbac_lab, "hotel-geo-credentials-revoked")
    run_env = as_stratus(kubeconfig, tmp_path)
    done = stratus("investigate", "hotel", "--settle-seconds", "20", env=run_env)
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "forbidden" not in said.lower(), said
    assert "restore" in said.lower() and "resolved" in done.stdout, said
    # The fix restored the Secret and restarted its reader; the Secret's write is undone.
    listed = stratus("undo", "--list", env=run_env).stdout
    entry = next(line.split()[0] for line in listed.splitlines() if "secret/mongodb-geo" in line)
    undone = stratus("undo", entry, "--yes", env=run_env)
    said = undone.stdout + undone.stderr
    assert undone.returncode == 0 and "forbidden" not in said.lower(), said
    assert "undone: " in said and "secret/mongodb-geo-auth" in said, said
    kept = kube_admin_secrets(rbac_lab, "hotel")
    assert not [name for name in kept if name.startswith("stratus-undo-")], kept


def kube_admin_secrets(lab: Lab, namespace: str) -> list[str]:
    admin = KubeClient(kubeconfig=str(lab.kubeconfig))
    try:
        return [s["metadata"]["name"] for s in admin.list("v1", "Secret", namespace=namespace)]
    finally:
        admin.close()
