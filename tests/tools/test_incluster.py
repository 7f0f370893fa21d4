"""Stratus in a pod: the ServiceAccount's token, CA and namespace, and a token that rotates.

The lab runs with RBAC on (HTTPS). A ServiceAccount gets a Role, ``kubectl create token``
mints its token, and the files are laid out as the kubelet projects them (``..data`` swapped
atomically on rotation) in ``$STRATUS_SERVICEACCOUNT_DIR``. With no kubeconfig anywhere and
``KUBERNETES_SERVICE_HOST/PORT`` pointing at the lab, the client is the account. Then the
account is re-created (its old token stops working, as a revoked one does), the file rotates,
and the same client — no restart — carries on with the new token.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from lab.runner import LabServer
from tests.conftest import Kubectl, Lab, kubectl_for
from tools import errors, k8s

NS = "team"


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    server = LabServer(apps=[], rbac=True).start()
    kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("incluster") / "admin", NS)
    yield Lab(server, kubeconfig)
    server.stop()


def _account(admin: Kubectl) -> None:
    admin.run("create", "namespace", NS, namespace=None)
    admin.run("create", "deployment", "web", "--image=nginx", namespace=NS)
    admin.run("create", "serviceaccount", "stratus", namespace=NS)
    admin.run(
        "create", "role", "stratus", "--verb=get,list", "--resource=deployments", namespace=NS
    )
    admin.run(
        "create",
        "rolebinding",
        "stratus",
        "--role=stratus",
        f"--serviceaccount={NS}:stratus",
        namespace=NS,
    )


def _project(directory: Path, *, token: str, ca: str, generation: int) -> None:
    """Lay the files out as the kubelet does: ``token`` → ``..data/token``, and a rotation
    swaps ``..data`` to a new timestamped folder in one rename."""
    folder = directory / f"..gen{generation}"
    folder.mkdir()
    (folder / "token").write_text(token)  # a projected token has no newline
    (folder / "ca.crt").write_text(ca)
    (folder / "namespace").write_text(NS)
    link = directory / "..data_tmp"
    link.symlink_to(folder.name)
    os.replace(link, directory / "..data")
    for name in ("token", "ca.crt", "namespace"):
        if not (directory / name).is_symlink():
            (directory / name).symlink_to(f"..data/{name}")


def _deployments(kube: k8s.KubeClient) -> list[str]:
    return [d["metadata"]["name"] for d in kube.list("apps/v1", "Deployment", namespace=NS)]


def test_in_a_pod_the_client_is_the_serviceaccount_and_follows_its_rotating_token(
    rbac_lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    admin = kubectl_for("system", rbac_lab, tmp_path)
    _account(admin)
    ca = rbac_lab.server.ca_pem
    assert ca is not None
    mounted = tmp_path / "serviceaccount"
    mounted.mkdir()
    _project(
        mounted,
        token=admin.out("create", "token", "stratus", namespace=NS).strip(),
        ca=ca,
        generation=1,
    )
    url = urlparse(rbac_lab.url)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(home))  # no ~/.kube/config either
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", str(url.hostname))
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(url.port))
    monkeypatch.setenv("STRATUS_SERVICEACCOUNT_DIR", str(mounted))

    assert k8s.context_namespace(None, None) == NS
    kube = k8s.KubeClient()
    try:
        assert kube.in_cluster and kube.pod_namespace == NS
        assert kube.host == f"https://{url.hostname}:{url.port}"
        assert _deployments(kube) == ["web"]
        # It is the account, not an admin: what its Role does not grant is refused.
        with pytest.raises(errors.Forbidden, match="system:serviceaccount:team:stratus"):
            kube.list("v1", "Secret", namespace=NS)

        # The account is re-created: the token the client holds is no longer accepted...
        admin.run("delete", "serviceaccount", "stratus", namespace=NS)
        admin.run("create", "serviceaccount", "stratus", namespace=NS)
        with pytest.raises(errors.Forbidden, match="not authenticated"):
            _deployments(kube)
        # ...until the kubelet rotates the file: the same client uses the new token.
        _project(
            mounted,
            token=admin.out("create", "token", "stratus", namespace=NS).strip(),
            ca=ca,
            generation=2,
        )
        assert _deployments(kube) == ["web"]
    finally:
        kube.close()


def test_a_kubeconfig_wins_over_the_pod(
    rbac_lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "1")
    monkeypatch.setenv("STRATUS_SERVICEACCOUNT_DIR", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("KUBECONFIG", str(rbac_lab.kubeconfig))
    kube = k8s.KubeClient()
    try:
        assert not kube.in_cluster
        assert kube.host == rbac_lab.url
    finally:
        kube.close()


def test_an_incomplete_mount_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "6443")
    monkeypatch.setenv("STRATUS_SERVICEACCOUNT_DIR", str(tmp_path / "sa"))
    with pytest.raises(errors.Unavailable) as refused:
        k8s.KubeClient()
    message = str(refused.value)
    assert "\n" not in message
    assert "in-cluster configuration" in message and str(tmp_path / "sa" / "token") in message
