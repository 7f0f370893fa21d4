"""Every action's own ``--help`` example parses as the command would parse it: its target's
kind is known (and one the action acts on) and its parameters are valid."""

from __future__ import annotations

import shlex

import pytest
from click.testing import CliRunner

from cli.main import stratus
from cli.targets import parse_target
from tools import params
from tools.actions import CATALOG


def example_words(name: str) -> list[str]:
    """The example's words, without the explanation some add after three spaces."""
    example = CATALOG[name].example.split("   (")[0]
    return shlex.split(example)


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_help_example_parses(name: str) -> None:
    cls = CATALOG[name]
    assert cls.example, f"{name} has no example in its --help"
    helped = CliRunner().invoke(stratus, ["act", name, "--help"])
    assert helped.exit_code == 0 and f"stratus act {name} " in helped.output
    target, *pairs = example_words(name)
    kind, _ = parse_target(target, cls.kinds[0])
    assert kind in cls.kinds, (name, target, kind)
    params.parse(cls, tuple(pairs))


@pytest.mark.parametrize("kind", sorted({k for cls in CATALOG.values() for k in cls.kinds}))
def test_every_kind_an_action_acts_on_can_be_named(kind: str) -> None:
    assert parse_target(f"{kind.lower()}/x", "Deployment") == (kind, "x")
    lower = kind.lower()
    plural = lower[:-1] + "ies" if lower.endswith("y") else lower + "s"
    assert parse_target(f"{plural}/x", "Deployment") == (kind, "x")
