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
from store.audit import AuditLog
from store.db import Store
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


def same_size(text: str, size: int) -> str:
    """``text`` padded with a comment to ``size`` bytes."""
    assert len(text) < size
    return text + "#" * (size - len(text) - 1) + "\n"


def test_a_rewrite_keeping_size_and_an_old_mtime_is_seen_by_the_live_policy(
    tmp_path: Path,
) -> None:
    """``cp -p`` (or ``touch -r``) can set the modification time back to what it was; the
    change time cannot be set back by anyone, so it is part of what is compared."""
    policies = tmp_path / "policies"
    policies.mkdir()
    path = policies / "a.yaml"
    allow = HEADER + "  - name: a\n    decision: allow\n"
    path.write_text(allow)
    old = time.time_ns() - 3600 * 10**9  # an hour ago: not a "recent" file
    os.utime(path, ns=(old, old))
    live = LivePolicy(policies)
    assert live().policy.rules[0].rule.decision == "allow"
    path.write_text(allow.replace("allow", "deny "))  # same size
    os.utime(path, ns=(old, old))  # and the old mtime again
    assert path.stat().st_size == len(allow) and path.stat().st_mtime_ns == old
    assert live().policy.rules[0].rule.decision == "deny"


def test_cp_p_of_a_deny_rule_at_the_prompt_is_enforced_when_answered(
    env: dict[str, str], tmp_path: Path, kube: KubeClient
) -> None:
    """The attack: a same-size file with the policy file's old mtime, copied over it with
    ``cp -p`` while ``stratus act`` waits at its prompt."""
    policies = tmp_path / "policies"
    policies.mkdir()
    size = max(len(ASK), len(DENY)) + 8
    target = policies / "a.yaml"
    target.write_text(same_size(ASK, size))
    replacement = tmp_path / "deny.yaml"
    replacement.write_text(same_size(DENY, size))
    old = time.time_ns() - 3600 * 10**9
    for path in (target, replacement):
        os.utime(path, ns=(old, old))
    child_env = {**env, "STRATUS_POLICY_DIR": str(policies), "STRATUS_HOME": str(tmp_path)}
    master, terminal = pty.openpty()
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
        subprocess.run(["cp", "-p", str(replacement), str(target)], check=True)
        stamp = target.stat()
        assert (stamp.st_size, stamp.st_mtime_ns) == (size, old)
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


def test_a_control_character_written_at_the_prompt_keeps_the_last_good_policy(
    env: dict[str, str], tmp_path: Path, kube: KubeClient
) -> None:
    """A change that does not load, made while the person reads the prompt, is rejected and
    reported (never a crash that leaves the proposal executing); the last good policy — the
    one the person was asked under — decides their "y"."""
    policies = tmp_path / "policies"
    policies.mkdir()
    target = policies / "a-ask.yaml"
    target.write_text(ASK)
    child_env = {**env, "STRATUS_POLICY_DIR": str(policies), "STRATUS_HOME": str(tmp_path)}
    master, terminal = pty.openpty()
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
        target.write_text(DENY.replace("decision: deny", "decision: deny\x07"))
        os.write(master, b"y\n")
        read_until(master, b"\x00never", seen, time.monotonic() + 60)
        assert process.wait(timeout=60) == 0, seen.decode()
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    output = seen.decode()
    assert "internal error" not in output and "applied:" in output, output
    assert kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"] == 3
    store = Store(Path(env["STRATUS_DB"]))
    try:
        rejected = [r for r in AuditLog(store).records() if r.event == "policy-rejected"]
        states = {r["state"] for r in store.query("SELECT state FROM proposals")}
    finally:
        store.close()
    assert rejected and f"{target}:7:19: control character U+0007" in str(rejected[-1].payload)
    assert states == {"executed"}, states
