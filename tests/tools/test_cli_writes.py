"""``stratus act`` and ``stratus undo`` as an SRE runs them; bad input is one line and writes
nothing. In-process through click's runner: nothing here needs a process boundary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_command
from store.db import Store
from tests.conftest import Lab
from tools.k8s import KubeClient
from tools.objects import ObjectRef


def stratus(*args: str, env: dict[str, str]) -> Result:
    """Run ``stratus`` in this process with ``env`` as its environment. An exception that
    escapes the command (a traceback for the user) fails the test instead of being caught."""
    return CliRunner().invoke(stratus_command, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The shared CLI environment, with this test's own data directory (for crash logs)."""
    return {**env, "STRATUS_HOME": str(tmp_path / "home")}


def test_act_shows_intent_and_diff_then_undo(env: dict[str, str], kube: KubeClient) -> None:
    dry = stratus(
        "act",
        "set-image",
        "deployment/geo",
        "image=stratus/hotel-geo:1.1",
        "-n",
        "hotel",
        "--dry-run",
        env=env,
    )
    assert dry.exit_code == 0
    assert "intent: Set the image of container geo of deployment/geo in hotel" in dry.stdout
    assert "-        image: stratus/hotel-geo:1.0" in dry.stdout
    assert "+        image: stratus/hotel-geo:1.1" in dry.stdout
    assert "nothing was written" in dry.stdout
    refused = stratus("act", "scale", "geo", "replicas=2", "-n", "hotel", env=env)
    assert refused.exit_code == 1 and "without --yes" in refused.stderr
    applied = stratus("act", "scale", "geo", "replicas=2", "-n", "hotel", "--yes", env=env)
    assert applied.exit_code == 0 and "applied: Scale deployment/geo" in applied.stdout
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 2
    listed = stratus("undo", "--list", env=env)
    assert "cli:sre-alice" in listed.stdout and "Scale deployment/geo" in listed.stdout
    undone = stratus("undo", "--last", "--yes", env=env)
    assert undone.exit_code == 0 and "undone: Scale deployment/geo" in undone.stdout
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 1
    assert "nothing to undo" in stratus("undo", "--list", env=env).stdout
    # --last names the most recent write; undone already, it says so rather than going on
    # to an earlier one.
    again = stratus("undo", "--last", "--yes", env=env)
    assert again.exit_code == 1 and "was already undone" in again.stderr


def test_a_write_refused_at_the_terminal_leaves_nothing_to_approve(
    env: dict[str, str], kube: KubeClient
) -> None:
    refused = stratus("act", "scale", "geo", "replicas=2", "-n", "hotel", env=env)
    assert refused.exit_code == 1 and "without --yes" in refused.stderr
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 1
    waiting = stratus("proposals", "list", env=env)
    assert "nothing is waiting" in waiting.stdout, waiting.stdout


def test_undo_refuses_after_an_outside_change_and_force_restores(
    env: dict[str, str], kube: KubeClient
) -> None:
    stratus("act", "patch-service", "svc/geo", "target-port=9999", "-n", "hotel", "--yes", env=env)
    kube.replace(
        {
            **kube.get(ObjectRef("Service", "geo", "hotel")),
            "metadata": {
                **kube.get(ObjectRef("Service", "geo", "hotel"))["metadata"],
                "labels": {"edited": "by-hand"},
            },
        }
    )
    refused = stratus("undo", "--last", "--yes", env=env)
    assert refused.exit_code == 1 and "changed since Stratus wrote it" in refused.stderr
    assert "+    edited: by-hand" in refused.stderr
    assert "hint: to overwrite that change anyway" in refused.stderr
    forced = stratus("undo", "--last", "--yes", "--force", env=env)
    assert forced.exit_code == 0, forced.stderr
    service = kube.get(ObjectRef("Service", "geo", "hotel"))
    assert service["spec"]["ports"][0]["targetPort"] == 8083
    assert "edited" not in (service["metadata"].get("labels") or {})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["act", "frobnicate", "geo", "-n", "hotel", "--yes"], "unknown action 'frobnicate'"),
        (["act", "scale", "-n", "hotel", "--yes"], "Missing argument"),
        (["act", "scale", "geo", "-n", "hotel", "--yes"], "replicas: Field required"),
        (["act", "scale", "geo", "replicas=two", "-n", "hotel", "--yes"], "decimal integer"),
        (["act", "scale", "geo", "replicas=no", "-n", "hotel", "--yes"], "decimal integer"),
        (["act", "scale", "widget/geo", "replicas=1", "-n", "hotel", "--yes"], "unknown kind"),
        (["act", "scale", "geo", "replicas=1", "-n", "kube-system", "--yes"], "protected"),
        (["act", "scale", "gone", "replicas=1", "-n", "hotel", "--yes"], "not found"),
        (["act", "scale", "geo", "replicas=1", "-n", "nowhere", "--yes"], "not found"),
        (["undo", "undo-doesnotexist", "--yes"], "no undo entry"),
        (["undo", "--last", "--list"], "exactly one of"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    env: dict[str, str], args: list[str], message: str, kube: KubeClient
) -> None:
    before = kube.get(ObjectRef("Deployment", "geo", "hotel"))["metadata"]["resourceVersion"]
    result = stratus(*args, env=env)
    assert result.exit_code != 0
    assert message in result.stderr and "Traceback" not in result.stderr
    assert (
        kube.get(ObjectRef("Deployment", "geo", "hotel"))["metadata"]["resourceVersion"] == before
    )
    if Path(env["STRATUS_DB"]).exists():
        store = Store(env["STRATUS_DB"])
        assert store.query("SELECT COUNT(*) AS n FROM executions")[0]["n"] == 0
        store.close()


