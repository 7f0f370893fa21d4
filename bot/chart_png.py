"""Draws a card's chart (``agents.telemetry_chart.Chart``) as one small PNG.

A thin executor: every point, mark and shaded span comes from the chart it is given; this
module only chooses how they look. Matplotlib's object API with the Agg canvas is used, never
``pyplot``: no global figure state, no display, safe to call from a worker thread.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import DateFormatter
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from agents.telemetry_chart import Chart, Panel
from bot.text import chart_words

WIDTH = 6.4  # inches, at DPI: 640 px wide, about 110 px per panel
PANEL_HEIGHT = 1.1
DPI = 100
CHANGE_COLOUR = "#d62728"
AFTER_COLOUR = "#2ca02c"
FLOOR = {"count": 1.0, "seconds": 10.0, "ratio": 100.0}  # the lowest top of a panel's scale


def _scale(panel: Panel, value: float) -> float:
    if panel.unit == "ratio":
        return value * 100
    if panel.unit == "seconds":
        return value * 1000
    return value


def _moment(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, UTC)


def render(chart: Chart, *, title: str) -> bytes:
    """The chart as PNG bytes."""
    figure = Figure(figsize=(WIDTH, 0.5 + PANEL_HEIGHT * len(chart.panels)), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(chart.panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, panel in zip(axes, chart.panels, strict=True):
        for line in panel.lines:
            ax.plot(
                [_moment(t) for t, _ in line.points],
                [_scale(panel, v) for _, v in line.points],
                linewidth=1.4,
                label=line.label or None,
            )
        unit = chart_words.UNIT_SUFFIX[panel.unit]
        name = chart_words.PANEL_TITLES.get(panel.metric, panel.metric)
        ax.set_ylabel(f"{name}\n{unit}".strip(), fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        # Shares are read against the whole scale (a flat 100% must not look like a wiggle);
        # counts and latencies from zero, counts in whole steps.
        highest = max((_scale(panel, v) for line in panel.lines for _, v in line.points), default=0)
        if panel.unit == "ratio":
            ax.set_ylim(0, 105)
        else:
            # A flat zero still gets a readable scale (no 0.000-0.054 ticks around nothing).
            ax.set_ylim(0, max(highest * 1.15, FLOOR[panel.unit]))
        if panel.unit == "count":
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if chart.after is not None:
            ax.axvspan(
                _moment(chart.after[0]), _moment(chart.after[1]), color=AFTER_COLOUR, alpha=0.12
            )
        if chart.changed_at is not None:
            ax.axvline(_moment(chart.changed_at), color=CHANGE_COLOUR, linewidth=1.2)
        if any(line.label for line in panel.lines):
            ax.legend(fontsize=6, loc="upper left")
    axes[0].set_title(title, fontsize=8)
    if chart.changed_at is not None:
        late = chart.changed_at > (chart.start + chart.end) / 2
        axes[0].annotate(
            chart_words.CHANGE,
            xy=(_moment(chart.changed_at), 1.0),
            xycoords=("data", "axes fraction"),
            fontsize=7,
            color=CHANGE_COLOUR,
            ha="right" if late else "left",
            va="top",
        )
    axes[-1].set_xlim(_moment(chart.start), _moment(chart.end))
    # matplotlib's DateFormatter has no annotated __init__.
    axes[-1].xaxis.set_major_formatter(DateFormatter("%H:%M:%S", tz=UTC))  # type: ignore[no-untyped-call]
    figure.tight_layout(pad=0.4)
    out = io.BytesIO()
    figure.savefig(out, format="png", dpi=DPI)
    return out.getvalue()
