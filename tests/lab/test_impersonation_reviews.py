"""The access reviews answer for the impersonated identity, as a real API server's do: with
``--as``, ``kubectl auth can-i --list`` (SelfSubjectRulesReview) and ``kubectl auth can-i VERB
RESOURCE`` (SelfSubjectAccessReview) are evaluated for the user (and groups) acted as, never
for the sender.

Reported in issue 19 against the lab with Stratus deployed: ``kubectl
--as=system:serviceaccount:stratus:stratus auth can-i --list -n hotel`` was said to list only
the ``selfsubject*`` rules while the ServiceAccount's own token listed them all. The lab here
holds Stratus's shipped RBAC (``manifests/deploy/base`` and the lab overlay's bindings), which
lets the ServiceAccount read and write some kinds in ``hotel`` but never read Secrets.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.runner import LabServer
from tests.conftest import Kubectl, Lab, kubectl_for

DEPLOY = Path(__file__).resolve().parents[2] / "manifests" / "deploy"
SA = "system:serviceaccount:stratus:stratus"


@pytest.fixture(scope="module")
def shipped_rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    server = LabServer(apps=["hotel"], rbac=True).start()
    folder = tmp_path_factory.mktemp("reviews")
    lab = Lab(server, server.write_kubeconfig(folder / "admin", "hotel"))
    admin = kubectl_for("system", lab, folder)
    admin.run("create", "namespace", "shop", namespace=None)  # the bindings name it
    for part in ("base/namespace.yaml", "base/serviceaccount.yaml", "base/rbac.yaml"):
        admin.run("apply", "-f", str(DEPLOY / part), namespace=None)
    admin.run("apply", "-f", str(DEPLOY / "overlays/lab/bindings.yaml"), namespace=None)
    # alice may change deployments in hotel, and nothing else of her own.
    admin.run("create", "role", "deployer", "--verb=get,update", "--resource=deployments")
    admin.run("create", "rolebinding", "alice-deploys", "--role=deployer", "--user=alice")
    # The ServiceAccount may act as alice (Stratus's impersonation component grants this).
    admin.run(
        "create",
        "clusterrole",
        "act-as-alice",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=alice",
        namespace=None,
    )
    admin.run(
        "create",
        "clusterrolebinding",
        "act-as-alice",
        "--clusterrole=act-as-alice",
        "--serviceaccount=stratus:stratus",
        namespace=None,
    )
    yield lab
    server.stop()


def _as_account(lab: Lab, tmp_path: Path) -> Kubectl:
    """kubectl with a token of Stratus's ServiceAccount (not the admin's)."""
    admin = kubectl_for("system", lab, tmp_path)
    token = admin.out("create", "token", "stratus", namespace="stratus").strip()
    kubeconfig = lab.server.write_kubeconfig(tmp_path / "account", "hotel", token=token)
    return Kubectl(admin.binary, {**admin.env, "KUBECONFIG": str(kubeconfig)}, admin.name)


def test_can_i_list_as_the_serviceaccount_lists_what_its_own_token_lists(
    shipped_rbac_lab: Lab, tmp_path: Path
) -> None:
    admin = kubectl_for("system", shipped_rbac_lab, tmp_path)
    own = _as_account(shipped_rbac_lab, tmp_path).out("auth", "can-i", "--list")
    acted = admin.out("auth", "can-i", "--list", f"--as={SA}")
    assert acted == own
    rows = {line.split()[0] for line in acted.splitlines()[1:] if not line.startswith(" ")}
    assert {"deployments.apps", "configmaps", "pods"} <= rows, acted
    assert "secrets" not in rows and "*.*" not in rows, acted  # not the admin's rules


def test_can_i_verb_resource_as_the_serviceaccount_answers_for_it(
    shipped_rbac_lab: Lab, tmp_path: Path
) -> None:
    admin = kubectl_for("system", shipped_rbac_lab, tmp_path)
    secrets = admin.run("auth", "can-i", "get", "secrets", f"--as={SA}", check=False)
    assert (secrets.stdout.strip(), secrets.returncode) == ("no", 1), secrets.stderr
    assert admin.out("auth", "can-i", "update", "deployments", f"--as={SA}").strip() == "yes"
    # The admin itself may, of course: the answer above was not the sender's.
    assert admin.out("auth", "can-i", "get", "secrets").strip() == "yes"


def test_a_sender_that_is_not_an_admin_gets_the_impersonated_users_rules_not_its_own(
    shipped_rbac_lab: Lab, tmp_path: Path
) -> None:
    account = _as_account(shipped_rbac_lab, tmp_path)
    listed = account.out("auth", "can-i", "--list", "--as=alice")
    rows = {line.split()[0] for line in listed.splitlines()[1:] if not line.startswith(" ")}
    assert "deployments.apps" in rows and "configmaps" not in rows, listed
    assert account.out("auth", "can-i", "update", "deployments", "--as=alice").strip() == "yes"
    pods = account.run("auth", "can-i", "get", "pods", "--as=alice", check=False)
    assert pods.stdout.strip() == "no"  # the ServiceAccount may; alice may not
