"""``stratus investigate`` and ``stratus incidents`` as a user runs them: real processes, the
lab over HTTP, the offline planner, policy files on disk."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.cluster.clock import REALTIME
from lab.runner import LabServer, write_kubeconfig
from tests.conftest import REPO, Lab, stratus

ALLOW = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: allow-all}
rules:
- name: allow-all
  decision: allow
  allow_irreversible: true
"""
ASK = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: ask-all}
defaults: {approvers: ["*"]}
rules:
- name: ask-all
  decision: ask
"""


def policy(env: dict[str, str], tmp_path: Path, text: str) -> dict[str, str]:
    directory = tmp_path / "policy"
    directory.mkdir(exist_ok=True)
    (directory / "policy.yaml").write_text(text)
    return {**env, "STRATUS_POLICY_DIR": str(directory)}


def inject(lab: Lab, scenario: str) -> None:
    lab.control.post(f"/lab/v1/scenarios/{scenario}/inject")
    lab.settle()


def incident_state(db: str) -> list[tuple[str, str]]:
    try:
        with sqlite3.connect(db) as conn:
            return [(r[0], r[1]) for r in conn.execute("SELECT id, state FROM incidents")]
    except sqlite3.OperationalError:
        return []  # the command is still creating the database


def test_investigate_rolls_a_failed_hotfix_back_past_the_revision_seen_crashing(
    lab: Lab, env: dict[str, str], tmp_path: Path
) -> None:
    inject(lab, "hotel-rate-failed-hotfix")
    run_env = policy(env, tmp_path, ALLOW)
    done = stratus("investigate", "hotel", "--settle-seconds", "20", env=run_env)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Deployment/rate" in out and "revision 2 failed too" in out
    assert "to revision 1" in out and "resolved" in out
    check = lab.control.get("/lab/v1/scenarios/hotel-rate-failed-hotfix/check")
    assert check["passed"], check
    incident_id = incident_state(run_env["STRATUS_DB"])[0][0]
    shown = stratus("incidents", "show", incident_id, env=run_env)
    assert "attempt 1" in shown.stdout and "verdict healthy" in shown.stdout
    assert "verified: attempt 1: healthy" in shown.stdout
    listed = stratus("incidents", "list", env=run_env)
    assert incident_id in listed.stdout and "resolved" in listed.stdout


@pytest.mark.parametrize("scenario", ["shop-catalog-target-port", "hotel-two-faults"])
def test_a_fix_that_only_changes_what_callers_see_is_verified_not_undone(
    lab: Lab, env: dict[str, str], tmp_path: Path, scenario: str
) -> None:
    # Nothing restarts when a Service is fixed: only the callers' newer log lines show it.
    inject(lab, scenario)
    run_env = policy(env, tmp_path, ALLOW)
    namespace = scenario.split("-", maxsplit=1)[0]
    done = stratus("investigate", namespace, "--settle-seconds", "20", env=run_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "undone" not in done.stdout and "resolved" in done.stdout, done.stdout
    assert lab.control.get(f"/lab/v1/scenarios/{scenario}/check")["passed"]


def test_without_a_terminal_it_stops_at_the_approval_and_resumes_after_it(
    lab: Lab, env: dict[str, str], tmp_path: Path
) -> None:
    inject(lab, "hotel-recommendation-scaled-to-zero")
    run_env = policy(env, tmp_path, ASK)
    waiting = stratus("investigate", "hotel", env=run_env)
    assert waiting.returncode == 0, waiting.stderr
    assert "stratus proposals approve" in waiting.stdout
    (incident_id, state), *_ = incident_state(run_env["STRATUS_DB"])
    assert state == "awaiting_approval"
    proposal_id = waiting.stdout.split("stratus proposals approve ")[1].split(",")[0].strip()
    approved = stratus("proposals", "approve", proposal_id, env=run_env)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    resumed = stratus("incidents", "resume", incident_id, "--settle-seconds", "20", env=run_env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert incident_state(run_env["STRATUS_DB"])[0][1] in ("resolved", "awaiting_approval")
    # Whatever else the planner wants, approving through to the end mitigates it.
    final = stratus(
        "incidents", "resume", incident_id, "--yes", "--settle-seconds", "20", env=run_env
    )
    assert incident_state(run_env["STRATUS_DB"])[0][1] == "resolved", final.stdout
    assert lab.control.get("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/check")["passed"]


@pytest.fixture
def realtime_lab(tmp_path: Path) -> Iterator[Lab]:
    server = LabServer(mode=REALTIME, apps=["hotel"]).start()
    kubeconfig = write_kubeconfig(tmp_path / "kube" / "config", server.url, "hotel")
    lab = Lab(server, kubeconfig)
    deadline = time.monotonic() + 60
    lab.control.post("/lab/v1/scenarios/noop-hotel/inject")
    while not lab.control.get("/lab/v1/scenarios/noop-hotel/check")["passed"]:
        assert time.monotonic() < deadline, "the realtime lab never came up"
        time.sleep(0.5)
    yield lab
    server.stop()


def test_a_process_killed_while_verifying_resumes_and_finishes(
    realtime_lab: Lab, tmp_path: Path
) -> None:
    lab = realtime_lab
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    time.sleep(3)  # realtime: callers notice
    run_env = policy(
        {
            **os.environ,
            "KUBECONFIG": str(lab.kubeconfig),
            "STRATUS_DB": str(tmp_path / "stratus.db"),
            "STRATUS_POLL_SECONDS": "1",
        },
        tmp_path,
        ALLOW,
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "investigate", "hotel", "--settle-seconds", "60"],
        env=run_env,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    db = run_env["STRATUS_DB"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(db) and any(s == "verifying" for _, s in incident_state(db)):
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("never reached verifying: " + "".join(proc.communicate()))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)  # reaps it and closes its pipes
    (incident_id, state), *_ = incident_state(db)
    assert state == "verifying"
    resumed = stratus("incidents", "resume", incident_id, "--settle-seconds", "60", env=run_env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert incident_state(db)[0][1] == "resolved", resumed.stdout
    assert lab.control.get("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/check")["passed"]


def test_bad_namespaces_are_refused_with_a_clear_error(
    lab: Lab, env: dict[str, str], tmp_path: Path
) -> None:
    run_env = policy(env, tmp_path, ALLOW)
    missing = stratus("investigate", "no-such-ns", env=run_env)
    assert missing.returncode != 0 and "does not exist" in missing.stderr
    evil = stratus("investigate", "../kube-system", env=run_env)
    assert evil.returncode != 0 and "Traceback" not in evil.stderr
    assert incident_state(run_env["STRATUS_DB"]) == []
    unknown = stratus("incidents", "show", "inc-nope", env=run_env)
    assert unknown.returncode != 0 and "no incident inc-nope" in unknown.stderr
    # Seen: "Error: no incident " with nothing after it.
    for verb in ("cancel", "resume", "show"):
        empty = stratus("incidents", verb, "", env=run_env)
        assert empty.returncode != 0 and "the incident id is empty" in empty.stderr, empty.stderr
        assert "no incident \n" not in empty.stderr and "Traceback" not in empty.stderr


QUORUM = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: two-people}
defaults: {approvers: ["*"]}
rules:
- name: two-people
  decision: ask
  min_approvals: 2
"""


