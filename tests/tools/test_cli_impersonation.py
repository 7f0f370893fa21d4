"""Writes made as the approver, at the terminal: ``stratus act … --yes`` against a lab with
RBAC on, on a ServiceAccount that may write nothing itself, with ``STRATUS_IMPERSONATION``
mapping ``cli:alice`` → alice (may change deployments in hotel) and ``cli:bob`` → bob (may
only read them). What the terminal prints is what is asserted."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.runner import LabServer
from tests.conftest import Lab, stratus
from tests.impersonation_lab import set_up
from tools.k8s import KubeClient
from tools.objects import ObjectRef

MAPPING = """\
apiVersion: stratus/v1
kind: Impersonation
people:
  - who: cli:alice
    user: alice
  - who: cli:bob
    user: bob
"""


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    server = LabServer(apps=["hotel"], rbac=True).start()
    folder = tmp_path_factory.mktemp("imperson-cli")
    admin = server.write_kubeconfig(folder / "admin", "hotel")
    account = set_up(server, admin, folder / "stratus")
    yield Lab(server, admin), account
    server.stop()


def _env(rbac_lab: tuple[Lab, Path], tmp_path: Path, actor: str) -> dict[str, str]:
    _lab, account = rbac_lab
    mapping = tmp_path / "impersonation.yaml"
    if not mapping.exists():
        mapping.write_text(MAPPING)
    return {
        **os.environ,
        "KUBECONFIG": str(account),
        "STRATUS_DB": str(tmp_path / "stratus.db"),
        "STRATUS_ACTOR": actor,
        "STRATUS_IMPERSONATION": str(mapping),
    }


def _replicas(lab: Lab, name: str) -> int:
    admin = KubeClient(kubeconfig=str(lab.kubeconfig))
    try:
        return int(admin.get(ObjectRef("Deployment", name, "hotel"))["spec"]["replicas"])
    finally:
        admin.close()


def test_alice_writes_and_undoes_as_alice_bob_is_refused_by_the_cluster_carol_is_not_mapped(
    rbac_lab: tuple[Lab, Path], tmp_path: Path
) -> None:
    lab = rbac_lab[0]
    before = _replicas(lab, "geo")
    alice = _env(rbac_lab, tmp_path, "alice")
    applied = stratus("act", "scale", "geo", "replicas=3", "-n", "hotel", "--yes", env=alice)
    assert applied.returncode == 0 and "applied: Scale deployment/geo" in applied.stdout, (
        applied.stderr + applied.stdout
    )
    assert _replicas(lab, "geo") == 3
    undone = stratus("undo", "--last", "--yes", env=alice)
    assert undone.returncode == 0 and "undone: Scale deployment/geo" in undone.stdout, (
        undone.stderr + undone.stdout
    )
    assert _replicas(lab, "geo") == before

    bob = _env(rbac_lab, tmp_path, "bob")
    refused = stratus("act", "scale", "geo", "replicas=3", "-n", "hotel", "--yes", env=bob)
    assert refused.returncode == 1, refused.stderr + refused.stdout
    assert "the cluster refused this for cli:bob (as bob)" in refused.stderr, refused.stderr
    assert (
        'deployments.apps "geo" is forbidden: User "bob" cannot update resource "deployments" '
        'in API group "apps" in the namespace "hotel"'
    ) in refused.stderr
    assert "hint: the cluster refused this for cli:bob" in refused.stderr
    assert "internal error" not in refused.stderr + refused.stdout
    assert _replicas(lab, "geo") == before
    # Nothing was recorded as applied: only alice's undone write is in the history.
    listed = stratus("undo", "--list", env=bob)
    assert "nothing to undo" in listed.stdout, listed.stderr + listed.stdout

    carol = _env(rbac_lab, tmp_path, "carol")
    unmapped = stratus("act", "scale", "geo", "replicas=3", "-n", "hotel", "--yes", env=carol)
    assert unmapped.returncode == 1, unmapped.stderr + unmapped.stdout
    # Refused when carol approves (finding 5): her vote is not counted, nothing is sent, and
    # the proposal stays open for someone mapped.
    assert "the approval of cli:carol on" in unmapped.stderr, unmapped.stderr
    assert (
        "hint: you have no Kubernetes identity in the impersonation mapping; someone mapped "
        "must approve (or add cli:carol to"
    ) in unmapped.stderr
    assert _replicas(lab, "geo") == before


def test_a_mapping_that_does_not_load_stops_the_command_with_file_and_line(
    rbac_lab: tuple[Lab, Path], tmp_path: Path
) -> None:
    env = _env(rbac_lab, tmp_path, "alice")
    Path(env["STRATUS_IMPERSONATION"]).write_text(MAPPING + "    user: eve\n")
    refused = stratus("act", "scale", "geo", "replicas=3", "-n", "hotel", "--yes", env=env)
    assert refused.returncode == 1, refused.stderr + refused.stdout
    assert "the impersonation mapping does not load" in refused.stderr
    assert f"{env['STRATUS_IMPERSONATION']}:8:5: duplicate key 'user'" in refused.stderr
    assert "stratus impersonation check" in refused.stderr
    assert _replicas(rbac_lab[0], "geo") == 1
