"""The guard (the policy check right before the write) sees the files as they are at that
moment: a deny rule written while the person reads the prompt is enforced when they answer
"y" at once, with no pause for a reload interval."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from policies.reload import LivePolicy
from tests.conftest import REPO
from tools.k8s import KubeClient
from tools.objects import ObjectRef

HEADER = "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: test}\nrules:\n"
ASK = HEADER + "  - name: ask-scaling\n    match: {actions: [scale]}\n    decision: ask\n"
DENY = HEADER + "  - name: freeze\n    match: {namespaces: [hotel]}\n    decision: deny\n"


def read_until(fd: int, needle: bytes, seen: bytearray, deadline: float) -> bool:
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the terminal closed: the process ended
                return needle in seen
            if not chunk:
                break
            seen.extend(chunk)
    return needle in seen


def test_a_deny_rule_written_at_the_prompt_is_enforced_when_answered_at_once(
    env: dict[str, str], tmp_path: Path, kube: KubeClient
) -> None:
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "a-ask.yaml").write_text(ASK)
    child_env = {**env, "STRATUS_POLICY_DIR": str(policies), "STRATUS_HOME": str(tmp_path)}
    master, terminal = pty.openpty()  # the person's terminal: the prompt needs one
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "act", "scale", "geo", "replicas=3", "-n", "hotel"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=child_env,
        cwd=REPO,
    )
    os.close(terminal)
    seen = bytearray()
    try:
        assert read_until(master, b"[y/N]", seen, time.monotonic() + 60), seen.decode()
        (policies / "b-freeze.yaml").write_text(DENY)  # written, then answered: no sleep
        os.write(master, b"y\n")
        read_until(master, b"\x00never", seen, time.monotonic() + 60)
        assert process.wait(timeout=60) == 1, seen.decode()
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    output = seen.decode()
    assert "freeze" in output and "nothing was written" in output, output
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 1


def test_every_call_sees_a_same_size_rewrite_of_the_same_file(tmp_path: Path) -> None:
    """An edit in place that keeps the size, within the file system's timestamp granularity:
    the content of a recently changed file is compared too."""
    policies = tmp_path / "policies"
    policies.mkdir()
    path = policies / "p.yaml"
    path.write_text(HEADER + "  - name: a\n    decision: allow\n")
    live = LivePolicy(policies)
    assert live().policy.rules[0].rule.decision == "allow"
    stamp = path.stat()
    path.write_text(HEADER + "  - name: a\n    decision: deny \n")  # same size
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # and the same mtime
    assert path.stat().st_size == stamp.st_size and path.stat().st_ino == stamp.st_ino
    assert live().policy.rules[0].rule.decision == "deny"
