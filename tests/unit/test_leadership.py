"""Leader election's decisions, at chosen instants: create, renew, wait, take, give up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tools import leadership
from tools.leadership import LeaseRecord, Move, Timing

T0 = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)
TIMING = Timing()


def _decide(
    current: LeaseRecord | None, *, me: str = "b", observed: float = 100.0, now: float = 100.0
) -> leadership.Decision:
    return leadership.decide(
        current,
        identity=me,
        now=T0 + timedelta(seconds=now - 100.0),
        observed_at=observed,
        monotonic_now=now,
        timing=TIMING,
    )


def _held_by(holder: str, transitions: int = 0) -> LeaseRecord:
    return LeaseRecord(holder, 15, T0, T0, transitions)


def test_no_lease_is_created_holding_it() -> None:
    decision = _decide(None)
    assert decision.move is Move.CREATE
    assert decision.record == LeaseRecord("b", 15, T0, T0, 0)


def test_my_lease_is_renewed_keeping_when_it_was_acquired() -> None:
    decision = _decide(_held_by("b", 3), now=105.0)
    assert decision.move is Move.RENEW and decision.record is not None
    assert decision.record.renew_time == T0 + timedelta(seconds=5)
    assert decision.record.acquire_time == T0 and decision.record.transitions == 3


def test_anothers_lease_is_waited_out_for_a_whole_duration_as_observed_here() -> None:
    held = _held_by("a", 2)
    for now in (100.0, 110.0, 114.99):
        decision = _decide(held, observed=100.0, now=now)
        assert decision.move is Move.WAIT and decision.expires_at == 115.0
    taken = _decide(held, observed=100.0, now=115.0)
    assert taken.move is Move.TAKE and taken.record is not None
    assert taken.record.holder == "b" and taken.record.transitions == 3
    assert taken.record.acquire_time == T0 + timedelta(seconds=15)


def test_expiry_counts_from_when_the_record_was_seen_not_from_its_renew_time() -> None:
    # The holder's clock is an hour behind: its renewTime looks ancient, yet it renewed.
    skewed = LeaseRecord("a", 15, T0 - timedelta(hours=1), T0 - timedelta(hours=1), 0)
    assert _decide(skewed, observed=100.0, now=101.0).move is Move.WAIT


def test_a_released_lease_is_taken_at_once() -> None:
    released = leadership.released(_held_by("a", 1), now=T0)
    assert released.holder == ""
    decision = _decide(released, observed=100.0, now=100.0)
    assert decision.move is Move.TAKE and decision.record is not None
    assert decision.record.holder == "b" and decision.record.transitions == 2


def test_a_leader_stops_acting_at_the_renew_deadline_before_the_lease_can_expire() -> None:
    assert leadership.still_leading(last_renewed=100.0, monotonic_now=109.9, timing=TIMING)
    assert not leadership.still_leading(last_renewed=100.0, monotonic_now=110.0, timing=TIMING)
    assert TIMING.renew_deadline < TIMING.lease_duration


def test_timings_that_cannot_work_are_named() -> None:
    assert Timing().problem() is None
    assert Timing(lease_duration=10, renew_deadline=10, retry_period=2).problem()
    assert Timing(lease_duration=15, renew_deadline=2, retry_period=2).problem()


def test_micro_times_round_trip_as_the_api_writes_them() -> None:
    moment = T0 + timedelta(microseconds=123456)
    wire = leadership.to_wire(moment)
    assert wire == "2026-11-25T10:00:00.123456Z"
    assert leadership.from_wire(wire) == moment
    assert leadership.from_wire("not a time") is None and leadership.from_wire(None) is None
