"""The telemetry section of a proposal card, rendered from the summary ``agents.telemetry``
reads: the cluster's signals, then Prometheus' figures — now, at the start of the window and
their peak before the proposal ran; at the moment it ran → now after — or why there are none.
Words come from ``bot.text``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from slack_sdk.models.blocks import Block

from agents.telemetry import Telemetry
from agents.telemetry_links import FigureLinks
from agents.telemetry_metrics import Figure, Metrics
from bot import blocks as b
from bot import text
from bot.text import card_words, chart_words

ERROR_LINES_SHOWN = 3
ERROR_LINE_CHARS = 120


def cut_at_word(line: str, limit: int = ERROR_LINE_CHARS) -> str:
    """``line`` in at most ``limit`` characters, cut between words (a word longer than the
    whole limit is cut where it must), an ellipsis marking the cut."""
    if len(line) <= limit:
        return line
    head = line[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip() + "…"


def error_lines_cut(errors: list[str]) -> bool:
    """Whether the card shows less than every error line whole (and offers to see them)."""
    return len(errors) > ERROR_LINES_SHOWN or any(
        len(line) > ERROR_LINE_CHARS for line in errors[-ERROR_LINES_SHOWN:]
    )


def telemetry_text(telemetry: Telemetry) -> str:
    """The card's telemetry section: the cluster's signals, then Prometheus' figures (or why
    there are none)."""
    shown = telemetry.errors[-ERROR_LINES_SHOWN:]  # the newest
    lines = [
        card_words.telemetry(
            telemetry.pods,
            telemetry.restarts,
            telemetry.endpoints,
            [cut_at_word(line) for line in shown],
            telemetry.events,
        )
    ]
    if error_lines_cut(telemetry.errors):
        lines.append(card_words.error_lines_more(len(telemetry.errors) - len(shown)))
    metrics = telemetry.metrics
    if telemetry.metrics_source == "none":
        lines.append(card_words.NO_METRICS)
    elif telemetry.metrics_source == "not_applicable":
        lines.append(card_words.METRICS_NOT_APPLICABLE)
    elif telemetry.metrics_source == "failed" or metrics is None:
        lines.append(card_words.metrics_failed(telemetry.metrics_reason))
    else:
        lines += _metrics_lines(metrics)
        if metrics.failed:
            lines.append(card_words.metrics_partial(b.cut(metrics.failed, 300)))
    return "\n".join(lines)


_FORMATS = {"error_rate": "pct", "p95": "seconds", "restarts": "count", "memory": "pct"}


def _value(value: float | None, kind: str) -> str:
    if value is None:
        return "—"
    if kind == "pct":
        return f"{value:.1%}" if value < 0.1 else f"{value:.0%}"
    if kind == "seconds":
        return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"
    return f"{value:.0f}"


def _figure(label: str, figure: Figure, kind: str, metrics: Metrics) -> str:
    if metrics.executed_at is not None:
        # The target's own figures: none while it had no pods, none claimed before the change
        # could show in them.
        before = card_words.NO_PODS if metrics.no_pods_before() else _value(figure.before, kind)
        if metrics.pending:
            after = card_words.PENDING
        elif metrics.no_pods_now():
            after = card_words.NO_PODS
        else:
            after = _value(figure.now, kind)
        return card_words.metric_before_after(label, before, after)
    return card_words.metric_now(
        label, _value(figure.now, kind), _value(figure.earlier, kind), _value(figure.peak, kind)
    )


def _caller(caller: str, figure: Figure, metrics: Metrics) -> str:
    if metrics.executed_at is not None:
        # A caller's failed calls are its own figures (it had pods throughout), but they too
        # average in the time before the change until it settled and the callers retried.
        after = card_words.PENDING if metrics.pending else _reading(figure.now)
        return card_words.caller_figure(caller, f"{_reading(figure.before)} → {after}")
    return card_words.caller_figure(
        caller, f"{_value(figure.now, 'pct')} (peak {_value(figure.peak, 'pct')})"
    )


def _reading(value: float | None) -> str:
    """A caller's share of failed calls at a moment, or that there was no reading then."""
    return card_words.NO_READING if value is None else _value(value, "pct")


def _moment(unix: float | None) -> datetime | None:
    return datetime.fromtimestamp(unix, UTC) if unix is not None else None


def _metrics_lines(metrics: Metrics) -> list[str]:
    ran = metrics.executed_at is not None
    window = text.duration(metrics.window)
    lines = [card_words.metrics_title(window, list(metrics.services))]
    if ran:
        since = (
            metrics.read_at - metrics.executed_at
            if metrics.read_at is not None and metrics.executed_at is not None
            else None
        )
        lines.append(
            card_words.before_after_pending(_moment(metrics.settles_at))
            if metrics.pending
            else card_words.before_after(since)
        )
    if not ran and metrics.no_pods_now():
        lines.append(card_words.METRICS_NO_PODS)
        if metrics.callers:
            lines.append(figure_lines(metrics)[-1])
    else:
        lines += figure_lines(metrics)
    return lines


def figure_lines(metrics: Metrics) -> list[str]:
    """The card's figures: the target's own on one line, its callers' on the next — what the
    chart's alt text repeats word for word."""
    figures = {
        "error_rate": metrics.error_rate,
        "p95": metrics.p95,
        "restarts": metrics.restarts,
        "memory": metrics.memory,
    }
    lines = [
        " · ".join(
            _figure(card_words.METRIC_LABELS[name], figure, _FORMATS[name], metrics)
            for name, figure in figures.items()
        )
    ]
    if metrics.callers:
        lines.append(
            card_words.callers([_caller(c.caller, c.figure, metrics) for c in metrics.callers])
        )
    return lines


# ---------------------------------------------------------------------- the chart and links


@dataclass(frozen=True)
class CardChart:
    """Where the card's chart goes: the image uploaded for it, or why there is none."""

    file_id: str = ""
    alt: str = ""
    title: str = ""
    missing: str = ""  # a sentence, when there is no image
    drawing: bool = False  # there is a chart to draw: the card is rendered again with it


def chart_alt(metrics: Metrics, target: str) -> str:
    """The chart in words: the same figures the card's text shows."""
    changed = _moment(metrics.executed_at)
    return chart_words.alt_text(
        target,
        text.duration(metrics.window),
        figure_lines(metrics),
        changed.strftime("%H:%M:%S") if changed is not None else None,
    )


def chart_blocks(chart: CardChart | None) -> list[Block]:
    if chart is None:
        return []
    if chart.file_id:
        return [b.uploaded_image(chart.file_id, chart.alt, chart.title)]
    return [b.context(chart.missing)] if chart.missing else []


def links_blocks(links: FigureLinks | None) -> list[Block]:
    if links is None:
        return []
    parts = chart_words.links_parts(list(links.queries), links.dashboard)
    return [b.context(*parts)] if parts else []
