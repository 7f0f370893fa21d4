"""What a proposal card's chart shows, decided from the figures the telemetry summary read.

Pure: ``chart_for(metrics)`` turns the series Prometheus answered (``Metrics.series``) into
panels of lines over the summary window, with the moment the change ran and the window after
it, so a test can check what the chart says without looking at a pixel, and the thin renderer
(``bot.chart_png``) draws exactly this and nothing it computed itself.

The chart is re-drawn only when what it shows moved: ``Chart.digest`` is a hash of everything
drawn, and the bot uploads a new image only when the digest differs from the one it showed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Literal

from agents.telemetry_metrics import CHARTED, Figure, Metrics, Points

Unit = Literal["ratio", "seconds", "count"]
UNITS: dict[str, Unit] = {
    "error_rate": "ratio",
    "p95": "seconds",
    "restarts": "count",
    "memory": "ratio",
    "callers": "ratio",
}


@dataclass(frozen=True)
class Line:
    label: str  # "" for the target's own series, a calling service's name for a caller's
    points: Points
    figure: Figure  # the same figures the card's text quotes, for the alt text


@dataclass(frozen=True)
class Panel:
    metric: str  # error_rate, p95, restarts, memory or callers
    unit: Unit
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Chart:
    start: float  # Unix seconds: the left edge (the window before the change, or before now)
    end: float  # the right edge: when the figures were read
    panels: tuple[Panel, ...]
    changed_at: float | None = None  # the change ran here (a vertical mark)
    # The window after the change, shaded: from the change to the end of the read.
    after: tuple[float, float] | None = None
    settles_at: float | None = None  # from here the "after" figures show the change alone

    @property
    def digest(self) -> str:
        """A hash of everything drawn: the same digest is the same picture."""
        body = json.dumps(asdict(self), sort_keys=True, default=str)
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def panel(self, metric: str) -> Panel | None:
        return next((p for p in self.panels if p.metric == metric), None)


def _figure(metrics: Metrics, name: str) -> Figure:
    figures: dict[str, Figure] = {
        "error_rate": metrics.error_rate,
        "p95": metrics.p95,
        "restarts": metrics.restarts,
        "memory": metrics.memory,
    }
    return figures[name]


def chart_for(metrics: Metrics | None) -> Chart | None:
    """The chart of ``metrics``; ``None`` when there is nothing to draw (no metrics source, or
    no series with a point in it) — the card then says so instead of showing an empty chart."""
    if metrics is None or metrics.read_at is None or metrics.start is None:
        return None
    own = dict(metrics.series)
    panels = [
        Panel(name, UNITS[name], (Line("", own[name], _figure(metrics, name)),))
        for name in CHARTED
        if own.get(name)
    ]
    figures = {c.caller: c.figure for c in metrics.callers}
    callers = tuple(
        Line(caller, points, figures.get(caller, Figure()))
        for caller, points in metrics.caller_series
        if points
    )
    if callers:
        panels.append(Panel("callers", "ratio", callers))
    if not panels:
        return None
    ran = metrics.executed_at
    end = metrics.read_at
    return Chart(
        start=metrics.start,
        end=end,
        panels=tuple(panels),
        changed_at=ran,
        after=(ran, end) if ran is not None and ran < end else None,
        settles_at=metrics.settles_at if ran is not None else None,
    )
