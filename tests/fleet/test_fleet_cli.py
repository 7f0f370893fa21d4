"""The fleet from a terminal (issue 19 §4): ``STRATUS_CLUSTERS=a,b,c stratus investigate hotel
--cluster b`` investigates and fixes b's lab only, and ``incidents show`` / ``proposals show``
name the cluster; an unknown cluster or a bad cluster name is one clear line, nothing opened."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from cli.main import stratus as stratus_cli
from tests.conftest import stratus
from tests.fleet.conftest import CLUSTERS, FleetLabs
from tools.k8s import KubeClient
from tools.objects import ObjectRef

SCENARIO = "hotel-recommendation-scaled-to-zero"
ALLOW = {
    "apiVersion": "stratus/v1",
    "kind": "ApprovalPolicy",
    "metadata": {"name": "allow"},
    "rules": [{"name": "allow-everything", "decision": "allow", "allow_irreversible": True}],
}


def fleet_env(labs: FleetLabs, tmp_path: Path) -> dict[str, str]:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "allow.yaml").write_text(yaml.safe_dump(ALLOW))
    return {
        **os.environ,
        "KUBECONFIG": str(labs.kubeconfig),
        "STRATUS_DB": str(tmp_path / "stratus.db"),
        "STRATUS_ACTOR": "sre-alice",
        "STRATUS_POLICY_DIR": str(policies),
        "STRATUS_CLUSTERS": ",".join(CLUSTERS),
    }


def replicas(labs: FleetLabs, cluster: str) -> int:
    kube = KubeClient(kubeconfig=str(labs.kubeconfig), context=cluster)
    try:
        ref = ObjectRef("Deployment", "recommendation", "hotel")
        return int(kube.get(ref)["spec"]["replicas"])
    finally:
        kube.close()


def test_investigate_a_cluster_of_the_fleet_from_a_terminal(
    labs: FleetLabs, tmp_path: Path
) -> None:
    labs.reset()
    labs.inject("b", SCENARIO)
    env = fleet_env(labs, tmp_path)
    done = stratus("investigate", "hotel", "--cluster", "b", "--yes", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "on hotel in cluster b" in done.stdout
    assert [replicas(labs, c) for c in CLUSTERS] == [1, 1, 1]
    incident_id = done.stdout.split("incident ", 1)[1].split()[0]
    shown = stratus("incidents", "show", incident_id, env=env)
    assert "cluster:   b" in shown.stdout, shown.stdout + shown.stderr


def test_an_unknown_cluster_or_a_bad_name_is_one_clear_line(
    labs: FleetLabs, tmp_path: Path
) -> None:
    env = fleet_env(labs, tmp_path)
    unknown = stratus("investigate", "hotel", "--cluster", "prod", env=env)
    assert unknown.returncode != 0
    assert "'prod' is not one this Stratus serves (it serves a, b, c)" in unknown.stderr
    assert "hint: name one of them with --cluster" in unknown.stderr
    assert "Traceback" not in unknown.stderr and "internal error" not in unknown.stderr
    bad = stratus("investigate", "hotel", env={**env, "STRATUS_CLUSTERS": "a,Prod_EU"})
    assert bad.returncode != 0 and "'Prod_EU' is not a usable cluster name" in bad.stderr
    assert "Traceback" not in bad.stderr
    listed = stratus("incidents", "list", env=env)
    assert "inc-" not in listed.stdout


def frontend(labs: FleetLabs, cluster: str) -> int:
    kube = KubeClient(kubeconfig=str(labs.kubeconfig), context=cluster)
    try:
        return int(kube.get(ObjectRef("Deployment", "frontend", "hotel"))["spec"]["replicas"])
    finally:
        kube.close()


def test_act_in_one_cluster_and_undo_it_from_a_terminal_configured_otherwise(
    labs: FleetLabs, tmp_path: Path
) -> None:
    labs.reset()
    env = fleet_env(labs, tmp_path)
    acted = stratus(
        "act", "scale", "deployment/frontend", "replicas=2", "--cluster", "c", "--yes", env=env
    )
    assert acted.returncode == 0, acted.stdout + acted.stderr
    assert "cluster: c" in acted.stdout and "applied:" in acted.stdout
    assert [frontend(labs, c) for c in CLUSTERS] == [1, 1, 2]
    # The stack says where each write was made: the undo goes back there.
    listed = CliRunner().invoke(stratus_cli, ["undo", "--list"], env=env)
    assert listed.exit_code == 0, listed.output
    (entry,) = [line for line in listed.output.splitlines() if "frontend" in line]
    assert entry.split()[2] == "c" and "sre-alice" in entry, listed.output
    # A terminal not told about the fleet refuses, naming the cluster, and acts nowhere.
    alone = {k: v for k, v in env.items() if k != "STRATUS_CLUSTERS"}
    refused = stratus("undo", "--last", "--yes", env=alone)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "cluster 'c' is not one this Stratus serves" in refused.stderr, refused.stderr
    assert "set $STRATUS_CLUSTERS" in refused.stderr
    assert [frontend(labs, c) for c in CLUSTERS] == [1, 1, 2]
    # Another terminal, whose default cluster is b: the undo goes back to c.
    undone = stratus("undo", "--last", "--yes", env={**env, "STRATUS_CLUSTERS": "b,a,c"})
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert [frontend(labs, c) for c in CLUSTERS] == [1, 1, 1]


def test_policy_explain_takes_the_cluster_a_rule_matches(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "freeze.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: freeze}\nrules:\n"
        "  - {name: freeze-prod, decision: deny, match: {clusters: ['prod-*']}}\n"
    )
    env = {
        **os.environ,
        "STRATUS_DB": str(tmp_path / "stratus.db"),
        "STRATUS_POLICY_DIR": str(policies),
        "STRATUS_ACTOR": "sre-alice",
    }
    args = ("policy", "explain", "--action", "scale", "-n", "hotel", "--resource", "deployment/a")
    frozen = stratus(*args, "--cluster", "prod-eu", env=env)
    assert frozen.stdout.startswith("deny:") and "freeze-prod" in frozen.stdout, frozen.stdout
    elsewhere = stratus(*args, "--cluster", "staging", env=env)
    assert "freeze-prod" not in elsewhere.stdout and elsewhere.returncode == 0, elsewhere.stdout
    bad = stratus(*args, "--cluster", "Prod EU", env=env)
    assert bad.returncode != 0 and "not a usable cluster name" in bad.stderr, bad.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["investigate", "hotel", "--cluster", ""],
        ["investigate", "hotel", "--cluster=", "--yes"],
        ["investigate", "hotel", "--cluster", " "],
        ["act", "scale", "deployment/geo", "replicas=2", "-n", "hotel", "--cluster", ""],
    ],
)
def test_an_empty_cluster_gets_the_usage_never_the_default_cluster(
    args: list[str], tmp_path: Path
) -> None:
    """``--cluster "$CLUSTER"`` with the variable unset: refused before anything opens."""
    env = {"STRATUS_CLUSTERS": "a,b", "STRATUS_DB": str(tmp_path / "stratus.db")}
    refused = CliRunner().invoke(stratus_cli, args, env=env)
    assert refused.exit_code == 2, refused.output
    assert "Usage: stratus" in refused.output
    assert "--cluster needs a cluster's name (leave it out for the default cluster)" in (
        refused.output
    )
    assert not (tmp_path / "stratus.db").exists()


def test_act_says_how_to_pick_a_cluster() -> None:
    group = CliRunner().invoke(stratus_cli, ["act", "--help"])
    assert group.exit_code == 0 and "--cluster NAME" in group.output, group.output
    action = CliRunner().invoke(stratus_cli, ["act", "scale", "--help"])
    assert "--cluster NAME" in action.output and "cluster to change" in action.output
