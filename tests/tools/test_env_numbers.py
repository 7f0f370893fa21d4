"""Numbers from the environment (timeouts, intervals, ports, caps) through the CLI: a value set
but empty, zero where zero means nothing, negative, not a number, infinite, too small to be
meant or too large for the platform is refused with one line naming the variable and the
range it accepts, before anything is opened or written (issue 16 follow-up, L1).

In-process through click's runner: the command fails while it reads its configuration."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_command
from store.db import Store
from tools.k8s import KubeClient
from tools.objects import ObjectRef

PROMETHEUS = {"STRATUS_PROMETHEUS_URL": "http://127.0.0.1:9"}
MODEL = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-test"}
SLACK = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "secret"}
ACT = ("act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes")
INVESTIGATE = ("investigate", "hotel", "--planner", "offline")
INVESTIGATE_LLM = ("investigate", "hotel", "--planner", "llm")
SERVE = ("serve", "--mode", "http")
SECONDS_BAD = ("0", "-1", "nan", "", " ", "0.001", "1e999", "inf", "soon", "1_0", "٣")
# variable, the bad values, the command that reads it, what else it needs set
TABLE: list[tuple[str, tuple[str, ...], tuple[str, ...], dict[str, str]]] = [
    ("STRATUS_KUBE_TIMEOUT", SECONDS_BAD, ACT, {}),
    ("STRATUS_SETTLE_SECONDS", ("-1", "nan", "", "1e999", "3601"), INVESTIGATE, {}),
    ("STRATUS_POLL_SECONDS", ("0", "-1", "nan", "", "0.001", "1e999"), INVESTIGATE, {}),
    ("STRATUS_TELEMETRY_WINDOW", ("", "0", "-5m", "1e999", "nan"), INVESTIGATE, {}),
    ("STRATUS_TELEMETRY_RATE", ("", "0", "1s", "nan", "99999h"), INVESTIGATE, {}),
    ("STRATUS_PROMETHEUS_TIMEOUT", ("", "0", "nan", "0.001", "1e999"), INVESTIGATE, PROMETHEUS),
    ("STRATUS_PROMETHEUS_MAX_SERIES", ("", "0", "nan", "1e999", "1.5"), INVESTIGATE, PROMETHEUS),
    (
        "STRATUS_PROMETHEUS_MAX_POINTS",
        ("", "1", "nan", "99999999999999999999"),
        INVESTIGATE,
        PROMETHEUS,
    ),
    ("STRATUS_LLM_TIMEOUT", ("", "0", "-1", "nan", "0.001", "1e999"), INVESTIGATE_LLM, MODEL),
    ("STRATUS_BOT_PORT", ("", "-1", "65536", "abc", "1.5", "nan"), SERVE, SLACK),
    ("STRATUS_ALERTS_PORT", ("", "-1", "65536", "abc", "1e999"), SERVE, SLACK),
    ("STRATUS_BOT_FOLLOW_SECONDS", ("", "0", "-1", "nan", "0.001", "1e999"), SERVE, SLACK),
    ("STRATUS_RECONCILE_SECONDS", ("", "0", "nan", "0.001", "301"), SERVE, SLACK),
    ("STRATUS_HEALTH_PORT", ("", "-1", "65536", "abc", "1.5", "nan"), SERVE, SLACK),
    ("STRATUS_SHUTDOWN_SECONDS", ("", "0", "-1", "nan", "0.5", "3601"), SERVE, SLACK),
    ("STRATUS_LEASE_DURATION_SECONDS", ("", "0", "nan", "1e999"), SERVE, SLACK),
    ("STRATUS_LEASE_RENEW_SECONDS", ("", "0", "nan", "1e999"), SERVE, SLACK),
    ("STRATUS_LEASE_RETRY_SECONDS", ("", "0", "nan", "1e999"), SERVE, SLACK),
]
CASES = [
    pytest.param(name, value, command, extra, id=f"{name}={value!r}")
    for name, values, command, extra in TABLE
    for value in values
]
GEO = ObjectRef("Deployment", "geo", "hotel")


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(stratus_command, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The CLI's environment against the lab, without any number this test does not set."""
    clean = {k: v for k, v in env.items() if not k.startswith(("STRATUS_", "OPENAI_", "SLACK_"))}
    return {
        **clean,
        "STRATUS_DB": env["STRATUS_DB"],
        "STRATUS_ACTOR": "sre-alice",
        "STRATUS_HOME": str(tmp_path / "home"),
    }


def stored(env: dict[str, str], table: str) -> int:
    if not Path(env["STRATUS_DB"]).exists():
        return 0
    store = Store(env["STRATUS_DB"])
    try:
        return len(store.query(f"SELECT * FROM {table}"))
    finally:
        store.close()


@pytest.mark.parametrize(("name", "value", "command", "extra"), CASES)
def test_a_bad_number_in_the_environment_is_one_line_naming_the_variable_and_its_range(
    env: dict[str, str],
    kube: KubeClient,
    name: str,
    value: str,
    command: tuple[str, ...],
    extra: dict[str, str],
) -> None:
    result = run({**env, **extra, name: value}, *command)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert name in lines[0] and "internal error" not in lines[0], lines[0]
    # The range it accepts: "from LOW to HIGH".
    assert re.search(r"from [0-9.]+\S* to [0-9.]+", lines[0]), lines[0]
    assert kube.get(GEO)["spec"]["replicas"] == 1
    assert stored(env, "incidents") == 0 and stored(env, "proposals") == 0


@pytest.mark.parametrize("value", ["5", " 5 ", "0.5", "3600"])
def test_a_timeout_in_range_is_used(env: dict[str, str], kube: KubeClient, value: str) -> None:
    result = run({**env, "STRATUS_KUBE_TIMEOUT": value}, *ACT)
    assert result.exit_code == 0, result.stderr
    assert kube.get(GEO)["spec"]["replicas"] == 2


def test_an_unset_variable_takes_its_default(env: dict[str, str], kube: KubeClient) -> None:
    assert run(env, *ACT).exit_code == 0
    assert kube.get(GEO)["spec"]["replicas"] == 2
