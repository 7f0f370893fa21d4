"""The approval prompt of ``stratus act`` in a real terminal (a pseudo-terminal): answering
"n", Ctrl-C, closing the terminal (SIGHUP) and end of input (Ctrl-D) all withdraw the
proposal, so nobody can approve a request its requester walked away from."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, interruptible
from tests.proposals.test_crashes import proposals
from tools.k8s import KubeClient
from tools.objects import ObjectRef

GEO = ObjectRef("Deployment", "geo", "hotel")
PROMPT = b"Apply this change?"


def read_until(fd: int, wanted: bytes, timeout: float = 60.0) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while wanted not in seen:
        left = deadline - time.monotonic()
        assert left > 0, (
            f"no {wanted!r} on the terminal; it showed:\n{seen.decode(errors='replace')}"
        )
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def drain_until_exit(
    fd: int,
    process: subprocess.Popen[bytes],
    timeout: float = 60.0,
    again: Callable[[], None] | None = None,
) -> None:
    """Keep reading the terminal (so the process never blocks writing) until it exits.
    ``again``: what a person does again when nothing happens for 5 s (a signal sent in the
    instant between the prompt and the blocking read is only seen at the next wake-up; on a
    loaded machine that instant can outlast the test's grace)."""
    deadline = time.monotonic() + timeout
    nudge = time.monotonic() + 5
    while process.poll() is None:
        assert time.monotonic() < deadline, "the command did not end"
        if again is not None and time.monotonic() > nudge:
            again()
            nudge = time.monotonic() + 5
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                os.read(fd, 4096)
            except OSError:  # the other side is closed
                time.sleep(0.05)


@pytest.mark.parametrize("leave", ["n", "ctrl-c", "sighup", "eof"])
def test_leaving_the_prompt_withdraws_the_proposal(
    env: dict[str, str], kube: KubeClient, tmp_path: Path, leave: str
) -> None:
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "act", "scale", "deploy/geo", "replicas=3", "-n", "hotel"],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env={**env, "STRATUS_HOME": str(tmp_path / "home")},
        cwd=REPO,
        start_new_session=True,  # the pseudo-terminal is its controlling terminal
        preexec_fn=interruptible,  # noqa: PLW1509 - only signal dispositions, before exec
    )
    os.close(secondary)
    try:
        read_until(primary, PROMPT)
        # The prompt is written before the process blocks reading the terminal; a signal in
        # between only trips Python's flag and is acted on at the next wake-up, which never
        # comes. A person never answers within that instant: give the read time to start.
        time.sleep(0.5)
        if leave == "n":
            os.write(primary, b"n\n")
        elif leave == "ctrl-c":
            os.kill(process.pid, signal.SIGINT)
        elif leave == "sighup":
            os.kill(process.pid, signal.SIGHUP)
        else:
            os.write(primary, b"\x04")  # Ctrl-D at the start of a line: end of input
        signals = {"ctrl-c": signal.SIGINT, "sighup": signal.SIGHUP}
        again = (lambda: os.kill(process.pid, signals[leave])) if leave in signals else None
        drain_until_exit(primary, process, again=again)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(primary)
    assert process.returncode != 0
    [proposal] = proposals(Path(env["STRATUS_DB"])).values()
    assert proposal["state"] == "cancelled", proposal["state"]
    assert kube.get(GEO)["spec"]["replicas"] == 1
