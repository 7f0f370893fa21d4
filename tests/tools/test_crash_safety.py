"""Kill ``stratus act`` with SIGKILL at each step of the executor; after restart the store
agrees with the cluster, locks are free, and undo still works."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from store.db import Store
from tests.conftest import stratus
from tools.crashpoints import STEPS
from tools.k8s import KubeClient
from tools.objects import ObjectRef

GEO = ObjectRef("Deployment", "geo", "hotel")
APPLIED_FROM = STEPS.index("written")


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_at_any_step_is_recovered(
    env: dict[str, str], kube: KubeClient, tmp_path: Path, step: str
) -> None:
    crashed = stratus(
        "act",
        "scale",
        "deploy/geo",
        "replicas=3",
        "-n",
        "hotel",
        "--yes",
        env={**env, "STRATUS_CRASHPOINT": step},
    )
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    applied = STEPS.index(step) >= APPLIED_FROM
    assert kube.get(GEO)["spec"]["replicas"] == (3 if applied else 1)

    listed = stratus("undo", "--list", env=env)  # start-up reconciliation runs first
    assert listed.returncode == 0, listed.stderr
    store = Store(tmp_path / "stratus.db")
    states = [r["state"] for r in store.query("SELECT state FROM executions")]
    assert "pending" not in states
    assert store.query("SELECT COUNT(*) AS n FROM locks")[0]["n"] == 0
    entries = store.query("SELECT state FROM undo_entries")
    if applied:
        assert [e["state"] for e in entries] == ["active"]
        assert "Scale deployment/geo in hotel from 1 to 3 replicas" in listed.stdout
        undone = stratus("undo", "--last", "--yes", env=env)
        assert undone.returncode == 0, undone.stderr
        assert kube.get(GEO)["spec"]["replicas"] == 1
    else:
        assert entries == [] and "nothing to undo" in listed.stdout
        assert states in ([], ["aborted"])
    again = stratus("act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes", env=env)
    assert again.returncode == 0, again.stderr
    assert stratus("audit", "verify", env=env).returncode == 0
    store.close()


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_during_undo_is_recovered(
    env: dict[str, str], kube: KubeClient, tmp_path: Path, step: str
) -> None:
    assert (
        stratus(
            "act", "scale", "deploy/geo", "replicas=3", "-n", "hotel", "--yes", env=env
        ).returncode
        == 0
    )
    crashed = stratus("undo", "--last", "--yes", env={**env, "STRATUS_CRASHPOINT": step})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    restored = STEPS.index(step) >= APPLIED_FROM
    assert kube.get(GEO)["spec"]["replicas"] == (1 if restored else 3)
    listed = stratus("undo", "--list", env=env)
    assert listed.returncode == 0, listed.stderr
    if restored:
        assert "nothing to undo" in listed.stdout  # the entry left with its inverse
    else:
        assert "Scale deployment/geo" in listed.stdout
        assert stratus("undo", "--last", "--yes", env=env).returncode == 0
        assert kube.get(GEO)["spec"]["replicas"] == 1
    store = Store(tmp_path / "stratus.db")
    assert store.query("SELECT COUNT(*) AS n FROM executions WHERE state = 'pending'")[0]["n"] == 0
    store.close()