def test_yes_under_a_two_person_rule_records_one_approval_and_says_who_is_next(
    lab: Lab, env: dict[str, str], tmp_path: Path
) -> None:
    inject(lab, "hotel-recommendation-scaled-to-zero")
    run_env = policy(env, tmp_path, QUORUM)
    done = stratus("investigate", "hotel", "--yes", env=run_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 of 2 approvals" in done.stdout and "stratus proposals approve" in done.stdout
    assert incident_state(run_env["STRATUS_DB"])[0][1] == "awaiting_approval"


def test_a_policy_that_does_not_load_or_a_bad_wait_opens_no_incident(
    lab: Lab, env: dict[str, str], tmp_path: Path
) -> None:
    run_env = policy(env, tmp_path, "rules: [\n")
    broken = stratus("investigate", "hotel", env=run_env)
    assert broken.returncode != 0 and "Traceback" not in broken.stderr
    assert "policy.yaml" in broken.stderr
    assert incident_state(run_env["STRATUS_DB"]) == []
    run_env = policy(env, tmp_path, ALLOW)
    nan = stratus("investigate", "hotel", "--settle-seconds", "nan", env=run_env)
    assert nan.returncode == 2 and "seconds" in nan.stderr
    bad_env = stratus("investigate", "hotel", env={**run_env, "STRATUS_SETTLE_SECONDS": "abc"})
    assert bad_env.returncode != 0 and "STRATUS_SETTLE_SECONDS" in bad_env.stderr
    assert incident_state(run_env["STRATUS_DB"]) == []


def test_an_incident_edited_outside_stratus_is_named_and_crashes_nothing(
    lab: Lab, env: dict[str, str], tmp_path: Path
) -> None:
    """One stored incident whose body cannot be read: show and resume name it in one line,
    list leaves it out, and a new investigation of its namespace is refused rather than
    opened beside it (it may still hold the namespace); nothing ends in "internal error"."""
    inject(lab, "hotel-recommendation-scaled-to-zero")
    run_env = policy(env, tmp_path, ASK)
    assert stratus("investigate", "hotel", env=run_env).returncode == 0
    (incident_id, _), *_ = incident_state(run_env["STRATUS_DB"])
    with sqlite3.connect(run_env["STRATUS_DB"]) as conn:
        conn.execute(
            "UPDATE incidents SET body = json_set(body, '$.state', 'bogus') WHERE id = ?",
            [incident_id],
        )
    for args in (("incidents", "show", incident_id), ("incidents", "resume", incident_id)):
        shown = stratus(*args, env=run_env)
        assert shown.returncode != 0, shown.stdout
        assert f"incident {incident_id} cannot be read" in shown.stderr, shown.stderr
        assert "internal error" not in shown.stderr and "Traceback" not in shown.stderr
    listed = stratus("incidents", "list", env=run_env)
    assert listed.returncode == 0, listed.stderr
    assert incident_id not in listed.stdout
    again = stratus("investigate", "hotel", env=run_env)
    assert again.returncode != 0
    assert "cannot be read" in again.stderr and "internal error" not in again.stderr
    assert len(incident_state(run_env["STRATUS_DB"])) == 1


TWO_OF_ROOT_AND_BOB = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: two}
defaults: {approvers: ["cli:root", "cli:bob"]}
rules:
- name: two
  decision: ask
  min_approvals: 2
