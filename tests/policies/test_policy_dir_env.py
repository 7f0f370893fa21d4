"""``STRATUS_POLICY_DIR`` set but empty is a mistake (an unexpanded shell variable, a blank
line in an env file), never "no policy": it fails closed with one line, like ``STRATUS_DB``
and ``STRATUS_WRITE_NAMESPACES``. Unset still means "no policy: ask for everything"."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_command
from tools.k8s import KubeClient
from tools.objects import ObjectRef

DENY = """apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: test}
rules:
  - name: freeze
    match: {namespaces: [hotel]}
    decision: deny
"""


def stratus(*args: str, env: dict[str, str]) -> Result:
    return CliRunner().invoke(stratus_command, list(args), env=env, catch_exceptions=False)


@pytest.mark.parametrize("value", ["", " ", "\t\n"])
def test_a_set_but_empty_policy_dir_refuses_every_write(
    env: dict[str, str], tmp_path: Path, kube: KubeClient, value: str
) -> None:
    env = {**env, "STRATUS_HOME": str(tmp_path / "home"), "STRATUS_POLICY_DIR": value}
    result = stratus("act", "scale", "geo", "replicas=3", "-n", "hotel", "--yes", env=env)
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "STRATUS_POLICY_DIR is set but empty" in lines[0], lines
    assert "internal error" not in result.stderr
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 1


@pytest.mark.parametrize("command", [("policy", "explain"), ("undo",)])
def test_every_command_reading_the_policy_refuses_an_empty_policy_dir(
    env: dict[str, str], tmp_path: Path, command: tuple[str, ...]
) -> None:
    env = {**env, "STRATUS_HOME": str(tmp_path / "home"), "STRATUS_POLICY_DIR": ""}
    args = {
        ("policy", "explain"): [
            "--action",
            "scale",
            "-n",
            "hotel",
            "--resource",
            "deployment/geo",
        ],
        ("undo",): ["--last", "--yes"],
    }[command]
    result = stratus(*command, *args, env=env)
    assert result.exit_code == 1, result.output
    assert "STRATUS_POLICY_DIR is set but empty" in result.stderr, result.stderr


def test_an_empty_policy_dir_option_is_refused_too(env: dict[str, str], tmp_path: Path) -> None:
    """``--policy-dir ''`` would otherwise read the current directory (Path('') is '.')."""
    env = {**env, "STRATUS_HOME": str(tmp_path / "home")}
    result = stratus(
        "policy",
        "explain",
        "--action",
        "scale",
        "-n",
        "hotel",
        "--resource",
        "deployment/geo",
        "--policy-dir",
        " ",
        env=env,
    )
    assert result.exit_code != 0
    assert "--policy-dir" in result.stderr and "empty" in result.stderr, result.stderr


def test_unset_still_means_no_policy(env: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in env.items() if k != "STRATUS_POLICY_DIR"}
    env["STRATUS_HOME"] = str(tmp_path / "home")
    result = stratus(
        "policy",
        "explain",
        "--action",
        "scale",
        "-n",
        "hotel",
        "--resource",
        "deployment/geo",
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ask: asks: no rule matches"), result.stdout


def test_a_set_policy_dir_is_enforced(
    env: dict[str, str], tmp_path: Path, kube: KubeClient
) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "deny.yaml").write_text(DENY)
    env = {**env, "STRATUS_HOME": str(tmp_path / "home"), "STRATUS_POLICY_DIR": str(policies)}
    result = stratus("act", "scale", "geo", "replicas=3", "-n", "hotel", "--yes", env=env)
    assert result.exit_code == 1 and "freeze" in result.stderr, result.output
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 1
