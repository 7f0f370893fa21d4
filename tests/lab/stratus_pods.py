"""What the tests of Stratus running as a pod share: kubectl against a lab, a pod of the
Stratus image, and the lab's child processes as ``/proc`` shows them.

Not a test module: ``test_stratus_pod.py`` (Stratus in a pod), ``test_stratus_pod_shutdown.py``
(a lab's end ends its pods' processes) and ``tests/deploy/test_in_lab.py`` import it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

IMAGE = "ghcr.io/stratus-ops/stratus:0.19.0-test"
NS = "stratus"


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``check`` until it answers something truthy (the machine is shared: generous)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.25)


def children() -> dict[int, list[str]]:
    """This test process's live child processes and their command lines, from /proc."""
    found: dict[int, list[str]] = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) != me or fields[0] == "Z":
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        found[int(entry.name)] = [a.decode() for a in argv if a]
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return False
    return state != "Z"


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def hostname(pid: int) -> str:
    """The HOSTNAME a process was started with: the name of the pod it runs ('' if gone)."""
    try:
        return environ(pid).get("HOSTNAME", "")
    except OSError:
        return ""


def serving(pod_name: str) -> int | None:
    """The pid of the ``stratus serve`` process of the pod named (its HOSTNAME)."""
    for pid, argv in children().items():
        if "serve" in argv and "cli" in argv:
            try:
                if environ(pid).get("HOSTNAME") == pod_name:
                    return pid
            except OSError:
                continue
    return None


class Kubectl:
    """The real kubectl, against the kubeconfig given, with a home of its own."""

    def __init__(self, config: Path, home: Path) -> None:
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "KUBECONFIG": str(config),
            "KUBECACHEDIR": str(home / "cache"),
        }

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=90,
            check=False,
        )

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        result = self.run(*args, stdin=stdin)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout

    def apply(self, *documents: dict[str, Any]) -> None:
        self("apply", "-f", "-", stdin=yaml.safe_dump_all(documents))

    def pod(self, name: str) -> dict[str, Any]:
        result = self.run("-n", NS, "get", "pod", name, "-o", "json")
        return json.loads(result.stdout) if result.returncode == 0 else {}

    def pods(self, selector: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = json.loads(
            self("-n", NS, "get", "pods", "-l", selector, "-o", "json")
        )["items"]
        return items


def help_pod(name: str, restart: str) -> dict[str, Any]:
    """A pod of the Stratus image running ``stratus --help`` (arguments and image replaceable)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "restartPolicy": restart,
            "containers": [{"name": "stratus", "image": IMAGE, "args": ["--help"]}],
        },
    }


def children_of(parent: int) -> list[int]:
    """The live child processes of ``parent``, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == parent and fields[0] != "Z":
                found.append(int(entry.name))
    return found
