"""``stratus lab slack`` starts the playground and prints how to point a bot at it."""

from __future__ import annotations

import os
import subprocess
import sys

from slack_sdk import WebClient

from lab.slack.client import PlaygroundClient
from tests.conftest import REPO


def test_stratus_lab_slack_serves_the_playground_with_the_given_tokens() -> None:
    env = {
        **os.environ,
        "SLACK_BOT_TOKEN": "xoxb-1-cli-test",
        "SLACK_SIGNING_SECRET": "cli-secret",
    }
    env.pop("SLACK_APP_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "lab", "slack", "--port", "0"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("slack playground ready: http://127.0.0.1:"), first
        url = first.split()[-1].rstrip("/")
        exports = dict(
            line.removeprefix("export ").strip().split("=", 1)
            for line in (process.stdout.readline() for _ in range(4))
        )
        assert exports["STRATUS_SLACK_API_URL"] == f"{url}/api/"
        assert exports["SLACK_BOT_TOKEN"] == "xoxb-1-cli-test"
        assert exports["SLACK_SIGNING_SECRET"] == "cli-secret"
        web = WebClient(token="xoxb-1-cli-test", base_url=exports["STRATUS_SLACK_API_URL"])
        assert web.auth_test()["bot_id"] == "B0STRATUS"
        assert PlaygroundClient(url).config()["signing_secret"] == "cli-secret"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()
        if process.stderr:
            process.stderr.close()
