"""A client's turn as rules: one waiting ask per client, a lease renewed only by its holder
while it still holds it, and the check that an ask still holds its turn (issue 20)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from proposals import intake
from store.clock import ManualClock
from store.db import Store
from store.locks import LeaseLocks


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def locks(tmp_path: Path, clock: ManualClock) -> Iterator[LeaseLocks]:
    store = Store(tmp_path / "turns.db", clock=clock)
    yield LeaseLocks(store)
    store.close()


def test_one_waiting_ask_per_client_and_the_next_refused_at_once() -> None:
    waiting = intake.Waiting()
    with waiting.one("mcp:claude"):
        with pytest.raises(intake.LimitReached) as refused, waiting.one("mcp:claude"):
            pass
        assert refused.value.retryable and refused.value.details["limit"] == "one_at_a_time"
        with waiting.one("mcp:other"):  # another client waits on its own
            pass
    with waiting.one("mcp:claude"):  # its wait over, the next may wait
        pass


def test_a_lease_is_renewed_by_its_holder_only_while_it_holds_it(
    locks: LeaseLocks, clock: ManualClock
) -> None:
    mine = intake.new_turn("mcp:claude", intake.TurnConfig(ttl=10.0))
    theirs = intake.new_turn("mcp:claude", intake.TurnConfig(ttl=10.0))
    assert mine.resource == theirs.resource and mine.holder != theirs.holder
    assert locks.try_acquire(mine.resource, mine.holder, mine.ttl) is None
    clock.advance(8)
    assert locks.renew(mine.resource, mine.holder, mine.ttl)  # held till 18 s now
    clock.advance(8)
    assert locks.holds(mine.resource, mine.holder)
    assert locks.try_acquire(theirs.resource, theirs.holder, theirs.ttl) is not None
    clock.advance(11)  # ran out: renewing no longer takes it back
    assert not locks.renew(mine.resource, mine.holder, mine.ttl)
    assert locks.try_acquire(theirs.resource, theirs.holder, theirs.ttl) is None
    assert not locks.renew(mine.resource, mine.holder, mine.ttl)
    assert not locks.holds(mine.resource, mine.holder)


def test_the_heartbeat_defaults_to_a_third_of_the_lease() -> None:
    assert intake.TurnConfig(ttl=120.0).renew_every == 40.0
    assert intake.TurnConfig(ttl=1.0, heartbeat=0.2).renew_every == 0.2
