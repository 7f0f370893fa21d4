"""``stratus policy explain`` answers for the request a real command would make: it checks the
request as ``act`` does (names, kinds, requester, labels), decides an undo with the facts the
real undo uses (the risk of the write it reverses), and says which facts it used."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_command
from policies.model import Rule
from proposals.service import ProposalService
from store.db import Store
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient

HEADER = "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: test}\nrules:\n"
POLICY = HEADER + (
    "  - name: no-risky-undo\n"
    "    match: {actions: [undo], risk: [high]}\n"
    "    decision: deny\n"
    "    description: a risky write is undone by hand\n"
    "  - name: sre-scales\n"
    "    match: {actions: [scale]}\n"
    "    decision: ask\n"
    "    approvers: [cli:sre]\n"
)


def stratus(*args: str, env: dict[str, str]) -> Result:
    return CliRunner().invoke(stratus_command, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "test.yaml").write_text(POLICY)
    return {**env, "STRATUS_POLICY_DIR": str(policies), "STRATUS_HOME": str(tmp_path / "home")}


def explain(env: dict[str, str], *args: str, action: str = "scale") -> Result:
    return stratus("policy", "explain", "--action", action, *args, env=env)


GEO = ("-n", "hotel", "--resource", "deployment/geo")


@pytest.mark.parametrize(
    ("case", "args", "needle"),
    [
        ("a traversal namespace", ("-n", "../hotel", "--resource", "deployment/geo"), "namespace"),
        ("an upper-case namespace", ("-n", "HOTEL", "--resource", "deployment/geo"), "namespace"),
        ("a namespace with a newline", ("-n", "hotel\n", "--resource", "deployment/geo"), "names"),
        ("a name ending in a dot", ("-n", "hotel", "--resource", "deployment/geo."), "name"),
        ("a name with a slash", ("-n", "hotel", "--resource", "deployment/geo/status"), "'/'"),
        ("an unknown kind", ("-n", "hotel", "--resource", "widget/geo"), "unknown kind"),
        ("no kind", ("-n", "hotel", "--resource", "geo"), "KIND/NAME"),
        ("scale on a Secret", ("-n", "hotel", "--resource", "secret/geo"), "not Secret"),
        ("an empty requester", (*GEO, "--requester", ""), "requester"),
        ("an agent that never proposes", (*GEO, "--requester", "agent:x"), "requester"),
        ("Stratus itself", (*GEO, "--requester", "stratus"), "requester"),
        ("a claimed Stratus terminal user", (*GEO, "--requester", "cli:stratus-bot"), "requester"),
        ("a requester with spaces", (*GEO, "--requester", "cli:a b"), "requester"),
        ("a label that is no label", (*GEO, "--label", "bad key=x"), "label key"),
        ("a label value that is no label value", (*GEO, "--label", "tier=a b"), "label value"),
        ("a label without a value", (*GEO, "--label", "tier"), "KEY=VALUE"),
        ("--risk on a catalog action", (*GEO, "--risk", "low"), "--risk"),
    ],
)
def test_explain_checks_the_request_as_act_does(
    env: dict[str, str], case: str, args: tuple[str, ...], needle: str
) -> None:
    result = explain(env, *args)
    assert result.exit_code != 0, (case, result.output)
    assert result.stdout == "", (case, result.stdout)  # no decision for a request never made
    assert needle in result.stderr, (case, result.stderr)
    assert "internal error" not in result.stderr


@pytest.mark.parametrize("requester", ["U0ALICE", "W0BOB", "cli:sre", "agent:stratus"])
def test_explain_accepts_every_identity_that_asks_for_writes(
    env: dict[str, str], requester: str
) -> None:
    result = explain(env, *GEO, "--requester", requester)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ask: always asks: rule sre-scales"), result.stdout
    assert f"requester {requester}" in result.stdout


def test_a_cluster_scoped_target_ignores_the_namespace(env: dict[str, str]) -> None:
    result = explain(env, "-n", "hotel", "--resource", "node/node-1", action="cordon")
    assert result.exit_code == 0, result.output
    assert "cordon on node/node-1" in result.stdout


def test_explain_for_undo_uses_the_risk_of_the_write_it_reverses(env: dict[str, str]) -> None:
    """A rule denying the undo of high-risk writes: the real undo is denied, and explain says
    so, naming the undo entry whose write gave the risk."""
    written = stratus(
        "act",
        "set-command",
        "deployment/geo",
        'command=["/bin/geo","--safe"]',
        "-n",
        "hotel",
        "--yes",
        env=env,
    )
    assert written.exit_code == 0, written.output
    real = stratus("undo", "--last", "--dry-run", env=env)
    assert "denied: rule no-risky-undo" in real.output, real.output

    explained = explain(env, *GEO, action="undo")
    assert explained.exit_code == 0, explained.output
    first, *rest = explained.stdout.splitlines()
    assert first == "deny: denied: rule no-risky-undo: a risky write is undone by hand", first
    facts = "\n".join(rest)
    assert "risk high" in facts and "set-command" in facts and "undo-" in facts, facts

    hypothetical = explain(env, *GEO, "--risk", "medium", action="undo")
    assert hypothetical.exit_code == 0, hypothetical.output
    assert hypothetical.stdout.startswith("ask: asks: no rule matches"), hypothetical.stdout
    assert "risk medium (given with --risk)" in hypothetical.stdout


def test_explain_for_an_undo_that_puts_back_the_cause_found_decides_it_as_high(
    env: dict[str, str], kube: KubeClient
) -> None:
    """Issue 18: an undo of a fix of the diagnosed cause is high, for the real undo and for
    explain alike (a scale, medium in the catalog, that an incident made to fix its cause)."""
    store = Store(Path(env["STRATUS_DB"]))
    policy = PolicyBox()
    policy.set(Rule(name="allow-all", decision="allow"))
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=policy
    )
    made = service.propose(
        action="scale",
        kind="Deployment",
        name="geo",
        namespace="hotel",
        params={"replicas": 2},
        requester="agent:stratus",
        fixes="deployment/geo has too few replicas",
    )
    service.execute(made.id, actor="agent:stratus")
    store.close()
    explained = explain(env, *GEO, action="undo")
    assert explained.exit_code == 0, explained.output
    assert explained.stdout.startswith("deny: denied: rule no-risky-undo"), explained.stdout
    assert "puts back the cause found: deployment/geo has too few replicas" in explained.stdout
    real = stratus("undo", "--last", "--dry-run", env=env)
    assert "denied: rule no-risky-undo" in real.output, real.output
    assert "this puts back the cause found" in real.output, real.output


def test_explain_for_undo_with_nothing_to_undo_asks_for_a_risk(env: dict[str, str]) -> None:
    result = explain(env, "-n", "hotel", "--resource", "deployment/search", action="undo")
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert "no active undo entry for deployment/search in hotel" in result.stderr
    assert "--risk" in result.stderr


def test_explain_for_undo_after_the_undo_looks_no_further(env: dict[str, str]) -> None:
    written = stratus(
        "act",
        "set-command",
        "deployment/geo",
        'command=["/bin/geo"]',
        "-n",
        "hotel",
        "--yes",
        env=env,
    )
    assert written.exit_code == 0, written.output
    (Path(env["STRATUS_POLICY_DIR"]) / "test.yaml").write_text(
        HEADER + "  - name: undo-ok\n    match: {actions: [undo]}\n    decision: allow\n"
    )
    assert stratus("undo", "--last", "--yes", env=env).exit_code == 0
    result = explain(env, *GEO, action="undo")
    assert result.exit_code == 1 and "no active undo entry" in result.stderr, result.output


def test_a_policy_that_does_not_load_is_listed_with_a_hint_that_helps(
    env: dict[str, str],
) -> None:
    (Path(env["STRATUS_POLICY_DIR"]) / "test.yaml").write_text(POLICY + "    bogus: 1\n")
    result = explain(env, *GEO)
    assert result.exit_code == 1 and result.stdout == ""
    assert "test.yaml:13:5: unknown key 'bogus'" in result.stderr, result.stderr
    assert "stratus policy explain" not in result.stderr  # not a hint to run itself
    assert "stratus policy check" in result.stderr
