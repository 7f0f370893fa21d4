"""A terminal beside ``stratus demo`` acts on the same cluster, database and policy as the bot,
and a proposal made there that waits for someone else is answered in Slack.

One demo for the whole story (a demo takes a while to start): the env file it writes, the
policy the bot recorded in its database, the refusal of another policy, and the terminal's
proposal in ``/stratus status`` and the App Home with buttons that work."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bot.demo_process import REPO, DemoProcess, wait_for

pytestmark = pytest.mark.timeout(300)
OTHER_POLICY = """\
apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: lax}
rules:
  - name: anything-goes
    decision: allow
"""


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    process = DemoProcess(tmp_path / "demo").start()
    yield process
    process.stop()


def bare_env(**extra: str) -> dict[str, str]:
    """A new terminal: nothing of Stratus's configuration, a home of its own."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("STRATUS_", "SLACK_")) and k != "KUBECONFIG"
    }
    return {**kept, **extra}


def run(
    env: dict[str, str], *args: str, source: Path | None = None
) -> subprocess.CompletedProcess[str]:
    command = " ".join([sys.executable, "-m", "cli", *args])
    script = f". {source} && {command}" if source else command
    return subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_a_terminal_shares_the_demo_and_its_proposal_is_answered_in_slack(
    demo: DemoProcess, tmp_path: Path
) -> None:
    env_file = demo.directory / "demo.env"
    # The ready line comes first; the lines after it are read as they arrive.
    wait_for(lambda: any(f"source {env_file}" in line for line in demo.lines), timeout=10)
    exported = dict(re.findall(r"^export (\w+)=(\S+)$", env_file.read_text(), re.M))
    assert Path(exported["KUBECONFIG"]) == demo.directory / "kubeconfig"
    assert Path(exported["STRATUS_DB"]) == demo.directory / "stratus.db"
    assert Path(exported["STRATUS_POLICY_DIR"]) == demo.directory / "policy"
    assert "STRATUS_PROMETHEUS_URL" in env_file.read_text()
    home = {"STRATUS_HOME": str(tmp_path / "home"), "STRATUS_ACTOR": "dave"}

    # Sourced: a read against the demo's cluster under the demo's policy.
    planned = run(
        bare_env(**home),
        "act",
        "scale",
        "geo",
        "replicas=2",
        "-n",
        "hotel",
        "--dry-run",
        source=env_file,
    )
    assert planned.returncode == 0, planned.stderr
    assert "demo-asks-for-everything" in planned.stdout and "S0SRE" in planned.stdout

    only = bare_env(**home, STRATUS_DB=exported["STRATUS_DB"], KUBECONFIG=exported["KUBECONFIG"])
    # Told another policy for the demo's database: refused, naming both.
    other = tmp_path / "other"
    other.mkdir()
    (other / "lax.yaml").write_text(OTHER_POLICY)
    mismatch = run(
        {**only, "STRATUS_POLICY_DIR": str(other)},
        "act",
        "scale",
        "geo",
        "replicas=2",
        "-n",
        "hotel",
        "--yes",
    )
    assert mismatch.returncode == 1 and "Traceback" not in mismatch.stderr
    first = mismatch.stderr.strip().splitlines()[0]
    assert str(other) in first and str(demo.directory / "policy") in first, mismatch.stderr

    # Only the database and the cluster named, no policy: the bot's policy, so dave's --yes
    # is not an approval, and the proposal waits — with exactly how it is answered.
    asked = run(only, "act", "scale", "geo", "replicas=2", "-n", "hotel", "--yes")
    assert "applied:" not in asked.stdout, asked.stdout
    found = re.search(r"stratus proposals approve (prop-[0-9a-f]+)", asked.stdout + asked.stderr)
    assert found, asked.stdout + asked.stderr
    pid = found[1]
    assert " ID" not in asked.stderr
    assert (
        "App Home" in asked.stdout + asked.stderr
        and "/stratus status" in asked.stdout + asked.stderr
    )

    slack = demo.slack
    status = slack.command("U0ALICE", "/stratus", "status")
    assert pid in json.dumps(status) and "stratus.approve" in json.dumps(status), status
    slack.open_home("U0ALICE")

    def home_lists_it() -> bool:  # the bot publishes the Home when the event reaches it
        views = slack.views("U0ALICE")["views"]
        return any(pid in json.dumps(v) and "stratus.reject" in json.dumps(v) for v in views)

    wait_for(home_lists_it, timeout=30)
    slack.click("U0ALICE", "stratus.approve", value=pid, ephemeral=True)

    def executed() -> bool:
        shown = run(only, "proposals", "show", pid)
        return "executed" in shown.stdout

    wait_for(executed, timeout=60, interval=1.0)