"""


def test_cancel_from_the_terminal_is_an_answer_like_reject(
    lab: Lab, env: dict[str, str], tmp_path: Path
) -> None:
    """The rule the bot applies to /stratus cancel holds in the terminal too: someone who may
    not reject what the incident waits on cannot withdraw it by cancelling the incident."""
    inject(lab, "hotel-recommendation-scaled-to-zero")
    run_env = policy(env, tmp_path, TWO_OF_ROOT_AND_BOB)
    started = stratus("investigate", "hotel", env={**run_env, "STRATUS_ACTOR": "root"})
    assert started.returncode == 0, started.stderr
    (incident_id, state), *_ = incident_state(run_env["STRATUS_DB"])
    assert state == "awaiting_approval"
    refused = stratus(
        "incidents", "cancel", incident_id, env={**run_env, "STRATUS_ACTOR": "mallory"}
    )
    assert refused.returncode == 1, refused.stdout
    assert "nothing was cancelled" in refused.stderr and "internal error" not in refused.stderr
    assert incident_state(run_env["STRATUS_DB"])[0][1] == "awaiting_approval"
    with sqlite3.connect(run_env["STRATUS_DB"]) as conn:
        assert [r[0] for r in conn.execute("SELECT state FROM proposals")] == ["awaiting_approval"]
    bob = stratus("incidents", "cancel", incident_id, env={**run_env, "STRATUS_ACTOR": "bob"})
    assert bob.returncode == 0, bob.stderr
    assert incident_state(run_env["STRATUS_DB"])[0][1] == "cancelled"
