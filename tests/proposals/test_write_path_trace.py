"""At run time, a write never climbs back up: `stratus act` and `stratus undo`, traced call by
call in-process against the lab, make no call from a lower package into a higher one (the
executor used to call the proposal service's guard and on_applied closures mid-write)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from click.testing import CliRunner

from cli.main import stratus
from tests.conftest import Lab

ROOT = Path(__file__).resolve().parents[2]
# DESIGN.md's package map, top to bottom: a call may go down or stay, never up.
LAYER = {
    "cli": 0,
    "bot": 1,
    "agents": 2,
    "proposals": 3,
    "policies": 4,
    "undo": 4,
    "tools": 5,
    "store": 6,
}


def _package(filename: str) -> str | None:
    if not filename.startswith(str(ROOT)):
        return None
    first = Path(filename).relative_to(ROOT).parts[0]
    return first if first in LAYER else None


@contextmanager
def calls_upward() -> Iterator[list[str]]:
    """Every call whose nearest product caller is in a lower package than the callee."""
    found: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = _package(frame.f_code.co_filename)
        if callee is None:
            return
        back = frame.f_back
        while back is not None and _package(back.f_code.co_filename) is None:
            back = back.f_back
        if back is None:
            return
        caller = _package(back.f_code.co_filename)
        assert caller is not None
        if LAYER[callee] < LAYER[caller]:
            found.append(
                f"{back.f_code.co_filename}:{back.f_code.co_name} → "
                f"{frame.f_code.co_filename}:{frame.f_code.co_name}"
            )

    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(None)


def test_act_and_undo_never_call_back_into_a_higher_layer(lab: Lab, env: dict[str, str]) -> None:
    runner = CliRunner()
    with calls_upward() as act_up:
        acted = runner.invoke(
            stratus,
            ["act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes"],
            env=env,
        )
    assert acted.exit_code == 0, acted.output
    assert "applied: Scale deployment/geo in hotel from 1 to 2" in acted.output
    with calls_upward() as undo_up:
        undone = runner.invoke(stratus, ["undo", "--last", "--yes"], env=env)
    assert undone.exit_code == 0, undone.output
    assert act_up == [] and undo_up == []
