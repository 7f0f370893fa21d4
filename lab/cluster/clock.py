"""The lab's clock: wall time for the demo, virtual time for tests.

In ``realtime`` mode the clock follows the wall clock. In ``instant`` mode it only moves when
the cluster is settled, jumping from one timer to the next, so a crash loop's back-off or an
image pull take no real time at all. The virtual clock starts a day in the past so that
timestamps stay in the past for clients that compare them with their own wall clock.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

REALTIME = "realtime"
INSTANT = "instant"
_INSTANT_HEAD_START = 24 * 3600.0


@dataclass(order=True)
class _Timer:
    due: float
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)
    steady: bool = field(default=False, compare=False)
    urgent: bool = field(default=False, compare=False)
    done: bool = field(default=False, compare=False)
    wake: Callable[[], bool] | None = field(default=None, compare=False)


class Clock:
    def __init__(self, mode: str = REALTIME) -> None:
        if mode not in (REALTIME, INSTANT):
            raise ValueError(f"unknown clock mode {mode!r} (expected realtime or instant)")
        self.mode = mode
        self._virtual = time.time() - _INSTANT_HEAD_START
        self._timers: list[_Timer] = []
        self._needed: list[_Timer] = []  # the timers that are not steady waits
        self._wakeable: list[_Timer] = []  # steady waits that say when they would progress
        self._urgent: list[_Timer] = []  # the end of a transient state, however far ahead
        self._seq = itertools.count()

    def now(self) -> float:
        return time.time() if self.mode == REALTIME else self._virtual

    def timestamp(self, at: float | None = None) -> str:
        moment = self.now() if at is None else at
        return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    @staticmethod
    def parse(text: object) -> float:
        """Seconds since the epoch of an RFC 3339 timestamp; 0 for anything else."""
        if not isinstance(text, str):
            return 0.0
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return 0.0

    def micro_timestamp(self) -> str:
        return datetime.fromtimestamp(self.now(), UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    def call_later(
        self,
        delay: float,
        callback: Callable[[], None],
        *,
        steady: bool = False,
        wake: Callable[[], bool] | None = None,
        urgent: bool = False,
    ) -> _Timer:
        """Run ``callback`` after ``delay`` seconds. A *steady* timer ends a wait the cluster
        shows as a steady state (a back-off restart, a pull retry, a failing probe's next
        try): settling after a write does not move the clock forward for it alone, unless
        its ``wake`` says the retry would now get somewhere (the missing ConfigMap exists).
        An *urgent* timer ends a state that must not outlast a settle (a run its liveness
        probe will kill): settling waits for it however far ahead it is."""
        timer = _Timer(
            self.now() + max(delay, 0.0),
            next(self._seq),
            callback,
            steady=steady,
            urgent=urgent,
            wake=wake,
        )
        heapq.heappush(self._timers, timer)
        if not steady:
            heapq.heappush(self._needed, timer)
        elif wake is not None:
            self._wakeable.append(timer)
        if urgent:
            heapq.heappush(self._urgent, timer)
        return timer

    def next_due(self, *, needed_only: bool = False) -> float | None:
        """When the next timer is due (with ``needed_only``: the next one that is not a steady
        wait, or a steady wait whose ``wake`` holds)."""
        timers = self._needed if needed_only else self._timers
        while timers and (timers[0].cancelled or timers[0].done):
            heapq.heappop(timers)
        due = timers[0].due if timers else None
        if needed_only and self._wakeable:
            self._wakeable = [t for t in self._wakeable if not (t.cancelled or t.done)]
            for timer in self._wakeable:
                if (due is None or timer.due < due) and timer.wake is not None and timer.wake():
                    due = timer.due
        return due

    def next_urgent(self) -> float | None:
        """When the next urgent timer is due."""
        while self._urgent and (self._urgent[0].cancelled or self._urgent[0].done):
            heapq.heappop(self._urgent)
        return self._urgent[0].due if self._urgent else None

    def advance_to(self, moment: float) -> None:
        if self.mode == INSTANT and moment > self._virtual:
            self._virtual = moment

    def run_due(self) -> int:
        """Run every timer that is due now; returns how many ran."""
        ran = 0
        now = self.now()
        while self._timers and self._timers[0].due <= now:
            timer = heapq.heappop(self._timers)
            if not timer.cancelled and not timer.done:
                timer.done = True
                timer.callback()
                ran += 1
        return ran

    def clear(self) -> None:
        self._timers.clear()
        self._needed.clear()
        self._wakeable.clear()
        self._urgent.clear()


def cancel(timer: _Timer | None) -> None:
    if timer is not None:
        timer.cancelled = True
