"""Cron schedules as the CronJob controller reads them: five fields (minute, hour, day of
month, month, day of week) with ranges, lists, steps and names, the ``@hourly``-style macros,
and a time zone; :class:`Schedule` finds the next minute a schedule fires after a moment.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_NAMES = {
    3: {m: i + 1 for i, m in enumerate(_MONTHS)},
    4: {d: i for i, d in enumerate(_DAYS)},
}


class Schedule:
    """A parsed five-field cron schedule; :meth:`next_after` finds the next minute it fires."""

    def __init__(self, text: str, zone: str | None = None) -> None:
        spec = _MACROS.get(text.strip(), text.strip())
        fields = spec.split()
        if len(fields) != 5:
            raise ValueError(f"expected exactly 5 fields, found {len(fields)}: {text}")
        self.sets = [_parse_field(f, i) for i, f in enumerate(fields)]
        # Vixie cron: when both day fields are restricted, either one matching is enough.
        self.dom_star, self.dow_star = fields[2] in ("*", "?"), fields[4] in ("*", "?")
        try:
            self.zone = ZoneInfo(zone) if zone else UTC
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {zone}") from exc

    def _matches(self, moment: datetime) -> bool:
        minute, hour, dom, month, dow = self.sets
        if moment.minute not in minute or moment.hour not in hour or moment.month not in month:
            return False
        in_dom, in_dow = moment.day in dom, (moment.isoweekday() % 7) in dow
        if self.dom_star or self.dow_star:
            return in_dom and in_dow
        return in_dom or in_dow

    def next_after(self, after: float) -> float | None:
        """The first firing strictly after ``after`` (epoch seconds), within about a year."""
        moment = datetime.fromtimestamp(after, self.zone).replace(second=0, microsecond=0)
        moment += timedelta(minutes=1)
        for _ in range(366 * 24 * 60):
            if moment.month not in self.sets[3]:
                moment = (moment.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(
                    day=1
                )
                continue
            if moment.hour not in self.sets[1] or not self._day_ok(moment):
                moment = moment.replace(minute=0) + timedelta(hours=1)
                continue
            if self._matches(moment):
                return moment.timestamp()
            moment += timedelta(minutes=1)
        return None

    def _day_ok(self, moment: datetime) -> bool:
        dom, dow = self.sets[2], self.sets[4]
        in_dom, in_dow = moment.day in dom, (moment.isoweekday() % 7) in dow
        if self.dom_star or self.dow_star:
            return in_dom and in_dow
        return in_dom or in_dow


def _parse_field(text: str, index: int) -> frozenset[int]:
    low, high = _RANGES[index]
    values: set[int] = set()
    for item in text.lower().split(","):
        step, part = 1, item
        if "/" in item:
            part, step_text = item.split("/", 1)
            step = int(step_text)
            if step <= 0:
                raise ValueError(f"step must be positive: {text}")
        if part in ("*", "?"):
            start, end = low, high
        elif "-" in part:
            a, b = part.split("-", 1)
            start, end = _value(a, index), _value(b, index)
        else:
            start = _value(part, index)
            end = high if step != 1 else start
        if index == 4 and end == 7:
            end = 6 if start <= 6 else 0
            values.add(0)
        if not (low <= start <= high and low <= end <= high and start <= end):
            raise ValueError(f"value out of range ({low}-{high}): {text}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _value(text: str, index: int) -> int:
    named = _NAMES.get(index, {}).get(text)
    if named is not None:
        return named
    number = int(text)
    return 0 if index == 4 and number == 7 else number


# ---------------------------------------------------------------- admission
