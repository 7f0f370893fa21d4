"""The CLI as an attacker and a clumsy user try it: names that smuggle paths, parameters that
YAML would misread, borrowed identities, broken configuration. Each gets one clear line and
writes nothing. Runs in-process (click's CliRunner) except where two processes are the point."""

from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_cli
from store.db import Store
from tests.conftest import stratus
from tools.k8s import KubeClient
from tools.objects import ObjectRef

GEO = ObjectRef("Deployment", "geo", "hotel")
TWO_APPROVERS = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: test}
rules:
  - name: two-people
    match: {actions: [scale]}
    decision: ask
    min_approvals: 2
    self_approval: false
"""


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(stratus_cli, list(args), env=env, catch_exceptions=False)


def rows(env: dict[str, str], sql: str) -> list[dict[str, Any]]:
    store = Store(env["STRATUS_DB"])
    try:
        return store.query(sql)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("target", "namespace", "message"),
    [
        ("deploy/geo", "hotel/../kube-system", "not a valid namespace"),
        ("deployment/../../kube-system/deployments/x", "hotel", "not KIND/NAME"),
        ("deployment/geo/status", "hotel", "not KIND/NAME"),
        ("deployment/geo?x=1", "hotel", "not a valid deployment name"),
        ("deployment/", "hotel", "name is empty"),
        ("deploy/geo", "", "namespace is empty"),
        ("deploy/GEO", "hotel", "not a valid deployment name"),
        ("deploy/geo\n", "hotel", "not a valid deployment name"),
        ("sts/geo\n", "hotel", "not a valid statefulset name"),
        ("deploy/geo", "hotel\n", "not a valid namespace"),
    ],
)
def test_names_are_checked_before_anything_happens(
    env: dict[str, str], kube: KubeClient, target: str, namespace: str, message: str
) -> None:
    result = run(env, "act", "scale", target, "replicas=3", "-n", namespace, "--yes")
    assert result.exit_code == 1, result.output
    assert message in result.stderr and "Traceback" not in result.output + result.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 1
    assert rows(env, "SELECT * FROM audit_log WHERE event != 'identity'") == []
    assert rows(env, "SELECT * FROM proposals") == []


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["kind=StatefulSet"], "cannot be a parameter"),
        (["namespace=kube-system"], "cannot be a parameter"),
        (["target=api"], "cannot be a parameter"),
        (["replicas=no"], "is an integer: expected a decimal integer"),
        (["replicas=~"], "expected a decimal integer"),
        (["replicas=3", "replicas=4"], "given twice"),
        (["colour=3"], "has no parameter 'colour'"),
    ],
)
def test_parameters_cannot_retarget_or_be_misread(
    env: dict[str, str], kube: KubeClient, pairs: list[str], message: str
) -> None:
    result = run(env, "act", "scale", "deploy/geo", *pairs, "-n", "hotel", "--yes")
    assert result.exit_code == 1 and message in result.stderr, result.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 1


def test_integers_are_decimal_and_strings_stay_strings(
    env: dict[str, str], kube: KubeClient
) -> None:
    assert (
        run(env, "act", "scale", "deploy/geo", "replicas=010", "-n", "hotel", "--yes").exit_code
        == 0
    )
    assert kube.get(GEO)["spec"]["replicas"] == 10
    for value in ("#ff0000", "~", "1", "8080", "no", "null"):
        result = run(
            env,
            "act",
            "set-env",
            "geo",
            "variable=COLOUR",
            f"value={value}",
            "-n",
            "hotel",
            "--yes",
        )
        assert result.exit_code == 0, result.stderr
        env_vars = kube.get(GEO)["spec"]["template"]["spec"]["containers"][0]["env"]
        assert {"name": "COLOUR", "value": value} in env_vars


def test_each_action_lists_its_parameters(env: dict[str, str]) -> None:
    result = run(env, "act", "set-env", "--help")
    assert result.exit_code == 0
    for text in (
        "variable: string, required",
        "value: string, optional",
        "container",
        "stratus act set-env deployment/web variable=LOG_LEVEL",
    ):
        assert text in result.output
    unknown = run(env, "act", "explode", "deploy/geo")
    assert unknown.exit_code == 2 and "unknown action 'explode'" in unknown.stderr


def test_dry_run_shows_the_decision_and_stores_nothing(
    env: dict[str, str], kube: KubeClient
) -> None:
    result = run(env, "act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "policy: asks: no rule matches" in result.output
    assert "nothing was written or stored" in result.output
    assert rows(env, "SELECT * FROM proposals") == []
    assert kube.get(GEO)["spec"]["replicas"] == 1


def test_dry_run_and_show_give_the_risk_with_its_reason(env: dict[str, str]) -> None:
    # Issue 18 §3: a bare "risk: medium" said nothing a person could check.
    result = run(env, "act", "scale", "deploy/geo", "replicas=0", "-n", "hotel", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "why medium: scales to 0 a Deployment that service/geo routes to" in result.output
    made = run(env, "act", "rollout-restart", "deploy/geo", "-n", "hotel", "--yes")
    assert made.exit_code == 0, made.stderr
    (stored,) = rows(env, "SELECT id FROM proposals")
    shown = run(env, "proposals", "show", stored["id"])
    assert "why low: restarts every pod of deployment/geo (service/geo routes to it)" in (
        shown.output
    ), shown.output


def test_identity_comes_from_the_os_and_overrides_are_prefixed_and_audited(
    env: dict[str, str],
) -> None:
    me = pwd.getpwuid(os.getuid()).pw_name
    plain = {k: v for k, v in env.items() if k != "STRATUS_ACTOR"}
    assert (
        run(
            {**plain, "USER": "root-pretender"},
            "act",
            "scale",
            "deploy/geo",
            "replicas=2",
            "-n",
            "hotel",
            "--yes",
        ).exit_code
        == 0
    )
    [proposal] = rows(env, "SELECT requester FROM proposals")
    assert proposal["requester"] == f"cli:{me}"
    for claimed in ("stratus-reconciler", "agent:planner", "U0 LEAD", "a" * 80):
        refused = run({**plain, "STRATUS_ACTOR": claimed}, "undo", "--list")
        assert refused.exit_code == 1 and "not a usable name" in refused.stderr, claimed
    borrowed = run({**plain, "STRATUS_ACTOR": "U0LEAD"}, "undo", "--list")
    assert borrowed.exit_code == 0
    [row] = rows(env, "SELECT actor, payload FROM audit_log WHERE event = 'identity'")
    assert row["actor"] == "cli:U0LEAD" and me in row["payload"]


def test_a_proposal_made_in_one_process_is_answered_from_others_after_it_exited(
    env: dict[str, str], tmp_path: Path, kube: KubeClient
) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "p.yaml").write_text(TWO_APPROVERS)
    base = {**env, "STRATUS_POLICY_DIR": str(policies)}
    asked = stratus(
        "act",
        "scale",
        "deploy/geo",
        "replicas=3",
        "-n",
        "hotel",
        "--yes",
        env={**base, "STRATUS_ACTOR": "alice"},
    )
    # alice asked and may not approve her own request: it waits, stored, and she exits.
    assert asked.returncode == 1 and "someone else must approve" in asked.stderr
    [proposal] = rows(env, "SELECT id, state FROM proposals")
    assert proposal["state"] == "awaiting_approval"
    pid = proposal["id"]
    bob = stratus("proposals", "approve", pid, env={**base, "STRATUS_ACTOR": "bob"})
    assert bob.returncode == 0 and "1 of 2 approvals" in bob.stdout, bob.stderr
    again = stratus("proposals", "approve", pid, env={**base, "STRATUS_ACTOR": "bob"})
    assert again.returncode == 1 and "already approved" in again.stderr
    self_vote = stratus("proposals", "approve", pid, env={**base, "STRATUS_ACTOR": "alice"})
    assert self_vote.returncode == 1 and "someone else must approve" in self_vote.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 1
    carol = stratus("proposals", "approve", pid, env={**base, "STRATUS_ACTOR": "carol"})
    assert carol.returncode == 0 and "applied: Scale deployment/geo" in carol.stdout
    assert kube.get(GEO)["spec"]["replicas"] == 3
    shown = run(base, "proposals", "show", pid)
    assert "state:     executed" in shown.output and "cli:bob approve" in shown.output


def test_broken_configuration_is_one_line_naming_what_was_used(
    env: dict[str, str], tmp_path: Path
) -> None:
    empty_db = run({**env, "STRATUS_DB": ""}, "undo", "--list")
    assert empty_db.exit_code == 1 and "STRATUS_DB is set but empty" in empty_db.stderr
    missing = tmp_path / "nope" / "config"
    no_kube = run({**env, "KUBECONFIG": str(missing)}, "undo", "--list")
    assert no_kube.exit_code == 1 and str(missing) in no_kube.stderr
    assert "from $KUBECONFIG" in no_kube.stderr
    not_a_db = tmp_path / "not.db"
    not_a_db.write_text("hello, I am not SQLite " * 100)
    garbage = run({**env, "STRATUS_DB": str(not_a_db)}, "undo", "--list")
    assert garbage.exit_code == 1 and "not a Stratus database" in garbage.stderr


def test_a_read_only_database_is_one_line_not_a_traceback(env: dict[str, str]) -> None:
    assert run(env, "undo", "--list").exit_code == 0  # create it
    path = Path(env["STRATUS_DB"])
    if os.getuid() == 0:
        pytest.skip("root ignores file permissions; the read-only case needs another user")
    path.chmod(0o444)
    result = stratus("act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes", env=env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "read-only" in result.stderr


def test_undo_commands_from_the_cli_appear_in_the_event_stream(env: dict[str, str]) -> None:
    assert (
        run(env, "act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes").exit_code == 0
    )
    undone = run(env, "undo", "--last", "--yes")
    assert undone.exit_code == 0 and "undone: Scale deployment/geo" in undone.output
    events = run(env, "proposals", "events")
    assert "executing → executed" in events.output and "executed → undone" in events.output
    again = run(env, "undo", "--last", "--yes")
    assert again.exit_code == 1 and "already undone" in again.stderr


def test_policy_explain_labels_are_strings(env: dict[str, str], tmp_path: Path) -> None:
    policies = tmp_path / "p"
    policies.mkdir()
    (policies / "p.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: t}\nrules:\n"
        "  - name: no-tier\n    match: {labels: {tier: 'no'}}\n    decision: deny\n"
    )
    result = run(
        {**env, "STRATUS_POLICY_DIR": str(policies)},
        "policy",
        "explain",
        "--action",
        "scale",
        "-n",
        "hotel",
        "--resource",
        "deploy/geo",
        "--label",
        "tier=no",
    )
    assert result.exit_code == 0 and result.output.startswith("deny: denied: rule no-tier")


def test_an_unreachable_api_server_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    import socket

    from lab.runner import write_kubeconfig

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = write_kubeconfig(tmp_path / "dead", f"http://127.0.0.1:{port}", "hotel")
    result = run(
        {**env, "KUBECONFIG": str(config)},
        "act",
        "scale",
        "deploy/geo",
        "replicas=2",
        "-n",
        "hotel",
        "--yes",
    )
    assert result.exit_code == 1 and "cannot reach the API server" in result.stderr
    assert "Traceback" not in result.stderr and "hint: try again" in result.stderr
    assert rows(env, "SELECT * FROM proposals") == []


@pytest.mark.parametrize("value", [":memory:", " :memory:", "file:x?mode=memory", "-"])
def test_a_database_that_forgets_is_refused(
    env: dict[str, str], value: str, kube: KubeClient
) -> None:
    result = run(
        {**env, "STRATUS_DB": value},
        "act",
        "scale",
        "deploy/geo",
        "replicas=6",
        "-n",
        "hotel",
        "--yes",
    )
    assert result.exit_code == 1 and "is not a database file" in result.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 1


@pytest.mark.parametrize("value", ["off", "garbage", ""])
def test_an_unknown_write_nodes_value_is_refused_not_guessed(
    env: dict[str, str], value: str
) -> None:
    result = run({**env, "STRATUS_WRITE_NODES": value}, "act", "cordon", "node/node-1", "--yes")
    assert result.exit_code == 1 and "expected true or false" in result.stderr


def test_an_api_server_that_never_answers_times_out(env: dict[str, str], tmp_path: Path) -> None:
    import socket
    import time

    from lab.runner import write_kubeconfig

    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        config = write_kubeconfig(
            tmp_path / "silent", f"http://127.0.0.1:{silent.getsockname()[1]}", "hotel"
        )
        started = time.monotonic()
        result = run(
            {**env, "KUBECONFIG": str(config), "STRATUS_KUBE_TIMEOUT": "1"},
            "act",
            "scale",
            "deploy/geo",
            "replicas=2",
            "-n",
            "hotel",
            "--yes",
        )
        assert time.monotonic() - started < 30
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert "API server" in result.stderr


def test_a_kubeconfig_that_is_not_yaml_is_one_line(env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad-config"
    bad.write_text("apiVersion: v1\nclusters: [unclosed\n")
    result = run({**env, "KUBECONFIG": str(bad)}, "undo", "--list")
    assert result.exit_code == 1 and str(bad) in result.stderr


@pytest.mark.parametrize("value", ["", ",", " ", " , ", "\t"])
def test_an_empty_write_scope_is_refused_not_opened(
    env: dict[str, str], value: str, kube: KubeClient
) -> None:
    """Set but empty means a mistake, not "every namespace" (as for STRATUS_WRITE_NODES)."""
    result = run(
        {**env, "STRATUS_WRITE_NAMESPACES": value},
        "act",
        "scale",
        "deploy/geo",
        "replicas=6",
        "-n",
        "hotel",
        "--yes",
    )
    assert result.exit_code == 1, result.output
    assert "STRATUS_WRITE_NAMESPACES is set but empty" in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 1


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_own_namespace_is_refused(env: dict[str, str], value: str) -> None:
    result = run(
        {**env, "STRATUS_NAMESPACE": value}, "act", "scale", "deploy/geo", "replicas=6", "-n",
        "hotel", "--yes",
    )  # fmt: skip
    assert result.exit_code == 1 and "STRATUS_NAMESPACE is set but empty" in result.stderr


@pytest.mark.parametrize("variable", ["STRATUS_ACTOR", "STRATUS_AUDIT_ANCHOR", "STRATUS_HOME"])
@pytest.mark.parametrize("value", ["", " "])
def test_a_set_but_empty_location_or_name_is_refused(
    env: dict[str, str], tmp_path: Path, kube: KubeClient, variable: str, value: str
) -> None:
    """Like STRATUS_DB and STRATUS_POLICY_DIR: set but empty is a mistake (an unexpanded
    variable), never "use the default" — the default is another actor, anchor or database."""
    environment: dict[str, str | None] = {
        **env,
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        variable: value,
    }
    if variable == "STRATUS_HOME":
        environment["STRATUS_DB"] = None  # the home is where the default database lives
    result = CliRunner().invoke(
        stratus_cli,
        ["act", "scale", "deploy/geo", "replicas=6", "-n", "hotel", "--yes"],
        env=environment,
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.output
    assert f"{variable} is set but empty" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "internal error" not in result.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 1
    assert not (tmp_path / "xdg").exists()


HUGE = "99999999999999999999"  # past SQLite's and C's 64-bit integers


@pytest.mark.parametrize(
    "args",
    [
        ("proposals", "events", "--since", HUGE),
        ("proposals", "events", "--since", "9223372036854775808"),
        ("proposals", "list", "--limit", HUGE),
        ("audit", "verify", "--limit", HUGE),
        ("act", "scale", "deploy/geo", f"replicas={HUGE}", "-n", "hotel", "--yes"),
        ("act", "set-resources", "deploy/geo", f"cpu={HUGE}", "-n", "hotel", "--yes"),
        ("act", "patch-service-port", "svc/geo", f"port={HUGE}", "-n", "hotel", "--yes"),
        ("undo", HUGE, "--yes"),
        ("proposals", "show", HUGE),
        ("incidents", "show", HUGE),
        ("serve", "--port", HUGE),
    ],
)
def test_numbers_out_of_range_get_one_line(
    env: dict[str, str], kube: KubeClient, tmp_path: Path, args: tuple[str, ...]
) -> None:
    result = stratus(*args, env={**env, "STRATUS_HOME": str(tmp_path)})
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("Error: "), result.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 1


def test_approving_an_executed_proposal_says_so_and_changes_nothing(
    env: dict[str, str], kube: KubeClient
) -> None:
    done = run(env, "act", "scale", "deploy/geo", "replicas=3", "-n", "hotel", "--yes")
    assert done.exit_code == 0, done.stderr
    [proposal] = rows(env, "SELECT id FROM proposals")
    before = rows(env, "SELECT COUNT(*) AS n FROM events")[0]["n"]
    again = run({**env, "STRATUS_ACTOR": "sre-bob"}, "proposals", "approve", proposal["id"])
    assert again.exit_code == 1, again.output
    assert "applied:" not in again.stdout
    assert f"{proposal['id']} was already executed" in again.stderr
    assert "by cli:sre-alice" in again.stderr and " UTC" in again.stderr
    assert rows(env, "SELECT COUNT(*) AS n FROM events")[0]["n"] == before
    assert rows(env, "SELECT COUNT(*) AS n FROM executions")[0]["n"] == 1
    assert kube.get(GEO)["spec"]["replicas"] == 3
    undone = run(env, "undo", "--last", "--yes")
    assert undone.exit_code == 0, undone.stderr
    late = run(env, "proposals", "approve", proposal["id"])
    assert late.exit_code == 1 and "was already executed" in late.stderr
    assert "undone since" in late.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 1


ROOT_ONLY = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: root-only}
defaults: {approvers: ["cli:root"]}
rules:
  - name: hotel
    match: {namespaces: [hotel]}
    decision: ask
    approvers: ["cli:root"]
"""
ROOT_SCALES = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: root-scales}
defaults: {approvers: ["cli:root"]}
rules:
  - name: scales
    match: {actions: [scale]}
    decision: ask
    approvers: ["cli:root"]
  - name: undo-is-fine
    match: {actions: [undo]}
    decision: allow
