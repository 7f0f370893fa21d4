"""Fixtures of the unit tier: nothing here opens a socket or a file that outlives the test."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from store.clock import ManualClock
from store.db import MEMORY, Store


@pytest.fixture
def memory_store() -> Iterator[Store]:
    """A migrated database in memory, on a clock the test moves."""
    store = Store(MEMORY, clock=ManualClock(datetime(2026, 1, 1, tzinfo=UTC)))
    yield store
    store.close()
