"""What the CLI says when it refuses or reports: plain English, nothing it does not know, and
the words that fit the case (issue 16 follow-up, L3). In-process through click's runner, against
the lab."""

from __future__ import annotations

import time
from pathlib import Path

from click.testing import CliRunner, Result

from cli.main import stratus as stratus_cli
from store.db import Store
from tools.k8s import KubeClient
from tools.objects import ObjectRef

GEO = ObjectRef("Deployment", "geo", "hotel")
TWO_PEOPLE_SOON = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: test}
defaults: {approval_timeout: 2s}
rules:
  - name: two-people
    match: {actions: [scale]}
    decision: ask
    min_approvals: 2
"""


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(stratus_cli, list(args), env=env, catch_exceptions=False)


def edit(env: dict[str, str], sql: str) -> None:
    store = Store(env["STRATUS_DB"])
    try:
        with store.immediate() as db:
            db.execute(sql)
    finally:
        store.close()


def test_a_parameter_of_the_wrong_type_reads_as_english(env: dict[str, str]) -> None:
    result = run(env, "act", "scale", "deploy/geo", "replicas=no", "-n", "hotel", "--yes")
    assert result.exit_code == 1
    assert "parameter 'replicas' of scale is an integer" in result.stderr, result.stderr
    assert " a integer" not in result.stderr


def test_investigating_an_empty_namespace_says_the_namespace_is_missing(
    env: dict[str, str],
) -> None:
    for namespace in ("", " "):
        result = run(env, "investigate", namespace, "--planner", "offline")
        assert result.exit_code == 1, result.output
        assert "namespace" in result.stderr and "KIND/NAME" not in result.stderr, result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert "stratus investigate NAMESPACE" in result.stderr or "valid namespace" in (
            result.stderr
        )


def test_undoing_an_entry_undone_by_someone_unknown_says_nothing_it_does_not_know(
    env: dict[str, str], kube: KubeClient
) -> None:
    applied = run(env, "act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes")
    assert applied.exit_code == 0, applied.stderr
    assert run(env, "undo", "--last", "--yes").exit_code == 0
    # Who and when are not known (a row written by an older Stratus, or cleared by hand).
    edit(env, "UPDATE undo_entries SET undone_at = NULL, undone_by = NULL")
    entry = Store(env["STRATUS_DB"]).query("SELECT id FROM undo_entries")[0]["id"]
    for args in (("undo", entry, "--yes"), ("undo", "--last", "--yes")):
        again = run(env, *args)
        assert again.exit_code == 1, again.output
        assert "already undone" in again.stderr, again.stderr
        assert "None" not in again.stderr, again.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 1


def test_a_proposal_that_expired_half_approved_says_how_far_it_got(
    env: dict[str, str], tmp_path: Path, kube: KubeClient
) -> None:
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "policy.yaml").write_text(TWO_PEOPLE_SOON)
    env = {**env, "STRATUS_POLICY_DIR": str(policy)}
    voted = run(env, "act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes")
    assert voted.exit_code == 0 and "1 of 2 approvals" in voted.stdout, voted.output
    proposal = Store(env["STRATUS_DB"]).query("SELECT id FROM proposals")[0]["id"]
    time.sleep(2.5)
    run(env, "proposals", "list")  # expires what nobody answered in time
    shown = run(env, "proposals", "show", proposal)
    assert "expired with 1 of 2 approvals" in shown.stdout, shown.stdout
    assert "nobody answered" not in shown.stdout
    assert kube.get(GEO)["spec"]["replicas"] == 1
