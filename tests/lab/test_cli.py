"""``stratus lab …`` as a user runs it: a real process, real HTTP, one-line errors."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, stratus

STRATUS = [sys.executable, "-m", "cli"]


@pytest.fixture(scope="module")
def lab_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], Path]]:
    home = tmp_path_factory.mktemp("stratus-home")
    env = {**os.environ, "STRATUS_HOME": str(home)}
    process = subprocess.Popen(
        [*STRATUS, "lab", "up", "--clock", "instant", "--app", "hotel"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = re.match(r"lab ready: (http://127\.0\.0\.1:\d+) kubeconfig=(\S+) apps=hotel", line)
    assert match, line + (process.stderr.read() if process.stderr else "")
    yield env, Path(match[2])
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=10)


def test_lab_up_writes_a_kubeconfig_that_kubectl_uses(
    lab_process: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, kubeconfig = lab_process
    assert kubeconfig == Path(env["STRATUS_HOME"]) / "lab" / "kubeconfig"
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "get", "deploy", "geo"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**env, "HOME": str(tmp_path)},
    )
    assert result.returncode == 0 and "1/1" in result.stdout


def test_inject_check_and_reset(lab_process: tuple[dict[str, str], Path]) -> None:
    env, _ = lab_process
    injected = stratus("lab", "inject", "hotel-geo-target-port", env=env)
    assert injected.returncode == 0 and "patched service/geo" in injected.stdout
    failing = stratus("lab", "check", "hotel-geo-target-port", env=env)
    assert failing.returncode == 1 and failing.stdout.startswith("FAIL")
    assert "Service/geo fails 100% of requests" in failing.stdout
    assert stratus("lab", "reset", env=env).returncode == 0
    stratus("lab", "inject", "noop-hotel", env=env)
    passing = stratus("lab", "check", "noop-hotel", "--json", env=env)
    assert passing.returncode == 0 and '"passed": true' in passing.stdout
    fault = stratus(
        "lab", "inject", "scale-to-zero", "-n", "hotel", "--param", "deployment=user", env=env
    )
    assert fault.returncode == 0 and "patched deployment/user" in fault.stdout


def test_listing_needs_no_lab() -> None:
    env = {**os.environ, "STRATUS_HOME": "/nonexistent"}
    listed = stratus("lab", "scenarios", env=env)
    assert listed.returncode == 0 and "hotel-geo-target-port" in listed.stdout
    assert "scale-to-zero" in stratus("lab", "faults", env=env).stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["lab", "inject", "hotel-geo-target-port"], "no kubeconfig at"),
        (["lab", "inject", "nothing-by-that-name"], "no scenario or fault named"),
        (["lab", "check", "noop-hotel"], "no kubeconfig at"),
        (["lab", "up", "--app", "casino"], "unknown app 'casino'"),
        (["lab", "inject", "scale-to-zero"], "needs --namespace"),
    ],
)
def test_errors_are_one_line_without_traceback(
    args: list[str], message: str, tmp_path: Path
) -> None:
    result = stratus(*args, env={**os.environ, "STRATUS_HOME": str(tmp_path)})
    assert result.returncode != 0
    assert message in result.stderr and "Traceback" not in result.stderr


def test_unreachable_lab_is_a_clear_error(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "contexts: [{name: c, context: {cluster: c}}]\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
    )
    result = stratus("lab", "reset", "--kubeconfig", str(kubeconfig), env=dict(os.environ))
    assert result.returncode == 1 and "cannot reach the lab" in result.stderr
    assert "Traceback" not in result.stderr


def test_every_cli_command_is_documented_in_the_readme() -> None:
    from cli.main import stratus

    documents = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    readme = "".join(p.read_text() for p in documents)
    lines = readme.splitlines()
    catalog = (REPO / "docs" / "tools.md").read_text().splitlines()

    def documented(name: str, sub: str) -> bool:
        word = re.compile(rf"(?<![\w-]){re.escape(sub)}(?![\w-])")
        if name == "act":  # one subcommand per catalog action: a row of the catalog table
            rows = (line.split("|")[1] for line in catalog if line.startswith("| "))
            return any(word.search(first_cell) for first_cell in rows)
        # One line may document several: "stratus proposals list [--all] | show ID | …"
        prefix = f"stratus {name} "
        return any(word.search(line.partition(prefix)[2]) for line in lines if prefix in line)

    missing = [
        f"stratus {name} {sub}"
        for name, group in stratus.commands.items()
        for sub in getattr(group, "commands", {})
        if not documented(name, sub)
    ]
    missing += [f"stratus {name}" for name in stratus.commands if f"stratus {name}" not in readme]
    assert not missing, f"undocumented commands: {missing}"