def test_forbidden_by_rbac_is_one_line(env: dict[str, str], lab: Lab) -> None:
    lab.control.request("PUT", "/lab/v1/rbac/denials", {"denials": [{"resource": "services"}]})
    try:
        result = stratus(
            "act", "patch-service", "svc/geo", "target-port=8080", "-n", "hotel", "--yes", env=env
        )
    finally:
        lab.control.request("PUT", "/lab/v1/rbac/denials", {"denials": []})
    assert result.exit_code == 1 and "forbidden" in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.service  # the command really tries to connect (to a closed port)
def test_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
    )
    result = stratus(
        "act",
        "scale",
        "geo",
        "replicas=1",
        "-n",
        "hotel",
        "--yes",
        env={
            **os.environ,
            "KUBECONFIG": str(kubeconfig),
            "STRATUS_DB": str(tmp_path / "db.sqlite"),
            "STRATUS_HOME": str(tmp_path / "home"),
        },
    )
    assert result.exit_code == 1 and "cannot reach the API server" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("decision", "said"),
    [
        # Who it would ask, not only that it asks (issue 18 §6).
        (None, "the policy would ask for 1 approval from anyone (default)"),
        ("ask", "the policy would ask for 1 approval from anyone (scaling)"),
        ("allow", "the policy would allow it without asking (scaling)"),
        ("deny", "the policy would deny it (scaling)"),
    ],
)
def test_dry_run_says_what_the_policy_decided(
    env: dict[str, str], tmp_path: Path, decision: str | None, said: str
) -> None:
    """A dry run that ends in "the policy accepted" when the policy asks reads as permission."""
    if decision is not None:
        policies = tmp_path / "policies"
        policies.mkdir()
        (policies / "p.yaml").write_text(
            "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: p}\nrules:\n"
            f"  - name: scaling\n    match: {{actions: [scale]}}\n    decision: {decision}\n"
        )
        env = {**env, "STRATUS_POLICY_DIR": str(policies)}
    dry = stratus("act", "scale", "geo", "replicas=2", "-n", "hotel", "--dry-run", env=env)
    assert dry.exit_code == 0, dry.output
    last = dry.stdout.strip().splitlines()[-1]
    assert said in last, last
    assert "accepted" not in last.replace("the API server accepted", "")


def test_namespace_defaults_to_the_kubeconfig_context_as_kubectl_does(
    env: dict[str, str], lab: Lab, kube: KubeClient, tmp_path: Path
) -> None:
    """No ``-n``: the current context's namespace (the lab's kubeconfig says hotel), or the
    one of ``--context``; a context that names none means ``default``, as in kubectl."""
    applied = stratus("act", "scale", "geo", "replicas=2", "--yes", env=env)
    assert applied.exit_code == 0, applied.output
    assert "Scale deployment/geo in hotel" in applied.stdout
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 2
    config = yaml.safe_load(lab.kubeconfig.read_text())
    context = config["contexts"][0]
    config["contexts"] = [
        context,
        {"name": "shop", "context": {**context["context"], "namespace": "shop"}},
        {
            "name": "bare",
            "context": {k: v for k, v in context["context"].items() if k != "namespace"},
        },
    ]
    kubeconfig = tmp_path / "contexts"
    kubeconfig.write_text(yaml.safe_dump(config))
    several = {**env, "KUBECONFIG": str(kubeconfig)}
    shop = stratus(
        "act", "scale", "frontend", "replicas=3", "--context", "shop", "--dry-run", env=several
    )
    assert shop.exit_code == 0, shop.output
    assert "Scale deployment/frontend in shop" in shop.stdout
    bare = stratus(
        "act", "scale", "geo", "replicas=2", "--context", "bare", "--dry-run", env=several
    )
    assert bare.exit_code == 1 and "default" in bare.stderr
