"""The kubectl task suite (tests/lab/tasks/): incident-shaped tasks on public images, each a
setup that breaks something, the fix a competent SRE would apply with kubectl, and a verify.

Run against the lab with the machine's kubectl: verify fails after setup alone, and passes
once the fix is applied."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import KUBECTLS, Lab

TASKS = Path(__file__).parent / "tasks"
NAMES = sorted(p.name for p in TASKS.iterdir() if (p / "verify.sh").is_file())


def _run(script: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def test_the_suite_has_at_least_20_tasks() -> None:
    assert len(NAMES) >= 20
    for name in NAMES:
        assert {"setup.sh", "fix.sh", "verify.sh"} <= {p.name for p in (TASKS / name).iterdir()}


@pytest.mark.parametrize("name", NAMES)
def test_task(name: str, lab: Lab, tmp_path: Path) -> None:
    kubectl = KUBECTLS["system"]
    assert kubectl, "no kubectl on this machine"
    namespace = f"task-{name}"[:63]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "KUBECONFIG": str(lab.kubeconfig),
        "KUBECACHEDIR": str(tmp_path / "cache"),
        "NS": namespace,
    }
    subprocess.run(
        [kubectl, "create", "namespace", namespace], env=env, check=True, capture_output=True
    )
    folder = TASKS / name
    setup = _run(folder / "setup.sh", env)
    assert setup.returncode == 0, f"setup failed:\n{setup.stderr}{setup.stdout}"
    broken = _run(folder / "verify.sh", {**env, "WAIT": "0"})
    assert broken.returncode != 0, f"verify passed with no fix:\n{broken.stdout}"
    fix = _run(folder / "fix.sh", env)
    assert fix.returncode == 0, f"fix failed:\n{fix.stderr}{fix.stdout}"
    fixed = _run(folder / "verify.sh", {**env, "WAIT": "20"})
    assert fixed.returncode == 0, f"verify failed after the fix:\n{fixed.stderr}{fixed.stdout}"