"""


def test_dropping_an_undo_entry_needs_whoever_may_undo_the_write(
    env: dict[str, str], tmp_path: Path, kube: KubeClient
) -> None:
    """--drop gives up the way back with no policy decision of its own: someone who could
    not undo the write (not an approver of its decision, not an admin) cannot drop it."""
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "p.yaml").write_text(ROOT_ONLY)
    base = {**env, "STRATUS_POLICY_DIR": str(policies)}
    root, mallory = {**base, "STRATUS_ACTOR": "root"}, {**base, "STRATUS_ACTOR": "mallory"}
    made = stratus("act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes", env=root)
    assert made.returncode == 0, made.stderr
    [entry] = rows(env, "SELECT id FROM undo_entries WHERE state = 'active'")
    refused = stratus("undo", entry["id"], "--drop", "--reason", "x", "--yes", env=mallory)
    assert refused.returncode == 1, refused.stdout
    assert "may not undo this change" in refused.stderr and "nothing was dropped" in refused.stderr
    assert "internal error" not in refused.stderr
    # A drop is not a proposal: no hint to "approve" the undo entry's id (found by an attacker).
    assert "proposals approve" not in refused.stderr
    assert rows(env, "SELECT state FROM undo_entries") == [{"state": "active"}]
    dropped = stratus("undo", entry["id"], "--drop", "--reason", "re-created", "--yes", env=root)
    assert dropped.returncode == 0, dropped.stderr
    assert rows(env, "SELECT state FROM undo_entries") == [{"state": "dropped"}]


def test_a_plain_undo_needs_whoever_may_undo_the_write(
    env: dict[str, str], tmp_path: Path, kube: KubeClient
) -> None:
    """`stratus undo --last --yes` asks the rule the Undo button asks (``policies.authority``):
    a terminal user who is neither an approver of the write's decision nor an admin is refused
    with one line, and nothing is proposed or written — even where a rule lets every undo run
    without a human (the bot refuses the same person: tests/bot/test_e2e_authority.py)."""
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "p.yaml").write_text(ROOT_SCALES)
    base = {**env, "STRATUS_POLICY_DIR": str(policies)}
    root, mallory = {**base, "STRATUS_ACTOR": "root"}, {**base, "STRATUS_ACTOR": "mallory"}
    made = run(root, "act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes")
    assert made.exit_code == 0, made.output
    [entry] = rows(env, "SELECT id FROM undo_entries WHERE state = 'active'")
    for how in (["--last"], [entry["id"]], ["--last", "--dry-run"]):
        refused = run(mallory, "undo", *how, "--yes")
        assert refused.exit_code == 1, how
        assert "may not undo this change" in refused.stderr and "nothing was undone" in (
            refused.stderr
        ), how
        assert len(refused.stderr.strip().splitlines()) == 1 and "internal error" not in (
            refused.stderr
        )
    assert rows(env, "SELECT state FROM undo_entries") == [{"state": "active"}]
    assert rows(env, "SELECT id FROM proposals WHERE action = 'undo'") == []
    assert kube.get(GEO)["spec"]["replicas"] == 2
    undone = run(root, "undo", "--last", "--yes")
    assert undone.exit_code == 0, undone.output
    assert kube.get(GEO)["spec"]["replicas"] == 1
