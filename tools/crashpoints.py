"""Named points in the executor where a test can make the process die (SIGKILL).

Set ``STRATUS_CRASHPOINT`` to a step name to kill the process when it gets there; the crash
safety tests use it to prove that start-up reconciliation leaves the store consistent with the
cluster after a crash at any step. Unset (always, outside those tests), it does nothing.
"""

from __future__ import annotations

import os
import signal

STEPS = ("locked", "dry-run", "write-ahead", "written", "recorded")
# The proposal service's own points: after a proposal is stored, after a vote is stored, and
# after the proposal moved to executing (before the executor's first step).
SERVICE_STEPS = ("proposed", "answered", "executing")


def reached(step: str) -> None:
    if os.environ.get("STRATUS_CRASHPOINT") == step:
        os.kill(os.getpid(), signal.SIGKILL)
