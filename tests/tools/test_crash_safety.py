"""Kill ``stratus act`` with SIGKILL at each step of the executor; after restart the store
agrees with the cluster, locks are free, and undo still works.

The command that dies runs in its own process (it is SIGKILLed); the commands after the
restart run in this process through click's runner: a process other than the dead one, which
is all recovery needs."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_command
from store.db import Store
from tests.conftest import stratus as stratus_process
from tools.crashpoints import STEPS
from tools.k8s import KubeClient
from tools.objects import ObjectRef

GEO = ObjectRef("Deployment", "geo", "hotel")
APPLIED_FROM = STEPS.index("written")


def stratus(*args: str, env: dict[str, str]) -> Result:
    return CliRunner().invoke(stratus_command, list(args), env=env, catch_exceptions=False)


def crash(*args: str, env: dict[str, str], step: str) -> None:
    crashed = stratus_process(*args, env={**env, "STRATUS_CRASHPOINT": step})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr


def applied_at(step: str) -> bool:
    return STEPS.index(step) >= APPLIED_FROM


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_at_any_step_is_recovered(
    env: dict[str, str], kube: KubeClient, tmp_path: Path, step: str
) -> None:
    crash("act", "scale", "deploy/geo", "replicas=3", "-n", "hotel", "--yes", env=env, step=step)
    applied = applied_at(step)
    assert kube.get(GEO)["spec"]["replicas"] == (3 if applied else 1)

    listed = stratus("undo", "--list", env=env)  # start-up reconciliation runs first
    assert listed.exit_code == 0, listed.stderr
    store = Store(tmp_path / "stratus.db")
    states = [r["state"] for r in store.query("SELECT state FROM executions")]
    assert "pending" not in states
    assert store.query("SELECT COUNT(*) AS n FROM locks")[0]["n"] == 0
    executing = store.query("SELECT id FROM proposals WHERE state = 'executing'")
    assert executing == [], "a proposal whose executor died is left executing"
    entries = store.query("SELECT state FROM undo_entries")
    if applied:
        assert [e["state"] for e in entries] == ["active"]
        assert "Scale deployment/geo in hotel from 1 to 3 replicas" in listed.stdout
        undone = stratus("undo", "--last", "--yes", env=env)
        assert undone.exit_code == 0, undone.stderr
        assert kube.get(GEO)["spec"]["replicas"] == 1
    else:
        assert entries == [] and "nothing to undo" in listed.stdout
        assert states in ([], ["aborted"])
    again = stratus("act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes", env=env)
    assert again.exit_code == 0, again.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 2
    assert stratus("audit", "verify", env=env).exit_code == 0
    store.close()


@pytest.mark.parametrize("step", STEPS)
def test_a_crash_during_undo_is_recovered(
    env: dict[str, str], kube: KubeClient, tmp_path: Path, step: str
) -> None:
    scaled = stratus("act", "scale", "deploy/geo", "replicas=3", "-n", "hotel", "--yes", env=env)
    assert scaled.exit_code == 0, scaled.stderr
    crash("undo", "--last", "--yes", env=env, step=step)
    restored = applied_at(step)
    assert kube.get(GEO)["spec"]["replicas"] == (1 if restored else 3)
    listed = stratus("undo", "--list", env=env)
    assert listed.exit_code == 0, listed.stderr
    if restored:
        assert "nothing to undo" in listed.stdout  # the entry left with its inverse
    else:
        assert "Scale deployment/geo" in listed.stdout
        undone = stratus("undo", "--last", "--yes", env=env)
        assert undone.exit_code == 0, undone.stderr
        assert kube.get(GEO)["spec"]["replicas"] == 1
    store = Store(tmp_path / "stratus.db")
    assert store.query("SELECT COUNT(*) AS n FROM executions WHERE state = 'pending'")[0]["n"] == 0
    executing = store.query("SELECT id FROM proposals WHERE state = 'executing'")
    assert executing == [], "a proposal whose executor died is left executing"
    store.close()
