"""How tests/tiers.py files a test: by its marker, its folder, its fixtures, and what its code
and its fixtures' code reference — never ``unit`` when anything there opens a socket or starts a
process."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lab.runner import LabServer
from tests import tiers
from tests.conftest import REPO, stratus

HERE = REPO / "tests" / "agents" / "test_example.py"


@dataclass
class FakeItem:
    """What ``tiers.classify`` reads of a collected test."""

    function: Callable[..., Any]
    path: Path = HERE
    fixturenames: list[str] = field(default_factory=list)
    markers: tuple[str, ...] = ()
    fixtures: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None

    @property
    def _fixtureinfo(self) -> SimpleNamespace:
        return SimpleNamespace(
            name2fixturedefs={n: [SimpleNamespace(func=f)] for n, f in self.fixtures.items()}
        )


def pure() -> None:
    assert sorted([2, 1]) == [1, 2]


def spawns() -> None:
    subprocess.run(["true"], check=True)


def runs_stratus() -> None:
    stratus("--help", env={})


def helper_that_serves() -> LabServer:
    return LabServer()


def serves_through_a_helper() -> None:
    helper_that_serves()


def classify(function: Callable[..., Any], **kwargs: Any) -> str:
    return tiers.classify(FakeItem(function, **kwargs))  # type: ignore[arg-type]


def test_a_test_of_pure_code_is_a_unit_test() -> None:
    assert classify(pure) == "unit"


@pytest.mark.parametrize("function", [spawns, runs_stratus])
def test_a_process_makes_it_e2e(function: Callable[..., Any]) -> None:
    assert classify(function) == "e2e"


def test_a_server_reached_through_a_helper_of_the_suite_makes_it_a_service_test() -> None:
    assert classify(serves_through_a_helper) == "service"


def test_fixtures_count_by_name_and_by_what_their_code_references() -> None:
    assert classify(pure, fixturenames=["lab_session", "lab"]) == "service"
    assert classify(pure, fixturenames=["kubectl"]) == "e2e"
    assert classify(pure, fixturenames=["world"], fixtures={"world": serves_through_a_helper}) == (
        "service"
    )


def test_a_marker_wins_and_tests_unit_holds_unit_tests_only() -> None:
    assert classify(spawns, markers=("service",)) == "service"
    assert classify(pure, markers=("e2e",)) == "e2e"
    assert classify(serves_through_a_helper, path=REPO / "tests" / "unit" / "test_x.py") == "unit"


def test_every_collected_test_of_this_file_is_marked_unit_and_socket_free(
    request: pytest.FixtureRequest,
) -> None:
    assert request.node.get_closest_marker("unit") is not None
    assert request.node.get_closest_marker("disable_socket") is not None
