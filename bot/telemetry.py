"""The telemetry section of a proposal card, rendered from the summary ``agents.telemetry``
reads: the cluster's signals, then Prometheus' figures — now, at the start of the window and
their peak before the proposal ran; at the moment it ran → now after — or why there are none.
Words come from ``bot.text``.
"""

from __future__ import annotations

from agents.telemetry import Telemetry
from agents.telemetry_metrics import Figure, Metrics
from bot import blocks as b
from bot import text


def telemetry_text(telemetry: Telemetry) -> str:
    """The card's telemetry section: the cluster's signals, then Prometheus' figures (or why
    there are none)."""
    lines = [
        text.telemetry(
            telemetry.pods,
            telemetry.restarts,
            telemetry.endpoints,
            telemetry.errors,
            telemetry.events,
        )
    ]
    metrics = telemetry.metrics
    if telemetry.metrics_source == "none":
        lines.append(text.NO_METRICS)
    elif telemetry.metrics_source == "not_applicable":
        lines.append(text.METRICS_NOT_APPLICABLE)
    elif telemetry.metrics_source == "failed" or metrics is None:
        lines.append(text.metrics_failed(telemetry.metrics_reason))
    else:
        lines += _metrics_lines(metrics)
        if metrics.failed:
            lines.append(text.metrics_partial(b.cut(metrics.failed, 300)))
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


def _figure(label: str, figure: Figure, kind: str, ran: bool) -> str:
    if ran:
        return text.metric_before_after(
            label, _value(figure.before, kind), _value(figure.now, kind)
        )
    return text.metric_now(
        label, _value(figure.now, kind), _value(figure.earlier, kind), _value(figure.peak, kind)
    )


def _caller(caller: str, figure: Figure, ran: bool) -> str:
    if ran:
        return text.caller_figure(
            caller, f"{_value(figure.before, 'pct')} → {_value(figure.now, 'pct')}"
        )
    return text.caller_figure(
        caller, f"{_value(figure.now, 'pct')} (peak {_value(figure.peak, 'pct')})"
    )


def _metrics_lines(metrics: Metrics) -> list[str]:
    ran = metrics.executed_at is not None
    window = text.duration(metrics.window)
    lines = [text.metrics_title(window, list(metrics.services))]
    if ran:
        since = (
            metrics.read_at - metrics.executed_at
            if metrics.read_at is not None and metrics.executed_at is not None
            else None
        )
        lines.append(text.before_after(since))
    figures = {
        "error_rate": metrics.error_rate,
        "p95": metrics.p95,
        "restarts": metrics.restarts,
        "memory": metrics.memory,
    }
    lines.append(
        " · ".join(
            _figure(text.METRIC_LABELS[name], figure, _FORMATS[name], ran)
            for name, figure in figures.items()
        )
    )
    if metrics.callers:
        lines.append(text.callers([_caller(c.caller, c.figure, ran) for c in metrics.callers]))
    return lines
