"""A lighter load across the fleet through the bot (``benchmarks/bench_fleet.py`` runs the
full one and times it): incidents at once in three clusters and several commands in one
namespace — every incident ends, its events are complete, nothing is duplicated or lost, every
write has its undo entry, no lease is left and the audit chain verifies. Timings are the
benchmark's, not asserted here (a loaded CI machine would make them flaky)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fleet import load
from tests.fleet.conftest import FleetLabs

pytestmark = pytest.mark.asyncio


async def test_incidents_at_once_across_the_fleet_all_end_and_nothing_is_lost(
    labs: FleetLabs, tmp_path: Path
) -> None:
    result = await load.run(labs, tmp_path, incidents=12, same=5, timeout=300)
    assert result.problems == []
    assert len(result.acks_ms) == result.commands == 16
